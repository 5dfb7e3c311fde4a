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
type Probe struct {
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
	p := &Probe{unit: float64(k.FLOPsPerRound())}
	for range max(threads, 1) {
		p.fs = append(p.fs, func(n int) { sink(k.FMA(n)) })
	}
	return p
}

// ReadProbe probes the read bandwidth with a buffer of bytes per thread;
// its rates are in GB/s. Each thread's buffer is allocated and filled here.
func (k *Kernels) ReadProbe(bytes, threads int) *Probe {
	n := max(bytes/4, 1)
	p := &Probe{unit: float64(4 * n)}
	for range max(threads, 1) {
		b := make([]float32, n)
		for i := range b {
			b[i] = 1
		}
		p.fs = append(p.fs, func(units int) {
			var s float32
			for range units {
				s += k.Sum(b)
			}
			sink(s)
		})
	}
	return p
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
	p := &Probe{unit: float64(total) / float64(max(len(sets), 1))}
	for _, set := range sets {
		p.fs = append(p.fs, func(units int) {
			var s float32
			for range units {
				for _, x := range set {
					s += k.Sum(x)
				}
			}
			sink(s)
		})
	}
	return p
}

// Rate runs the probe once for about d and returns the rate over all its
// threads, in 1e9 units (FLOPs or bytes) per second. The first call for a
// given d sizes the run, doubling the work until a run lasts d.
func (p *Probe) Rate(d time.Duration) float64 {
	if p.k == 0 || p.d != d {
		p.size(d)
	}
	t := p.run(p.k)
	return float64(p.k) * float64(len(p.fs)) * p.unit / max(t.Seconds(), 1e-9) / 1e9
}

// Best returns the highest of runs rates, each from a run of about d.
func (p *Probe) Best(runs int, d time.Duration) float64 {
	best := 0.0
	for range max(runs, 1) {
		best = max(best, p.Rate(d))
	}
	return best
}

func (p *Probe) size(d time.Duration) {
	k := 1
	for {
		t := p.run(k)
		if t >= d || k > math.MaxInt/200 { // 100·k must not overflow
			break
		}
		// Aim a little past the target from the time measured so far.
		next := int(float64(k) * 1.2 * float64(d) / float64(max(t, time.Microsecond)))
		k = min(max(next, 2*k), 100*k)
	}
	p.k, p.d = k, d
}

// run does k units on every thread at once and returns how long the
// slowest took.
func (p *Probe) run(k int) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for _, f := range p.fs {
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
