package attention

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Batched computes attention for many queries at once: every batch entry,
// every head and every query row, over [batch][heads][T][d] tensors. Query
// heads may outnumber key/value heads (grouped-query and multi-query
// attention): query head h reads key/value head h/(heads/kvHeads), without
// copies.
//
// A Batched owns a pool of worker goroutines and their scratch memory, so
// steady-state calls allocate nothing; one made by NewBatchedRunner runs
// its calls' work on the host's goroutines instead. Attend may be called
// from several goroutines; calls on one Batched run one at a time. Close
// stops the workers. The zero Batched is a valid engine with one worker
// (the caller's goroutine).
type Batched struct {
	mu      sync.Mutex
	workers int
	scratch []workerScratch // per worker; the caller's goroutine is worker 0
	calls   uint64          // calls so far, which tell a worker's widened heads apart
	wake    chan struct{}
	alert   chan struct{} // Wake's nudges to parked workers
	nudged  atomic.Int64  // nudges the workers took, for the tests
	next    atomic.Int64  // the next task to take
	tasks   int64         // tasks in the call in progress
	// gate counts the helpers inside the call in progress, and holds
	// gateClosed from when its caller has taken its last task until the
	// next call: a helper woken late finds it closed and skips the call, so
	// the caller waits for helpers at work, never for one still waking.
	gate    atomic.Int64
	spin    atomic.Int64 // nanoseconds to poll before parking, see SetIdleSpin
	spinSet atomic.Bool  // SetIdleSpin was called: no adapting
	adapted atomic.Int64 // the idle spin adapted to the gaps between calls, see adaptSpin
	// nextCall is when the next call that uses the helpers is expected
	// (nanoseconds since epoch), 0 for never: a call as long after the
	// last one as that one was after the one before. See prewakeAt.
	nextCall  atomic.Int64
	period    atomic.Int64 // nanoseconds between the starts of the last two such calls
	epoch     time.Time    // for monotonic times of the calls
	lastEnd   time.Duration
	lastStart time.Duration
	stop      atomic.Bool // set by Close, for workers polling for a call
	// run is the host's runner (NewBatchedRunner), which runs a call's
	// tasks instead of the pool's goroutines, and task the function it is
	// given, made once (see runTask); both nil for NewBatched.
	run    TaskRunner
	task   func(int)
	job    batchJob  // the call in progress, read-only while workers run
	parts  []float32 // the chunks' partials of a call split across workers
	closed bool
}

// NewBatched starts a Batched with the given number of workers (0 or less:
// GOMAXPROCS). The caller's goroutine is one of them, so with one worker
// no goroutine is started.
func NewBatched(workers int) *Batched {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	e := &Batched{workers: workers, scratch: make([]workerScratch, workers)}
	e.spin.Store(int64(DefaultIdleSpin))
	e.gate.Store(gateClosed)
	e.epoch = time.Now()
	if workers > 1 {
		e.wake = make(chan struct{}, workers-1)
		e.alert = make(chan struct{}, workers-1)
		for w := 1; w < workers; w++ {
			// Made here, so that a starting worker is polling at once.
			ahead := time.NewTimer(time.Hour) // wakes a parked worker ahead of a call
			ahead.Stop()
			go e.work(w, ahead)
		}
	}
	return e
}

// Workers returns the number of workers.
func (e *Batched) Workers() int { return max(1, e.workers) }

// Close stops the workers (one made by NewBatchedRunner has none of its
// own to stop). Attend returns ErrClosed afterwards; Close may be called
// more than once.
func (e *Batched) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed && e.wake != nil {
		e.stop.Store(true)
		close(e.wake)
	}
	e.closed = true
}

// DefaultIdleSpin is how long a new Batched's idle workers poll for the
// next call before they park. Waking a parked worker costs an OS thread's
// wake-up, measured about 100 µs on a KVM guest (the vCPU halts): a good
// part of a decode step split across two workers (measured:
// docs/performance/intel-xeon.md#the-idle-spin-from-code-comments).
// Polling for about as long as a wake-up costs keeps back-to-back calls'
// helpers awake and, when no call comes, wastes at most that long again:
// never more than twice the better of the two choices. Until SetIdleSpin
// is called, a Batched polls longer where its calls come often: for 1¼
// times the gap before the last call that used its helpers, where that gap
// is under 5 ms (a model's loop: a call every layer, its other work
// between), so that the helpers are awake when the next call comes, and
// where calls come at a longer steady period (under a second) a parked
// worker wakes ahead of the next one (see prewakeAt). Its cost: while
// calls come every 5 ms or faster, each helper keeps a core busy polling
// through the gaps (yielding to any other goroutine); at longer periods,
// at most a quarter of the period and 400 µs of each.
const DefaultIdleSpin = 100 * time.Microsecond

// SetIdleSpin sets how long idle workers poll (yielding to other
// goroutines) before they park, and stops them adapting it to the calls
// or waking ahead of a call; a call waits only for helpers at work, by
// polling.
// 0 parks at once: the least CPU spent between calls, and each call that
// needs helpers pays their wake-up. It may be called at any time. It has
// no effect on a Batched made by NewBatchedRunner, which has no idle
// workers of its own.
func (e *Batched) SetIdleSpin(d time.Duration) {
	e.spin.Store(int64(max(0, d)))
	e.spinSet.Store(true)
}

// maxAdaptiveSpin bounds the idle spin a Batched adapts to its calls (see
// DefaultIdleSpin): until SetIdleSpin is called, idle workers poll for 1¼ times the gap between the
// last two calls that used them (at least DefaultIdleSpin), where that gap
// is under maxAdaptiveSpin, so that in a model's loop (a call every layer,
// its other work between) the helpers are awake when the next call comes.
// The cost: while calls come that often, each helper keeps a core busy
// polling (yielding to any other goroutine) through the gaps.
const maxAdaptiveSpin = 5 * time.Millisecond

// adaptSpin sets the adapted spin from the gap before a call that uses its
// helpers, and when the next such call is expected.
func (e *Batched) adaptSpin(now time.Duration) {
	if period := now - e.lastStart; e.lastStart > 0 && period < maxPrewake {
		e.period.Store(int64(period))
		e.nextCall.Store(int64(now + period))
	} else {
		e.nextCall.Store(0)
	}
	e.lastStart = now
	if e.lastEnd == 0 {
		return
	}
	spin := DefaultIdleSpin
	if gap := now - e.lastEnd; gap < maxAdaptiveSpin {
		spin = max(spin, gap+gap/4)
	}
	e.adapted.Store(int64(spin))
}

// maxPrewake bounds the period of calls for which parked workers wake
// ahead of the next call (see prewakeAt).
const maxPrewake = time.Second

// prewakeAt returns how long a worker that is about to park should sleep
// before it wakes to poll for the next call, and for how long it should
// then poll; 0 to sleep until a call wakes it. Where calls come at a
// steady period too long to poll through (a model's layers with more
// than maxAdaptiveSpin of other work between their calls), a parked
// worker wakes a lead before the next call is due, the lead an eighth of
// the period and 200 µs for the thread's own wake-up, and polls for twice
// the lead: the call then finds it awake, as a parked worker takes about
// as long to wake as a short call runs. Its cost is that polling, at most
// a quarter of the period and 400 µs, and none once calls stop: a worker
// wakes ahead only of the call after the last one that came.
func (e *Batched) prewakeAt(now time.Duration) (sleep, poll time.Duration) {
	next := time.Duration(e.nextCall.Load())
	if next == 0 || e.spinSet.Load() {
		return 0, 0
	}
	lead := 200*time.Microsecond + time.Duration(e.period.Load())/8
	if sleep = next - lead - now; sleep <= 0 {
		return 0, 0
	}
	return sleep, 2 * lead
}

// idleSpin is how long an idle worker polls before it parks.
func (e *Batched) idleSpin() time.Duration {
	spin := e.spin.Load()
	if !e.spinSet.Load() {
		spin = max(spin, e.adapted.Load())
	}
	return time.Duration(spin)
}

// WakeSpin is how long workers nudged by Wake poll for the next call
// before they park again.
const WakeSpin = 2 * time.Millisecond

// Wake asks the workers that have parked to poll for the next call (for
// WakeSpin, or the idle spin if longer), so that a call made within that
// time finds them awake. Call it when a call is coming and the work before
// it is longer than the idle spin: at the start of a layer, say, whose
// projections come before its attention. A parked worker takes about as
// long to wake as a short call runs: a short decode step made after a gap
// ran no faster on two workers than on one unless they were woken as the
// gap began (BenchmarkDecodeGap in this package's tests; measured:
// docs/performance/amd-epyc-zen4.md#waking-parked-workers-from-code-comments).
// Wake never blocks; it does nothing on an engine with one worker, on one
// made by NewBatchedRunner (the host's goroutines are the host's to wake)
// or after Close, and may be called from any goroutine at any time.
func (e *Batched) Wake() {
	if e.alert == nil || e.stop.Load() {
		return
	}
	for range cap(e.alert) {
		select {
		case e.alert <- struct{}{}:
		default:
			return
		}
	}
}

func (e *Batched) work(w int, ahead *time.Timer) {
	ready := func() bool { return len(e.wake) > 0 || e.stop.Load() }
	var woken time.Duration // by Wake or ahead of a call: poll that long at least
	for {
		e.poll(max(e.idleSpin(), woken), ready)
		woken = 0
		sleep, poll := e.prewakeAt(time.Since(e.epoch))
		if sleep > 0 {
			ahead.Reset(sleep)
		}
		select {
		case _, ok := <-e.wake:
			if !ok {
				return
			}
			if e.enter() {
				e.take(w)
				e.gate.Add(-1)
			}
		case <-e.alert:
			e.nudged.Add(1)
			woken = WakeSpin
		case <-ahead.C:
			woken = poll
		}
		ahead.Stop()
	}
}

// gateClosed marks the gate of a call whose tasks are all taken (or of no
// call).
const gateClosed = 1 << 62

// enter reports whether a woken helper joins the call in progress, and if
// so counts it in: a call is open until its caller has taken every task.
func (e *Batched) enter() bool {
	for {
		g := e.gate.Load()
		if g&gateClosed != 0 {
			return false
		}
		if e.gate.CompareAndSwap(g, g+1) {
			return true
		}
	}
}

// poll returns once ready does or d has passed.
func (e *Batched) poll(d time.Duration, ready func() bool) {
	if d <= 0 || ready() {
		return
	}
	start := time.Now()
	for !ready() && time.Since(start) < d {
		runtime.Gosched()
	}
}

// take runs tasks until none is left. Tasks are handed out by an atomic
// counter: which worker computes a task never changes its result.
func (e *Batched) take(w int) {
	ws := &e.scratch[w]
	ws.claim = itemClaim{item: -1}
	if e.job.claims() {
		ws.claim.next = &e.next
	}
	for {
		t := ws.claim.item
		if t >= 0 {
			ws.claim.item = -1
		} else {
			t = e.next.Add(1) - 1
		}
		if t >= e.tasks {
			ws.claim = itemClaim{}
			return
		}
		e.job.item(int(t), ws)
	}
}

// Attend computes dst.Out = softmax(scale·Q·Kᵀ + masks)·V for every batch
// entry and head, and the other outputs dst asks for (the weights, the
// logits, the log-sum-exp); with Softcap, Bias and ALiBi the softmax input
// is Softcap·tanh(scale·Q·Kᵀ/Softcap) + Bias + ALiBi, then masked, and
// Sinks add a logit to each row's softmax denominator. Shapes:
// q [B][H][Tq][dk], k [B][Hkv][Tk][dk], v [B][Hkv][Tk][dv],
// dst.Out [B][H][Tq][dv], with H a multiple of Hkv. It follows
// Memory.Attend's semantics row by row: masked keys get weight exactly 0,
// a query row with no key attended gets a zero output (and zero weights),
// NaN propagates, a +Inf score makes the row NaN. Shape mismatches return
// an error wrapping ErrShape and change nothing.
//
// What is read: keys at or past ValidLen[b], or past every query row's
// causal frontier, are never read (neither K nor V rows). Keys masked by
// Keep have their K row read (every key of a tile is scored, then masked)
// and, on the block path (8 or more query rows), their V row read too (to
// check it is finite, and multiplied by a zero weight when it is); their
// weight is exactly 0 and a value row of theirs that is not finite never
// reaches the output. Keys masked by a −Inf Bias are read and their value
// rows multiplied by 0, so a NaN or Inf there makes the row NaN unless the
// row attends nothing.
//
// Zero sizes: any dimension may be 0. A call whose outputs (Out, Weights,
// Logits, LSE) have no element computes nothing and returns nil; a query
// row with no key (Tk = 0) gets a zero output; keys of dimension 0 all
// score 0.
//
// Aliasing: Q, K, V, Bias, ALiBi and Sinks may overlap one another (views
// into one fused buffer). The outputs must not: no two of their elements may share
// memory, and none may touch the memory span (first to last element) of
// another operand; such calls return an error wrapping ErrArgument.
// After Close, Attend returns ErrClosed.
func (e *Batched) Attend(dst BatchOutputs, q, k, v Tensor, opt *BatchOptions) error {
	if opt == nil {
		opt = &noOptions
	}
	job, err := newBatchJob(dst, q, k, v, opt)
	if err != nil {
		return err
	}
	return e.attend(job)
}

// noOptions stands for a nil *BatchOptions. The engine only reads the
// options, so every such call can share it: a new one per call escaped
// to the heap with the call's plan, an allocation per decode step.
var noOptions BatchOptions

// attend runs a planned call.
func (e *Batched) attend(job batchJob) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	split := e.splits()
	if job.pair && split && job.units() < e.workers {
		// Pairs would leave workers idle (a few heads of a short
		// prefill): the tasks go alone, with the same bits.
		job.pair = false
	}
	n := job.units()
	if n == 0 {
		return nil
	}
	e.calls++
	job.call = e.calls
	if e.scratch == nil {
		e.scratch = make([]workerScratch, 1) // the zero Batched: one worker
	}
	if !split || n == 1 && job.chunks == 1 || job.small() {
		for u := range n {
			job.runUnit(u, &e.scratch[0])
		}
		return nil
	}
	items := n
	if job.chunks > 1 && n < e.workers {
		// Too few tasks to go round (and so no pairs, see above): their
		// chunks are the work items.
		items = n * job.chunks
		if need := items * job.partLen(); len(e.parts) < need {
			e.parts = make([]float32, need)
		}
		job.parts, job.chunkWork = e.parts, true
	}
	e.runItems(job, items)
	if job.chunkWork {
		for t := range n {
			job.foldTask(t, &e.scratch[0])
		}
	}
	return nil
}

// splits reports whether a call may share its work out: between the
// pool's goroutines, or the tasks of the host's runner. An engine of one
// worker runs every call on the caller's goroutine.
func (e *Batched) splits() bool { return e.wake != nil || e.run != nil && e.workers > 1 }

// sizeScratch grows every worker's scratch for the call's tasks (see
// scratchNeeds), before any helper may take one.
func (e *Batched) sizeScratch(p *batchPlan) {
	buf, wide := p.scratchNeeds()
	for w := range e.scratch {
		ws := &e.scratch[w]
		if cap(ws.buf) < buf {
			ws.buf = make([]float32, buf)
		}
		if cap(ws.wide.store) < wide {
			ws.wide.store, ws.wide.held = make([]float32, wide), false
		}
	}
}

// runItems hands the call's items out to the workers, or to the host's
// runner (see runOnHost), and waits for them.
func (e *Batched) runItems(job batchJob, items int) {
	if e.run != nil {
		e.runOnHost(job, items)
		return
	}
	e.adaptSpin(time.Since(e.epoch))
	e.sizeScratch(&job.batchPlan)
	e.job, e.tasks = job, int64(items)
	e.next.Store(0)
	// Nudges from Wake that no parked worker took are spent: this call
	// wakes its helpers itself.
	for len(e.alert) > 0 {
		select {
		case <-e.alert:
		default:
		}
	}
	e.gate.Store(0)
	for range min(e.workers, items) - 1 {
		select {
		case e.wake <- struct{}{}:
		default: // a helper still waking from an earlier call joins this one
		}
	}
	e.take(0)
	// Helpers that have not joined by now will not: the caller waits only
	// for those at work, each on its last task.
	e.gate.Or(gateClosed)
	for e.gate.Load() != gateClosed {
		runtime.Gosched()
	}
	e.job = batchJob{}
	e.lastEnd = time.Since(e.epoch)
}
