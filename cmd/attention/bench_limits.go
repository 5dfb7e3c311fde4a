package main

import (
	"time"

	"github.com/glancelab/attention/internal/calib"
)

// limitRuns holds the probes of the limits the cases are set against and
// the best rate each has reached in any run, the calibration's or one
// paired with a case. Cases with the same bound share a probe: a read
// probe holds a buffer of the working set per thread.
type limitRuns struct {
	probes map[probeKey]*calib.Probe
	best   map[probeKey]float64
}

// probeKey names one limit: the FMA peak or a read at a working set, with
// one set of kernels on some threads, or a case's read of its own buffers.
type probeKey struct {
	kernels        string
	fma            bool
	bytes, threads int
	own            int // the case's index + 1 for a read of its own buffers
}

// newLimitRuns starts from the limits the calibration measured.
func newLimitRuns(rep *benchReport) *limitRuns {
	lr := &limitRuns{probes: map[probeKey]*calib.Probe{}, best: map[probeKey]float64{}}
	for _, l := range rep.Limits {
		lr.best[probeKey{kernels: l.Kernels, fma: true, threads: l.Threads}] = l.PeakGFLOPS
		for _, r := range l.Reads {
			lr.best[probeKey{kernels: l.Kernels, bytes: r.WorkingSetBytes, threads: l.Threads}] = r.GBps
		}
	}
	return lr
}

// key returns the key of a bound on threads threads.
func (lr *limitRuns) key(b bound, threads int) probeKey {
	if b.fma {
		return probeKey{kernels: b.kernels, fma: true, threads: threads}
	}
	return probeKey{kernels: b.kernels, bytes: b.read.Bytes, threads: threads}
}

// ownKey returns the key of case ci's read of its own buffers with k.
func (lr *limitRuns) ownKey(ci int, c benchCase, k *calib.Kernels) probeKey {
	return probeKey{kernels: k.Name(), bytes: c.ws, threads: c.workers, own: ci + 1}
}

// own returns the key of case ci's read of its own buffers with k,
// measuring it the first time as Measure measures a level: the best of
// o.Runs runs.
func (lr *limitRuns) own(ci int, c benchCase, k *calib.Kernels, o calib.Options) probeKey {
	key := lr.ownKey(ci, c, k)
	if lr.probes[key] == nil {
		lr.probes[key] = k.ReadProbeOf(c.reads()...)
		lr.best[key] = lr.probes[key].Best(o.Runs, o.RunTime)
	}
	return key
}

// rate runs the limit's probe for about d and returns its rate, which
// also raises the limit's best.
func (lr *limitRuns) rate(key probeKey, d time.Duration) float64 {
	p := lr.probes[key]
	if p == nil {
		k := widthKernels(key.kernels) // the kernels of that name
		if key.fma {
			p = k.FMAProbe(key.threads)
		} else {
			p = k.ReadProbe(key.bytes, key.threads)
		}
		lr.probes[key] = p
	}
	r := p.Rate(d)
	lr.best[key] = max(lr.best[key], r)
	return r
}

// raise sets every limit of the report to the best its kernels reached.
func (lr *limitRuns) raise(rep *benchReport) {
	for i := range rep.Limits {
		l := &rep.Limits[i]
		l.PeakGFLOPS = max(l.PeakGFLOPS, lr.best[probeKey{kernels: l.Kernels, fma: true, threads: l.Threads}])
		for j := range l.Reads {
			r := &l.Reads[j]
			r.GBps = max(r.GBps, lr.best[probeKey{kernels: l.Kernels, bytes: r.WorkingSetBytes, threads: l.Threads}])
		}
		for j := range l.Levels {
			lv := &l.Levels[j]
			lv.GBps = max(lv.GBps, lr.best[probeKey{kernels: l.Kernels, bytes: lv.WorkingSetBytes, threads: l.Threads}])
		}
	}
}
