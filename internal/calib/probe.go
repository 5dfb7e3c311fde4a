package calib

import (
	"math"
	"sync"
	"time"
)

// A Probe runs one of Measure's kernels on demand, on some threads at
// once. Measure keeps the best of its runs; a caller can also run a probe
// right beside the work it times, so that the two share the machine's
// state: on a shared machine (other tenants, a busy SMT sibling) a limit
// measured minutes apart may not be the limit the work met.
//
// A read probe holds one way of doing its work per read kernel, and its
// rate is that of the fastest: each pattern of loads is a lower bound on
// what the caches deliver, so the best of them is the limit.
type Probe struct {
	ways []*probeWay
}

// probeWay is one way of doing a probe's work.
type probeWay struct {
	fs   []func(k int) // one per thread: k units of work
	unit float64       // FLOPs or bytes in a unit
	k    int           // units per run, once sized
	d    time.Duration // the run length k was sized for
}

// FMAProbe is Widest().FMAProbe.
func FMAProbe(threads int) *Probe { return Widest().FMAProbe(threads) }

// ReadProbe is Widest().ReadProbe.
func ReadProbe(bytes, threads int) *Probe { return Widest().ReadProbe(bytes, threads) }

// ReadProbeOf is Widest().ReadProbeOf.
func ReadProbeOf(sets ...[][]float32) *Probe { return Widest().ReadProbeOf(sets...) }

// FMAProbe probes the peak FMA rate on threads threads; its rates are in
// GFLOP/s.
func (k *Kernels) FMAProbe(threads int) *Probe {
	w := &probeWay{unit: float64(k.FLOPsPerRound())}
	for range max(threads, 1) {
		w.fs = append(w.fs, func(n int) { sink(k.FMA(n)) })
	}
	return &Probe{ways: []*probeWay{w}}
}

// ReadProbe probes the read bandwidth with a buffer of bytes per thread;
// its rates are in GB/s. Each thread's buffer is allocated and filled here.
func (k *Kernels) ReadProbe(bytes, threads int) *Probe {
	n := max(bytes/4, 1)
	sets := make([][][]float32, max(threads, 1))
	for i := range sets {
		b := make([]float32, n)
		for i := range b {
			b[i] = 1
		}
		sets[i] = [][]float32{b}
	}
	return k.ReadProbeOf(sets...)
}

// ReadProbeOf probes the read bandwidth over the caller's own buffers, on
// one thread per element of sets: a unit of work is thread i reading every
// slice of sets[i] once, in order. Its rates are in GB/s over the bytes of
// every set, so the sets should be of about equal size (the slowest thread
// sets the time). Nothing is copied: run beside work that reads the same
// slices, it reads exactly the bytes that work reads, from wherever they
// are in the caches.
func (k *Kernels) ReadProbeOf(sets ...[][]float32) *Probe {
	total := 0
	for _, set := range sets {
		for _, x := range set {
			total += 4 * len(x)
		}
	}
	p := &Probe{}
	for _, r := range k.reads {
		w := &probeWay{unit: float64(total) / float64(max(len(sets), 1))}
		for _, set := range sets {
			w.fs = append(w.fs, func(units int) {
				var s float32
				for range units {
					for _, x := range set {
						s = r.fold(s, r.sum(x))
					}
				}
				sink(s)
			})
		}
		p.ways = append(p.ways, w)
	}
	return p
}

// Rate runs the probe for about d per way of doing its work and returns
// the rate of the fastest over all its threads, in 1e9 units (FLOPs or
// bytes) per second. The first call for a given d sizes the runs, doubling
// the work until a run lasts d.
func (p *Probe) Rate(d time.Duration) float64 {
	best := 0.0
	for _, w := range p.ways {
		best = max(best, w.rate(d))
	}
	return best
}

// Best returns the highest of runs rates, each from a run of about d.
func (p *Probe) Best(runs int, d time.Duration) float64 {
	best := 0.0
	for range max(runs, 1) {
		best = max(best, p.Rate(d))
	}
	return best
}

func (w *probeWay) rate(d time.Duration) float64 {
	if w.k == 0 || w.d != d {
		w.size(d)
	}
	t := w.run(w.k)
	return float64(w.k) * float64(len(w.fs)) * w.unit / max(t.Seconds(), 1e-9) / 1e9
}

func (w *probeWay) size(d time.Duration) {
	k := 1
	for {
		t := w.run(k)
		if t >= d || k > math.MaxInt/200 { // 100·k must not overflow
			break
		}
		// Aim a little past the target from the time measured so far.
		next := int(float64(k) * 1.2 * float64(d) / float64(max(t, time.Microsecond)))
		k = min(max(next, 2*k), 100*k)
	}
	w.k, w.d = k, d
}

// run does k units on every thread at once and returns how long the
// slowest took.
func (w *probeWay) run(k int) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for _, f := range w.fs {
		wg.Go(func() { f(k) })
	}
	wg.Wait()
	return time.Since(start)
}

var sinkMu sync.Mutex

// Sink accumulates every probe's result, so that the compiler cannot
// discard the work that produced it (the generic kernels are plain Go
// loops). Exported only so that it counts as used.
var Sink float32

// sink adds x to Sink.
func sink(x float32) {
	sinkMu.Lock()
	Sink += x
	sinkMu.Unlock()
}
