package attention

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glancelab/attention/internal/calib"
	"github.com/glancelab/attention/internal/testutil"
)

// loopLayer is the stand-in for a decoder layer's other work: the
// matrix–vector products of its projections and MLP over float32 weights
// of a layer's size (4096 columns, 64 MiB: more than the L3, as a model's
// weights are), read row after row from where the last gap stopped.
type loopLayer struct {
	w    []float32 // rows of loopCols
	x, y []float32
	row  int
}

const loopCols, loopRows = 4096, 4096

func newLoopLayer() *loopLayer {
	r := testutil.Rand(13)
	return &loopLayer{w: testutil.Floats(r, loopRows*loopCols, 1), x: testutil.Floats(r, loopCols, 1), y: make([]float32, loopRows)}
}

// work runs the product's rows, sixteen at a time, for at least gap.
func (l *loopLayer) work(gap time.Duration) {
	for t0 := time.Now(); time.Since(t0) < gap; {
		for range 16 {
			l.y[l.row] = Dot(l.w[l.row*loopCols:(l.row+1)*loopCols], l.x)
			l.row = (l.row + 1) % loopRows
		}
	}
}

// loopGaps are the gaps BenchmarkDecodeLoop puts between calls: back to
// back, a layer's other work of a small and a large model, and gaps of
// 5 and 10 ms, past which the idle workers no longer poll through a gap
// (see DefaultIdleSpin), where the default engine must still be no slower
// than one worker.
var loopGaps = []time.Duration{0, 300 * time.Microsecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond}

// BenchmarkDecodeLoop times the decode step inside a model's loop: 32
// query heads on 8 KV heads over a bfloat16 cache, each call preceded on
// the calling goroutine by gap of the layer's other work (loopLayer).
// attn-µs is attention's time per call alone (the median); ns/op is a
// whole iteration, two gaps, a call and a read (below). Set
// workers=2 against workers=1 at the same gap: the default engine should
// never be slower than one worker, whatever the gap.
//
// Every other iteration reads the step's K and V instead, after the same
// gap, on as many threads as workers (loopReader: its second thread is
// woken before the gap and polls through it), and read-µs is the median of those reads: what the other work
// leaves of the cache in L2 and L3 sets what a step can reach, and
// read-fraction (read-µs over attn-µs) says how near it comes. roof-µs is
// the longer of that read and the step's FLOPs at the FMA peak on as many
// threads, and roof-fraction its ratio to attn-µs.
func BenchmarkDecodeLoop(b *testing.B) {
	layer := newLoopLayer()
	for _, Tk := range []int{1024, 4096} {
		s := decodeShape{name: fmt.Sprintf("gqa-%dk-bf16", Tk/1024), heads: 32, kvHeads: 8, Tq: 1, Tk: Tk}
		p := newCacheDecode(b, s, BF16)
		for _, gap := range loopGaps {
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("shape=%s/gap=%v/workers=%d", s.name, gap, workers), func(b *testing.B) {
					benchLoop(b, p, layer, gap, workers)
				})
			}
		}
	}
}

func benchLoop(b *testing.B, p *cacheDecode, layer *loopLayer, gap time.Duration, workers int) {
	e := NewBatched(workers)
	defer e.Close()
	rd := newLoopReader(readSets(p.kv, workers))
	defer rd.close()
	dst := BatchOutputs{Out: p.out}
	step := func() {
		if err := e.AttendCache(dst, p.q, p.cache, &p.opt); err != nil {
			b.Fatal(err)
		}
	}
	step() // sizes the workers' scratch
	calls, reads := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		// The other work runs with the timer on: StopTimer stops the
		// world to read the memory statistics, which parks the idle
		// workers' threads as no model's loop does.
		layer.work(gap)
		c0 := time.Now()
		step()
		calls = append(calls, time.Since(c0))
		rd.arm()
		layer.work(gap)
		c0 = time.Now()
		rd.read()
		reads = append(reads, time.Since(c0))
	}
	b.StopTimer()
	peak := calib.FMAProbe(workers).Best(3, decodeReadSample)
	attn, rd1 := median(calls).Seconds()*1e6, median(reads).Seconds()*1e6
	roof := max(rd1, p.flops()/peak/1e3)
	b.ReportMetric(attn, "attn-µs")
	b.ReportMetric(rd1, "read-µs")
	b.ReportMetric(rd1/attn, "read-fraction")
	b.ReportMetric(roof, "roof-µs")
	b.ReportMetric(roof/attn, "roof-fraction")
}

// median returns the median of x, which it sorts.
func median(x []time.Duration) time.Duration {
	slices.Sort(x)
	return x[len(x)/2]
}

// loopReader reads sets[i] on thread i, the caller's goroutine being
// thread 0 and each other a goroutine armed before the read's gap, which
// then polls for the read without sleeping (yielding to other goroutines,
// as the engine's idle workers do): the read a step could reach if its
// workers were awake, with the caches as the gap left them. Between reads
// its goroutines sleep, so that they take no turn from the engine's.
type loopReader struct {
	sets  [][][]float32
	k     *calib.Kernels
	start chan struct{}
	armed atomic.Int64 // goroutines polling for the read
	round atomic.Int64 // reads asked for
	done  atomic.Int64 // thread reads finished
}

func newLoopReader(sets [][][]float32) *loopReader {
	r := &loopReader{sets: sets, k: calib.Widest(), start: make(chan struct{})}
	for i := 1; i < len(sets); i++ {
		go r.poll(i)
	}
	return r
}

func (r *loopReader) poll(i int) {
	for range r.start {
		seen := r.round.Load()
		r.armed.Add(1)
		for r.round.Load() == seen {
			runtime.Gosched()
		}
		r.sum(i)
		r.done.Add(1)
	}
}

// arm wakes the reading goroutines and returns once they poll.
func (r *loopReader) arm() {
	r.armed.Store(0)
	for range len(r.sets) - 1 {
		r.start <- struct{}{}
	}
	for r.armed.Load() != int64(len(r.sets)-1) {
		runtime.Gosched()
	}
}

func (r *loopReader) sum(i int) {
	var s float32
	for _, x := range r.sets[i] {
		s += r.k.Sum(x)
	}
	loopSink.Store(math.Float32bits(s))
}

var loopSink atomic.Uint32

// read reads every set once, each on its thread, and returns when all
// are read.
func (r *loopReader) read() {
	want := r.done.Load() + int64(len(r.sets)-1)
	r.round.Add(1)
	r.sum(0)
	for r.done.Load() != want {
	}
}

func (r *loopReader) close() { close(r.start) }
