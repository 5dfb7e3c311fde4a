// Package calib measures this machine's own limits: the peak FP32 FMA rate
// of a core and the read bandwidth at working sets sized for each cache
// level and for DRAM. `attention bench` sets each figure it reports against
// them, so a number says how close a kernel comes to what the hardware can
// do, not only how fast it is.
//
// Both measurements run generated kernels (asm/amd64 and asm/arm64, run
// with -calib): one with many independent FMA chains and no memory traffic,
// one that streams a buffer through several accumulators. Without assembly
// (purego, other architectures) they run a Go loop, which measures what Go
// code can reach rather than the hardware.
package calib

import (
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:generate go run -C ../../asm ./amd64 -calib -out ../internal/calib/calib_amd64.s -stubs ../internal/calib/calib_amd64.go -pkg calib
//go:generate go run -C ../../asm ./arm64 -calib -out ../internal/calib/calib_arm64.s -stubs ../internal/calib/calib_arm64.go -pkg calib

// The FMA operands: their product 2^-40 is exact, and the accumulators stay
// far from overflow and from subnormals however long the loop runs.
var fmaA, fmaB float32 = 0x1p-20, 0x1p-20

// Path names the kernels the measurements run: "avx2", "neon" or "generic".
func Path() string { return path }

// FLOPsPerRound is the number of floating-point operations (an FMA counts
// two) one round of FMA performs.
func FLOPsPerRound() int { return 2 * chains * lanes }

// FMA runs rounds rounds of acc += a*b on every independent chain and
// returns the sum of the accumulators, which start at zero.
func FMA(rounds int) float32 { return fma(rounds, fmaA, fmaB) }

// Sum returns Σ x[i], reading x once from start to end. The order of the
// additions is unspecified.
func Sum(x []float32) float32 {
	n := len(x) - len(x)%readBlock
	if n == len(x) {
		return readSum(x)
	}
	s := readSum(x[:n])
	for _, v := range x[n:] {
		s += v
	}
	return s
}

// Level is a working-set class: a cache level or DRAM.
type Level struct {
	Name     string  // "L1", "L2", "L3" or "DRAM"
	Capacity int     // bytes of the cache (per core for private levels); 0 for DRAM
	Bytes    int     // the working set the bandwidth was measured with, per thread
	GBps     float64 // read bandwidth over all threads, 1e9 bytes per second
}

// Limits are the machine's limits measured with Threads threads at once.
type Limits struct {
	Path    string  // kernels used: avx2, neon or generic
	Threads int     // threads measured together
	GFLOPS  float64 // peak FP32 rate over all threads, 1e9 FLOP per second
	Levels  []Level // L1, L2, L3, DRAM
}

// LevelFor returns the level a working set of the given bytes (per thread)
// lives in: the first whose capacity holds it, DRAM otherwise.
func (l Limits) LevelFor(bytes int) Level {
	for _, lv := range l.Levels {
		if lv.Capacity == 0 || bytes <= lv.Capacity {
			return lv
		}
	}
	return l.Levels[len(l.Levels)-1]
}

// Options tune Measure.
type Options struct {
	Threads int           // measured together (at least 1)
	Runs    int           // the best of Runs runs is kept (at least 1)
	RunTime time.Duration // the length of one run
	DRAM    int           // the DRAM working set per thread in bytes; 0 for the default
}

// Measure measures the limits. A limit is the best of the runs, since
// anything else running on the machine can only slow a run down.
func Measure(o Options) Limits {
	o.Threads = max(o.Threads, 1)
	o.Runs = max(o.Runs, 1)
	if o.RunTime <= 0 {
		o.RunTime = 10 * time.Millisecond
	}
	l1, l2, l3 := CacheSizes()
	dram := o.DRAM
	if dram <= 0 {
		dram = max(4*l3, 64<<20)
	}
	lim := Limits{Path: path, Threads: o.Threads}
	lim.GFLOPS = FMAProbe(o.Threads).Best(o.Runs, o.RunTime)

	// Half a private cache holds the buffer with room for everything else.
	// The L3 is shared with other cores (and, on a virtual machine, with
	// other tenants), so a quarter of it is split between the threads.
	for _, lv := range []Level{
		{Name: "L1", Capacity: l1, Bytes: l1 / 2},
		{Name: "L2", Capacity: l2, Bytes: l2 / 2},
		{Name: "L3", Capacity: l3, Bytes: l3 / 4 / o.Threads},
		{Name: "DRAM", Bytes: dram},
	} {
		lv.GBps = ReadProbe(lv.Bytes, o.Threads).Best(o.Runs, o.RunTime)
		lim.Levels = append(lim.Levels, lv)
	}
	return lim
}

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

// FMAProbe probes the peak FMA rate on threads threads; its rates are in
// GFLOP/s.
func FMAProbe(threads int) *Probe {
	p := &Probe{unit: float64(FLOPsPerRound())}
	for range max(threads, 1) {
		p.fs = append(p.fs, func(k int) { sink(FMA(k)) })
	}
	return p
}

// ReadProbe probes the read bandwidth with a buffer of bytes per thread
// (sized for a cache level, as Measure does); its rates are in GB/s. Each
// thread's buffer is allocated and filled here.
func ReadProbe(bytes, threads int) *Probe {
	n := max(bytes/4, 1)
	p := &Probe{unit: float64(4 * n)}
	for range max(threads, 1) {
		b := make([]float32, n)
		for i := range b {
			b[i] = 1
		}
		p.fs = append(p.fs, func(k int) {
			var s float32
			for range k {
				s += Sum(b)
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
func ReadProbeOf(sets ...[][]float32) *Probe {
	total := 0
	for _, set := range sets {
		for _, x := range set {
			total += 4 * len(x)
		}
	}
	p := &Probe{unit: float64(total) / float64(max(len(sets), 1))}
	for _, set := range sets {
		p.fs = append(p.fs, func(k int) {
			var s float32
			for range k {
				for _, x := range set {
					s += Sum(x)
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

// CacheSizes returns the sizes in bytes of the L1 data cache, L2 and L3 of
// CPU 0, from Linux's sysfs; where it cannot be read, common sizes (32 KiB,
// 512 KiB, 8 MiB) stand in.
func CacheSizes() (l1, l2, l3 int) {
	l1, l2, l3 = 32<<10, 512<<10, 8<<20
	for i := range 8 {
		dir := "/sys/devices/system/cpu/cpu0/cache/index" + strconv.Itoa(i) + "/"
		level, err1 := readString(dir + "level")
		typ, err2 := readString(dir + "type")
		size, err3 := readString(dir + "size")
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		b, ok := parseSize(size)
		if !ok || typ == "Instruction" {
			continue
		}
		switch level {
		case "1":
			l1 = b
		case "2":
			l2 = b
		case "3":
			l3 = b
		}
	}
	return l1, l2, l3
}

func readString(name string) (string, error) {
	b, err := os.ReadFile(name)
	return strings.TrimSpace(string(b)), err
}

// parseSize reads sysfs sizes such as "32K", "1M" or "512".
func parseSize(s string) (int, bool) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > math.MaxInt/mult {
		return 0, false
	}
	return n * mult, true
}
