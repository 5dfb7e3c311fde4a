package attention

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/glancelab/attention/internal/testutil"
)

// hostPool is a host's pool of goroutines, as a framework keeps them: a
// fixed set fed by a channel. Its run allocates nothing.
type hostPool struct {
	work chan hostTask
	wg   sync.WaitGroup // the tasks of the run in progress
}

type hostTask struct {
	i    int
	task func(int)
}

func newHostPool(goroutines int) *hostPool {
	p := &hostPool{work: make(chan hostTask)}
	for range goroutines {
		go func() {
			for t := range p.work {
				t.task(t.i)
				p.wg.Done()
			}
		}()
	}
	return p
}

// run sends every task to the pool's goroutines and waits for them.
func (p *hostPool) run(n int, task func(int)) {
	p.wg.Add(n)
	for i := range n {
		p.work <- hostTask{i, task}
	}
	p.wg.Wait()
}

func (p *hostPool) close() { close(p.work) }

// serialRun runs the tasks one after another on the caller's goroutine.
func serialRun(n int, task func(int)) {
	for i := range n {
		task(i)
	}
}

// testRunners returns runners that keep the contract in different ways:
// a pool of two goroutines, serially, in reverse, a goroutine per task,
// and lazy ones that run the first task only, the last only, or none,
// leaving the rest to the caller. stop ends the pool's goroutines.
func testRunners() (runners map[string]TaskRunner, stop func()) {
	pool := newHostPool(2)
	return map[string]TaskRunner{
		"pool":   pool.run,
		"serial": serialRun,
		"reverse": func(n int, task func(int)) {
			for i := n - 1; i >= 0; i-- {
				task(i)
			}
		},
		"goroutines": func(n int, task func(int)) {
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { task(i) })
			}
			wg.Wait()
		},
		"first": func(n int, task func(int)) { task(0) },
		"last":  func(n int, task func(int)) { task(n - 1) },
		"none":  func(int, func(int)) {},
	}, pool.close
}

// spoil fills every output of p with a value no call computes, so that an
// element a call leaves unwritten shows.
func spoil(p *batchProblem) {
	const x = -12345.678
	c := p.c
	for b := range c.B {
		for h := range c.H {
			for i := range c.Tq {
				fillWith(p.out.Row(b, h, i), x)
				if c.weights {
					fillWith(p.w.Row(b, h, i), x)
				}
				if c.logit {
					fillWith(p.logits.Row(b, h, i), x)
				}
			}
		}
	}
	fillWith(p.lse, x)
}

// poolBits returns p's results as NewBatched(1) and NewBatched(2) compute
// them, after checking that they are the same bits.
func poolBits(t *testing.T, p *batchProblem, call func(e *Batched) error) []float32 {
	t.Helper()
	var want []float32
	for _, workers := range []int{1, 2} {
		e := NewBatched(workers)
		spoil(p)
		if err := call(e); err != nil {
			t.Fatal(err)
		}
		e.Close()
		got := p.results()
		if want == nil {
			want = got
		} else if i := testutil.FirstDiff(got, want); i >= 0 {
			t.Fatalf("%v: element %d = %v on two workers, %v on one", p.c, i, got[i], want[i])
		}
	}
	return want
}

// runnerCase is one engine of NewBatchedRunner under test: its runner's
// name and its workers.
type runnerCase struct {
	name    string
	workers int
}

func (rc runnerCase) String() string {
	return fmt.Sprintf("runner %s, workers=%d", rc.name, rc.workers)
}

// sameOnRunners checks that every runner, on engines of 2, 3 and 8
// workers, gives the bits of the pool's engines, and that each call
// asked its runner for one to `workers` tasks, at most once.
func sameOnRunners(t *testing.T, p *batchProblem, call func(e *Batched) error, names ...string) {
	t.Helper()
	want := poolBits(t, p, call)
	runners, stop := testRunners()
	defer stop()
	for _, workers := range []int{2, 3, 8} {
		for _, name := range names {
			rc := runnerCase{name, workers}
			var asked []int
			e := NewBatchedRunner(workers, func(n int, task func(int)) {
				asked = append(asked, n)
				runners[name](n, task)
			})
			spoil(p)
			if err := call(e); err != nil {
				t.Fatal(err)
			}
			e.Close()
			if len(asked) > 1 || len(asked) == 1 && (asked[0] < 1 || asked[0] > workers) {
				t.Fatalf("%v, %v: the call asked its runner for %v tasks", p.c, rc, asked)
			}
			got := p.results()
			if i := testutil.FirstDiff(got, want); i >= 0 {
				t.Fatalf("%v, %v: element %d = %v, NewBatched's %v", p.c, rc, i, got[i], want[i])
			}
		}
	}
}

var allRunners = []string{"pool", "serial", "reverse", "goroutines", "first", "last", "none"}

// A Batched on the host's runner gives the bits of the pool's engines for
// every shape the pool shares out differently: tasks of grouped heads,
// keys cut into chunks that are work items of their own (a decode step of
// few key/value heads over long keys), paired block tasks, causal
// prefills, whole rows for weights and logits; whatever the runner, and
// also when it runs fewer tasks than asked, or none.
func TestRunnerBitIdentical(t *testing.T) {
	r := testutil.Rand(71)
	for _, c := range []batchCase{
		{B: 2, H: 8, Hkv: 2, Tq: 77, Tk: 301, dk: 64, dv: 48, causal: true, valid: true},
		{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 64, dv: 48},
		{B: 1, H: 4, Hkv: 1, Tq: 1, Tk: 5000, dk: 32, dv: 16, valid: true, sinks: true, alibi: true, lse: true},
		{B: 2, H: 8, Hkv: 2, Tq: 1, Tk: 3000, dk: 16, dv: 8, valid: true, window: 700},
		{B: 1, H: 2, Hkv: 1, Tq: 32, Tk: 1100, dk: 64, dv: 76, causal: true},
		{B: 1, H: 8, Hkv: 2, Tq: 4, Tk: 2000, dk: 64, dv: 48, causal: true, keep: true},
		{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 150, dk: 40, dv: 8, causal: true, softcap: 5, bias: biasRows, keep: true, weights: true, logit: true},
		{B: 3, H: 4, Hkv: 4, Tq: 2, Tk: 700, dk: 16, dv: 8, valid: true, sinks: true, alibi: true, lse: true},
	} {
		p := newBatchProblem(t, r, c)
		sameOnRunners(t, p, func(e *Batched) error { return e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }, allRunners...)
	}
}

// AttendCache over 16-bit caches (and float32 ones), rings whose rows
// wrap among them, gives the pool's bits on the host's runner too.
func TestRunnerCacheBitIdentical(t *testing.T) {
	r := testutil.Rand(72)
	for _, c := range cacheCases(true) {
		p := newCacheProblem(t, r, c)
		call := func(e *Batched) error { return e.AttendCache(p.outputs(), p.q, p.cache, &p.opt) }
		sameOnRunners(t, p.batchProblem, call, "pool", "serial", "none")
	}
}

// A call asks its runner for min(workers, work items) tasks, once, where
// the pool would share it out; small calls, calls of one work item and
// engines of one worker run on the caller without asking.
func TestRunnerTasksAsked(t *testing.T) {
	r := testutil.Rand(73)
	for _, c := range []struct {
		batchCase
		workers, want int // want: tasks asked for, 0 for no call of run
	}{
		// One task of eight packed heads, its 3000 keys three chunks.
		{batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 32}, 2, 2},
		{batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 32}, 4, 3},
		{batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 32}, 1, 0},
		// Sixteen tasks.
		{batchCase{B: 2, H: 8, Hkv: 8, Tq: 16, Tk: 200, dk: 32, dv: 32, causal: true}, 4, 4},
		// One task, one chunk; and a call below smallWork.
		{batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 900, dk: 32, dv: 32}, 4, 0},
		{batchCase{B: 1, H: 2, Hkv: 2, Tq: 1, Tk: 40, dk: 16, dv: 16}, 4, 0},
	} {
		p := newBatchProblem(t, r, c.batchCase)
		var asked []int
		e := NewBatchedRunner(c.workers, func(n int, task func(int)) {
			asked = append(asked, n)
			serialRun(n, task)
		})
		if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == 0 && len(asked) != 0:
			t.Errorf("%v, workers=%d: the runner was asked for %v tasks, want no call", c.batchCase, c.workers, asked)
		case c.want > 0 && (len(asked) != 1 || asked[0] != c.want):
			t.Errorf("%v, workers=%d: the runner was asked for %v tasks, want [%d]", c.batchCase, c.workers, asked, c.want)
		}
	}
}

// With a runner that allocates nothing (a pool of goroutines fed by a
// channel, or the caller alone), a steady-state call allocates nothing:
// the task function is made once, with the engine.
func TestRunnerAllocatesNothing(t *testing.T) {
	r := testutil.Rand(74)
	pool := newHostPool(2)
	defer pool.close()
	prefill := batchCase{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 100, dk: 32, dv: 32, causal: true, keep: true,
		softcap: 3, bias: biasRows, sinks: true, alibi: true, lse: true}
	decode := batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 32, valid: true}
	for name, run := range map[string]TaskRunner{"pool": pool.run, "serial": serialRun} {
		e := NewBatchedRunner(2, run)
		for _, c := range []batchCase{prefill, decode} {
			p := newBatchProblem(t, r, c)
			e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt)
			if n := testing.AllocsPerRun(5, func() { e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }); n != 0 {
				t.Errorf("runner %s, %v: %v allocations per Attend, want 0", name, c, n)
			}
		}
		for _, typ := range []KVType{F16, BF16, I8} {
			// A decode step over 3000 held rows of two heads: two tasks.
			cache := fullCache(t, r, typ, 3000)
			q, out := tensor(t, r, 1, 8, 1, 32, false, 2), tensor(t, r, 1, 8, 1, 32, false, 1)
			e.AttendCache(BatchOutputs{Out: out}, q, cache, nil)
			if n := testing.AllocsPerRun(5, func() { e.AttendCache(BatchOutputs{Out: out}, q, cache, nil) }); n != 0 {
				t.Errorf("runner %s, %v cache: %v allocations per AttendCache, want 0", name, typ, n)
			}
		}
		e.Close()
	}
}

// A worker whose first item comes in a later call allocates nothing
// there: each call sizes every worker's scratch before any takes an item,
// so a helper that first joins late in a model's loop (parked through the
// first calls' gaps) finds its scratch grown. The first call's runner runs
// its tasks in order, task 0 taking every item; the second's in reverse,
// the last task taking them all.
func TestLateWorkerAllocatesNothing(t *testing.T) {
	r := testutil.Rand(75)
	reverse := false
	run := func(n int, task func(i int)) {
		for i := range n {
			if reverse {
				i = n - 1 - i
			}
			task(i)
		}
	}
	// lateAllocs builds an engine, makes its first call in order and
	// counts the allocations of its second, in reverse. Another
	// goroutine of the test binary may allocate during the count, so it
	// is taken on one P and up to three times with fresh engines: an
	// allocation of the call itself shows in every attempt.
	lateAllocs := func(call func(e *Batched)) uint64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		least := ^uint64(0)
		for range 3 {
			e := NewBatchedRunner(2, run)
			reverse = false
			call(e)
			reverse = true
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			call(e)
			runtime.ReadMemStats(&m1)
			e.Close()
			least = min(least, m1.Mallocs-m0.Mallocs)
			if least == 0 {
				break
			}
		}
		return least
	}
	prefill := batchCase{B: 2, H: 4, Hkv: 2, Tq: 40, Tk: 100, dk: 32, dv: 32, causal: true}
	decode := batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 32, valid: true}
	for _, c := range []batchCase{prefill, decode} {
		p := newBatchProblem(t, r, c)
		if n := lateAllocs(func(e *Batched) { e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }); n != 0 {
			t.Errorf("%v: %d allocations in the call whose last worker took its first items, want 0", c, n)
		}
	}
	// A decode step over 3000 rows, and 40 query rows over 500 (the block
	// path, each head's rows widened once per worker).
	for _, typ := range []KVType{F16, BF16, I8} {
		for _, s := range []struct{ Tq, n int }{{1, 3000}, {40, 500}} {
			cache := fullCache(t, r, typ, s.n)
			q, out := tensor(t, r, 1, 8, s.Tq, 32, false, 2), tensor(t, r, 1, 8, s.Tq, 32, false, 1)
			if n := lateAllocs(func(e *Batched) { e.AttendCache(BatchOutputs{Out: out}, q, cache, nil) }); n != 0 {
				t.Errorf("%v cache, Tq %d: %d allocations in the call whose last worker took its first items, want 0", typ, s.Tq, n)
			}
		}
	}
}

// fullCache returns a cache of one entry of two heads of 32 columns
// holding n random rows.
func fullCache(t *testing.T, r *rand.Rand, typ KVType, n int) *KVCache {
	t.Helper()
	cache, err := NewKVCache(1, 2, n, 32, 32, typ)
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.Append(0, testutil.Floats(r, 2*n*32, 2), testutil.Floats(r, 2*n*32, 3), n); err != nil {
		t.Fatal(err)
	}
	return cache
}

// A panic in the runner, before or after it ran its tasks, reaches the
// caller of Attend; the engine is unlocked, holds no call, and its next
// call gives the pool's bits.
func TestRunnerPanics(t *testing.T) {
	r := testutil.Rand(75)
	p := newBatchProblem(t, r, batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 16, valid: true})
	call := func(e *Batched) error { return e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }
	want := poolBits(t, p, call)
	for _, after := range []bool{false, true} {
		panicking := true
		e := NewBatchedRunner(2, func(n int, task func(int)) {
			if after {
				serialRun(n, task)
			}
			if panicking {
				panic("the host's pool failed")
			}
			serialRun(n, task)
		})
		got := func() (v any) {
			defer func() { v = recover() }()
			call(e)
			return nil
		}()
		if got != "the host's pool failed" {
			t.Fatalf("after=%v: Attend recovered %v, want the runner's panic", after, got)
		}
		if !e.mu.TryLock() {
			t.Fatalf("after=%v: the engine is locked after its runner panicked", after)
		}
		e.mu.Unlock()
		if e.job.tasks() != 0 {
			t.Errorf("after=%v: the engine holds the call its runner panicked in", after)
		}
		panicking = false
		spoil(p)
		if err := call(e); err != nil {
			t.Fatal(err)
		}
		if i := testutil.FirstDiff(p.results(), want); i >= 0 {
			t.Fatalf("after=%v: the call after the panic: element %d = %v, NewBatched's %v", after, i, p.results()[i], want[i])
		}
	}
}

// Close on an engine of the host's runner: later calls return ErrClosed
// without calling the runner, Close may be repeated, and Wake and
// SetIdleSpin do nothing. The engine never starts a goroutine.
func TestRunnerClose(t *testing.T) {
	r := testutil.Rand(76)
	p := newBatchProblem(t, r, batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 16})
	cp := newCacheProblem(t, r, cacheCase{batchCase{B: 1, H: 8, Hkv: 2, Tq: 1, Tk: 3000, dk: 32, dv: 32}, BF16, false})
	before := runtime.NumGoroutine()
	calls := 0
	e := NewBatchedRunner(4, func(n int, task func(int)) {
		calls++
		serialRun(n, task)
	})
	e.SetIdleSpin(time.Hour)
	e.Wake()
	if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil || calls != 1 {
		t.Fatalf("Attend: %v, %d calls of the runner, want nil and 1", err, calls)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after a call, %d before the engine", n, before)
	}
	e.Close()
	e.Close()
	e.Wake()
	if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); !errors.Is(err, ErrClosed) {
		t.Errorf("Attend after Close: %v, want ErrClosed", err)
	}
	if err := e.AttendCache(cp.outputs(), cp.q, cp.cache, &cp.opt); !errors.Is(err, ErrClosed) {
		t.Errorf("AttendCache after Close: %v, want ErrClosed", err)
	}
	if calls != 1 {
		t.Errorf("the runner was called %d times, want once (before Close)", calls)
	}
}

// A nil runner: every call on the caller's goroutine, as NewBatched(1),
// with the same bits and no goroutine started. Workers of 0 or less mean
// GOMAXPROCS, as for NewBatched.
func TestRunnerNilAndWorkers(t *testing.T) {
	r := testutil.Rand(77)
	p := newBatchProblem(t, r, batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 16, lse: true})
	call := func(e *Batched) error { return e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }
	want := poolBits(t, p, call)
	before := runtime.NumGoroutine()
	e := NewBatchedRunner(4, nil)
	defer e.Close()
	if e.Workers() != 1 {
		t.Errorf("NewBatchedRunner(4, nil) has %d workers, want 1", e.Workers())
	}
	spoil(p)
	if err := call(e); err != nil {
		t.Fatal(err)
	}
	if i := testutil.FirstDiff(p.results(), want); i >= 0 {
		t.Fatalf("nil runner: element %d = %v, NewBatched's %v", i, p.results()[i], want[i])
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("nil runner: %d goroutines after a call, %d before the engine", n, before)
	}
	for _, w := range []int{0, -3} {
		if got := NewBatchedRunner(w, serialRun).Workers(); got != runtime.GOMAXPROCS(0) {
			t.Errorf("NewBatchedRunner(%d, run) has %d workers, want GOMAXPROCS = %d", w, got, runtime.GOMAXPROCS(0))
		}
	}
	if got := NewBatchedRunner(3, serialRun).Workers(); got != 3 {
		t.Errorf("NewBatchedRunner(3, run) has %d workers", got)
	}
}

// Calls from several goroutines on one engine of the host's pool run one
// at a time, each with the pool's bits (run it with -race).
func TestRunnerConcurrentCallers(t *testing.T) {
	r := testutil.Rand(78)
	cases := []batchCase{
		{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 16},
		{B: 2, H: 8, Hkv: 2, Tq: 9, Tk: 400, dk: 32, dv: 16, causal: true},
	}
	var ps []*batchProblem
	var wants [][]float32
	for _, c := range cases {
		p := newBatchProblem(t, r, c)
		ps = append(ps, p)
		wants = append(wants, poolBits(t, p, func(e *Batched) error { return e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }))
	}
	pool := newHostPool(2)
	defer pool.close()
	e := NewBatchedRunner(2, pool.run)
	defer e.Close()
	var wg sync.WaitGroup
	errs := make(chan error, len(ps))
	for k, p := range ps {
		wg.Go(func() {
			for range 10 {
				if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
					errs <- err
					return
				}
				if i := testutil.FirstDiff(p.results(), wants[k]); i >= 0 {
					errs <- fmt.Errorf("%v: element %d = %v, NewBatched's %v", p.c, i, p.results()[i], wants[k][i])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
