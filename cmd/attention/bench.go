package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/calib"
	"github.com/glancelab/attention/internal/impl"
)

const benchDescription = `Measures this machine's limits first (peak FP32 FMA rate, read bandwidth at
working sets sized for L1, L2, L3 and DRAM and at every case's own working
set, with generated calibration kernels of each register width: zmm, ymm,
NEON, scalar Go), then times the exported kernels, one decoder step of
attention (T = 128, 1024, 8192; d = 64, 128), batched attention (8 heads × 512
queries × 512 keys × d 64, causal and not, 1 and all workers), language
model decode steps on batched attention (grouped-query and multi-query KV
caches of 512 to 32768 keys, d 128, and a causal 4-row verify) and the
grouped-query step inside a model's loop (group loop: a bf16 KVCache of 1024
and 4096 keys, each call after 0, 0.3 or 2 ms of other work, matrix-vector
rows over 64 MiB of weights, left out of the timing; the median call; 0.3 ms
alone with --quick) with every implementation this CPU supports. Each figure
is the median of several runs, shown as GFLOP/s or GB/s, as a fraction of
the limit for its working set (the roofline: the lower of the FMA peak and
the read bandwidth at that working set times its FLOPs per byte; for the
decode steps, the bandwidth of a read of their own K and V) measured with
the kernels of the implementation's register width and with the machine's
widest, as the median fraction of the first re-measured right after each
run ("paired", which on a shared machine compares like with like), as a
speedup over the generic implementation and, on all workers, over one.
Progress goes to stderr.`

type benchConfig struct {
	quick   bool
	runs    int
	runTime time.Duration // the length of one run
	workers int           // the "all workers" count
	// keep, if set, chooses the cases to run (the tests' short mode runs
	// a few).
	keep func(benchCase) bool
}

func runBench(stdout, stderr io.Writer, args []string) error {
	fs := newFlagSet("bench", "[--quick] [--json] [--svg FILE] [--runs N] [--group GROUP,...]", benchDescription)
	jsonOut := fs.Bool("json", false, "print the results as JSON instead of a table")
	svgFile := fs.String("svg", "", "also write a plot of attention throughput against T to `FILE` (SVG)")
	cfg, err := benchFlags(fs, args, stdout, svgFile)
	if err != nil {
		return err
	}

	// The plot's file is created first, so a bad path fails at once rather
	// than after the measurements.
	var svg *os.File
	if *svgFile != "" {
		f, err := os.Create(*svgFile)
		if err != nil {
			return err
		}
		defer f.Close()
		svg = f
	}

	prog := newProgress(stderr)
	rep, err := bench(cfg, prog)
	prog.done()
	if err != nil {
		return err
	}
	if svg != nil {
		err := writeBenchSVG(svg, rep)
		if cerr := svg.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", *svgFile, err)
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	p := &printer{w: stdout}
	writeBenchTable(p, rep)
	return p.err
}

// benchFlags adds the flags that choose what runs and how long to fs,
// parses args and returns the configuration they make. The plot (svgFile)
// is of the attend group, which a --group must then include.
func benchFlags(fs *flag.FlagSet, args []string, stdout io.Writer, svgFile *string) (benchConfig, error) {
	quick := fs.Bool("quick", false, "fewer and shorter runs: a few seconds in all, for a first look")
	runs := fs.Int("runs", 0, "runs per figure, the median is reported (default 7, 3 with --quick)")
	group := fs.String("group", "", "the `GROUP,...` of cases to run, comma-separated: "+strings.Join(benchGroups, ", ")+" (default all)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return benchConfig{}, err
	}
	cfg := benchConfig{quick: *quick, runs: 7, runTime: 20 * time.Millisecond, workers: runtime.GOMAXPROCS(0)}
	if cfg.quick {
		cfg.runs, cfg.runTime = 3, 2*time.Millisecond
	}
	if *runs < 0 {
		return cfg, &usageError{msg: fmt.Sprintf("--runs %d: want a positive count", *runs), usage: usageOf(fs)}
	}
	if *runs > 0 {
		cfg.runs = *runs
	}
	if *group == "" {
		return cfg, nil
	}
	groups := strings.Split(*group, ",")
	for _, g := range groups {
		if !slices.Contains(benchGroups, g) {
			return cfg, &usageError{msg: fmt.Sprintf("--group %s: no group %q (want %s)", *group, g, strings.Join(benchGroups, ", ")), usage: usageOf(fs)}
		}
	}
	if *svgFile != "" && !slices.Contains(groups, "attend") {
		return cfg, &usageError{msg: fmt.Sprintf("--svg plots the attend group, which --group %s leaves out", *group), usage: usageOf(fs)}
	}
	cfg.keep = func(c benchCase) bool { return slices.Contains(groups, c.group) }
	return cfg, nil
}

// benchCase is one timed operation, run once per implementation.
type benchCase struct {
	group   string // kernel, attend, batched, decode, loop (benchGroups)
	name    string // what runs: Dot, Attend, Batched, …
	shape   string
	n, t, d int
	heads   int
	causal  bool
	workers int     // threads the operation uses
	flops   float64 // per operation; 0 where FLOPs are not the measure
	bytes   float64 // the fewest bytes the operation must read: the roofline's traffic
	ws      int     // working set per thread (read and written), bytes
	// ownRead sets the case against the read bandwidth of its own buffers
	// (reads: one set of slices per thread, ws bytes each) instead of the
	// calibration level its working set falls in, and counts GB/s, not
	// GFLOP/s, against it; or GFLOP/s against the FMA peak where that
	// roofline is the lower (see bound.withRead).
	ownRead bool
	reads   func() [][][]float32
	// gap, if set, runs before each call of the operation, outside the
	// timing, and the time per operation is then the median of the calls
	// timed one by one (the loop cases: a model's other work between two
	// attention calls; a gap that does nothing times the calls alone).
	gap func()
	// setup builds the operation with the selected implementation; close
	// (maybe nil) releases what it holds.
	setup func() (op func() error, close func(), err error)
}

func benchCases(cfg benchConfig) []benchCase {
	var cs []benchCase
	rng := rand.New(rand.NewPCG(3, 4))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}

	// The exported kernels, from L1 and from L3.
	for _, n := range []int{2048, 1 << 20} {
		x, y, dst := fill(n), fill(n), make([]float32, n)
		kernel := func(name string, flops, bytes float64, ws int, op func()) {
			cs = append(cs, benchCase{
				group: "kernel", name: name, shape: fmt.Sprintf("n=%d", n), n: n, workers: 1,
				flops: flops, bytes: bytes, ws: ws,
				setup: func() (func() error, func(), error) { return func() error { op(); return nil }, nil, nil },
			})
		}
		var s float32
		kernel("Dot", 2*float64(n), 8*float64(n), 8*n, func() { s += attention.Dot(x, y) })
		kernel("Axpy", 2*float64(n), 8*float64(n), 8*n, func() { attention.Axpy(1e-7, x, dst) })
		kernel("Exp", 0, 4*float64(n), 8*n, func() { attention.Exp(dst, x) })
		kernel("Softmax", 0, 4*float64(n), 8*n, func() { attention.Softmax(dst, x) })
	}

	// One decoder step: K and V streamed once each.
	for _, d := range []int{64, 128} {
		for _, T := range []int{128, 1024, 8192} {
			keys, _ := attention.NewMatrix(T, d, fill(T*d))
			values, _ := attention.NewMatrix(T, d, fill(T*d))
			query := fill(d)
			cs = append(cs, benchCase{
				group: "attend", name: "Attend", shape: fmt.Sprintf("scaled-dot T=%d d=%d", T, d),
				t: T, d: d, workers: 1, flops: 4 * float64(T*d), bytes: 8 * float64(T*d), ws: 8 * T * d,
				setup: func() (func() error, func(), error) {
					mem, err := attention.NewMemory(attention.ScoreScaledDot(), keys, values)
					if err != nil {
						return nil, nil, err
					}
					ctx, ws := make([]float32, d), new(attention.Workspace)
					return func() error { return mem.Attend(ctx, nil, query, ws) }, nil, nil
				},
			})
		}
	}

	// Batched prefill: [1][8][512][64], 1 and all workers.
	const heads, T, d = 8, 512, 64
	q, k, v := fill(heads*T*d), fill(heads*T*d), fill(heads*T*d)
	out := make([]float32, heads*T*d)
	workers := []int{1}
	if cfg.workers > 1 {
		workers = append(workers, cfg.workers)
	}
	for _, causal := range []bool{false, true} {
		pairs := T * T
		if causal {
			pairs = T * (T + 1) / 2
		}
		for _, w := range workers {
			tensorBytes := 4 * heads * T * d * 4 // Q, K, V and the output; Q, K and V are read
			kind := "full"
			if causal {
				kind = "causal"
			}
			cs = append(cs, benchCase{
				group: "batched", name: "Batched", shape: fmt.Sprintf("%s %d×%d×%d×%d workers=%d", kind, heads, T, T, d, w),
				t: T, d: d, heads: heads, causal: causal, workers: w,
				flops: 4 * float64(heads*pairs*d), bytes: float64(tensorBytes) * 3 / 4, ws: tensorBytes / w,
				setup: func() (func() error, func(), error) {
					tq, _ := attention.NewTensor(1, heads, T, d, q)
					tk, _ := attention.NewTensor(1, heads, T, d, k)
					tv, _ := attention.NewTensor(1, heads, T, d, v)
					to, _ := attention.NewTensor(1, heads, T, d, out)
					e := attention.NewBatched(w)
					opt := &attention.BatchOptions{Causal: causal}
					return func() error { return e.Attend(attention.BatchOutputs{Out: to}, tq, tk, tv, opt) }, e.Close, nil
				},
			})
		}
	}
	cs = append(cs, decodeCases(workers, fill)...)
	cs = append(cs, cacheCases(fill)...)
	return append(cs, loopCases(workers, cfg.quick, fill)...)
}

// benchGroups are the groups of benchCases, in their order, as --group
// names them.
var benchGroups = []string{"kernel", "attend", "batched", "decode", "loop"}

// cacheCases are the grouped-query decode step of decodeCases (gqa-4k, one
// worker) over a KVCache of each element type, by AttendCache: a 16-bit
// cache holds half the bytes. The figure is GB/s of the cache's bytes as
// stored, against a read of buffers of that size made for the case (the
// cache's own rows are not visible from outside the package).
func cacheCases(fill func(int) []float32) []benchCase {
	const d, heads, kvHeads, Tk = 128, 32, 8, 4096
	var cs []benchCase
	for _, typ := range []attention.KVType{attention.F32, attention.F16, attention.BF16} {
		kvBytes := 2 * typ.Size() * kvHeads * Tk * d
		var reads [][][]float32
		cs = append(cs, benchCase{
			group: "decode", name: "AttendCache",
			shape: fmt.Sprintf("decode gqa-4k %v cache %d/%d×1×%d×%d workers=1", typ, heads, kvHeads, Tk, d),
			t:     Tk, d: d, heads: heads, workers: 1,
			flops: 4 * float64(heads*Tk*d), bytes: float64(kvBytes), ws: kvBytes, ownRead: true,
			reads: func() [][][]float32 {
				if reads == nil {
					reads = [][][]float32{{fill(kvBytes / 8), fill(kvBytes / 8)}}
				}
				return reads
			},
			setup: func() (func() error, func(), error) {
				c, err := attention.NewKVCache(1, kvHeads, Tk, d, d, typ)
				if err != nil {
					return nil, nil, err
				}
				const chunk = 256
				for j := 0; j < Tk; j += chunk {
					if err := c.Append(0, fill(kvHeads*chunk*d), fill(kvHeads*chunk*d), chunk); err != nil {
						return nil, nil, err
					}
				}
				tq, err := attention.NewTensor(1, heads, 1, d, fill(heads*d))
				if err != nil {
					return nil, nil, err
				}
				to, _ := attention.NewTensor(1, heads, 1, d, make([]float32, heads*d))
				e := attention.NewBatched(1)
				return func() error { return e.AttendCache(attention.BatchOutputs{Out: to}, tq, c, nil) }, e.Close, nil
			},
		})
	}
	return cs
}

// decodeCases are a language model's decode steps on Batched, d = 128:
// a query row per head (four for a speculative verify, causal, which
// aligns them after the cache) against a KV cache of fewer heads
// (grouped-query, multi-query). They read the whole cache for about one
// FLOP per byte, so the figure is GB/s: the bytes of K and V, each
// key/value head once, per second. The limit is a read measured at the
// case's own working set (ownRead), since the calibration's L3 working set
// (a quarter of the cache) is far from a 32 MiB cache that fills it, and a
// read of other buffers of that size would meet them elsewhere in the
// caches: the limit is a read of the case's own K and V, split between its
// threads as its workers split them. The tensors are made on first use,
// once for every implementation, so that listing the cases costs nothing.
func decodeCases(workers []int, fill func(int) []float32) []benchCase {
	const d = 128
	var cs []benchCase
	caches := map[[2]int][2][]float32{} // K and V data by (heads, keys)
	kvOf := func(kvHeads, Tk int) [2][]float32 {
		key := [2]int{kvHeads, Tk}
		kv, ok := caches[key]
		if !ok {
			kv = [2][]float32{fill(kvHeads * Tk * d), fill(kvHeads * Tk * d)}
			caches[key] = kv
		}
		return kv
	}
	for _, s := range []struct {
		name                   string
		heads, kvHeads, Tq, Tk int
		causal                 bool
		workers                []int
	}{
		{"gqa-4k", 32, 8, 1, 4096, false, workers[:1]},
		{"mqa-32k", 8, 1, 1, 32768, false, workers},
		{"verify-4k", 32, 8, 4, 4096, true, workers[:1]},
		{"gqa-512", 32, 8, 1, 512, false, workers[:1]},
	} {
		pairs := 0 // (query, key) pairs attended per head
		for i := range s.Tq {
			if s.causal {
				pairs += min(s.Tk, i+s.Tk-s.Tq+1)
			} else {
				pairs += s.Tk
			}
		}
		kvBytes := 2 * 4 * s.kvHeads * s.Tk * d
		for _, w := range s.workers {
			cs = append(cs, benchCase{
				group: "decode", name: "Batched",
				shape: fmt.Sprintf("decode %s %d/%d×%d×%d×%d workers=%d", s.name, s.heads, s.kvHeads, s.Tq, s.Tk, d, w),
				t:     s.Tk, d: d, heads: s.heads, causal: s.causal, workers: w,
				flops: 4 * float64(s.heads*pairs*d), bytes: float64(kvBytes), ws: kvBytes / w, ownRead: true,
				reads: func() [][][]float32 {
					// Thread i reads the i-th of w parts of K, then of V.
					sets := make([][][]float32, w)
					for _, x := range kvOf(s.kvHeads, s.Tk) {
						for i := range sets {
							sets[i] = append(sets[i], x[i*len(x)/w:(i+1)*len(x)/w])
						}
					}
					return sets
				},
				setup: func() (func() error, func(), error) {
					kv := kvOf(s.kvHeads, s.Tk)
					tq, err := attention.NewTensor(1, s.heads, s.Tq, d, fill(s.heads*s.Tq*d))
					if err != nil {
						return nil, nil, err
					}
					tk, _ := attention.NewTensor(1, s.kvHeads, s.Tk, d, kv[0])
					tv, _ := attention.NewTensor(1, s.kvHeads, s.Tk, d, kv[1])
					to, _ := attention.NewTensor(1, s.heads, s.Tq, d, make([]float32, s.heads*s.Tq*d))
					e := attention.NewBatched(w)
					opt := &attention.BatchOptions{Causal: s.causal}
					return func() error { return e.Attend(attention.BatchOutputs{Out: to}, tq, tk, tv, opt) }, e.Close, nil
				},
			})
		}
	}
	return cs
}

// bench measures the limits and times every case with every implementation.
func bench(cfg benchConfig, prog *progress) (*benchReport, error) {
	rep := &benchReport{
		Machine: machine(),
		Quick:   cfg.quick,
		Runs:    cfg.runs,
	}
	threads := []int{1}
	if cfg.workers > 1 {
		threads = append(threads, cfg.workers)
	}
	cases := benchCases(cfg)
	if cfg.keep != nil {
		cases = slices.DeleteFunc(cases, func(c benchCase) bool { return !cfg.keep(c) })
	}
	impls := attention.Implementations()

	// The machine's widest kernels, then those of each implementation's
	// width, each reading at every case's working set.
	machineK := calib.Widest()
	sets := []*calib.Kernels{machineK}
	for _, name := range impls {
		if k := widthKernels(name); !slices.Contains(sets, k) {
			sets = append(sets, k)
		}
	}
	copt := calib.Options{Runs: max(cfg.runs, 5), RunTime: cfg.runTime / 2}
	if cfg.quick {
		copt.DRAM = 64 << 20
	}
	for _, k := range sets {
		for _, t := range threads {
			prog.step(fmt.Sprintf("measuring the machine's limits with the %s kernels on %d thread(s)", k.Name(), t))
			copt.Threads, copt.Sizes = t, readSizes(cases, t)
			rep.Limits = append(rep.Limits, limitsJSON(k, k.Measure(copt)))
		}
	}

	runs := newLimitRuns(rep)
	total := len(cases) * len(impls)
	type timed struct {
		ci     int
		impl   string
		med    time.Duration
		runs   int
		paired float64
		fma    bool // the kind of bound the runs were paired with
	}
	var done []timed
	defer impl.Reset()
	for ci, c := range cases {
		for ii, name := range impls {
			prog.count(ci*len(impls)+ii+1, total, fmt.Sprintf("%s %s (%s)", c.name, c.shape, name))
			if !impl.Select(name) {
				return nil, fmt.Errorf("implementation %q is not available", name)
			}
			wk := widthKernels(name)
			rf := roofline(rep, c, wk.Name())
			var key probeKey
			if c.ownRead {
				// A read of the very buffers the case reads, so that the
				// limit, the paired probe and the case all meet them in
				// the same caches; measured first as Measure measures a
				// level, the best of the runs, with the machine's kernels
				// too.
				key = runs.own(ci, c, wk, copt)
				runs.own(ci, c, machineK, copt)
				if rf = rf.withRead(c, runs.best[key]); rf.fma {
					key = runs.key(rf, c.workers) // paired with the FMA probe
				}
			} else {
				key = runs.key(rf, c.workers)
			}
			med, n, paired, err := timeCase(c, cfg, rf, func(d time.Duration) float64 { return runs.rate(key, d) })
			if err != nil {
				return nil, fmt.Errorf("%s %s (%s): %w", c.name, c.shape, name, err)
			}
			done = append(done, timed{ci, name, med, n, paired, rf.fma})
		}
	}
	// The limits are the best of every run of their kernels, the
	// calibration's and those paired with the cases: on a shared machine a
	// calibration run can meet a load the cases escape, and a figure must
	// not pass a limit measured too low.
	runs.raise(rep)
	for _, t := range done {
		c, wk := cases[t.ci], widthKernels(t.impl)
		rf, mf := roofline(rep, c, wk.Name()), roofline(rep, c, machineK.Name())
		if c.ownRead {
			rf = rf.withReadAs(c, runs.best[runs.ownKey(t.ci, c, wk)], t.fma)
			mf = mf.withRead(c, runs.best[runs.ownKey(t.ci, c, machineK)])
		}
		r := newResult(c, t.impl, rf, mf, t.med, t.runs)
		r.PairedFraction = t.paired
		rep.Results = append(rep.Results, r)
	}
	impl.Reset()
	setSpeedups(rep.Results) // now that every implementation has run
	return rep, nil
}

// setSpeedups sets each result's speedup over the generic implementation
// and, for a case on several workers, over the same case on one: the
// result of the same name and implementation whose shape is the same but
// for workers=1 (the loop cases at the same gap).
func setSpeedups(results []resultJSON) {
	for i := range results {
		r := &results[i]
		one := strings.Replace(r.Shape, fmt.Sprintf("workers=%d", r.Workers), "workers=1", 1)
		for _, g := range results {
			if g.Impl == impl.Generic && g.Name == r.Name && g.Shape == r.Shape {
				r.SpeedupVsGeneric = g.MedianNs / r.MedianNs
			}
			if r.Workers > 1 && g.Workers == 1 && g.Impl == r.Impl && g.Name == r.Name && g.Shape == one {
				r.SpeedupVsOneWorker = g.MedianNs / r.MedianNs
			}
		}
	}
}

// widthKernels returns the calibration kernels of an implementation's
// register width: those of the same name (avx512, avx2, neon, generic),
// else the machine's widest, the stricter limit.
func widthKernels(impl string) *calib.Kernels {
	if k, ok := calib.Lookup(impl); ok {
		return k
	}
	return calib.Widest()
}

// readSizes returns the working sets per thread of the cases that run on
// threads threads and are set against the calibration's reads, so that
// each is measured at its own size.
func readSizes(cases []benchCase, threads int) []int {
	var sizes []int
	for _, c := range cases {
		if c.workers == threads && !c.ownRead && !slices.Contains(sizes, c.ws) {
			sizes = append(sizes, c.ws)
		}
	}
	return sizes
}

// timeCase returns the median time of one operation, the number of runs
// it is the median of, and the median over the runs of the operation's
// fraction of its limit re-measured by a probe run right after that run
// (see roofline). The number of operations per run is first doubled until
// a run lasts cfg.runTime (its gaps included). An operation that alone
// takes longer than all the runs together should (4·runs·runTime: generic
// batched attention in --quick mode, or anything on a slow or emulated
// CPU) is timed once, by the call that warms the caches (after its gap,
// if it has one), and paired with one probe run.
func timeCase(c benchCase, cfg benchConfig, rf bound, probe func(time.Duration) float64) (time.Duration, int, float64, error) {
	op, closeFn, err := c.setup()
	if err != nil {
		return 0, 0, 0, err
	}
	if closeFn != nil {
		defer closeFn()
	}
	probeTime := cfg.runTime / 2
	if c.gap != nil {
		c.gap() // before the first call too, which may be the one timed
	}
	start := time.Now()
	if err := op(); err != nil { // warm the caches, check the shapes
		return 0, 0, 0, err
	}
	if first := time.Since(start); first > 4*time.Duration(cfg.runs)*cfg.runTime {
		return first, 1, rf.fraction(c, first, probe(probeTime)), nil
	}
	k := 1
	for {
		_, d, err := timeRun(c, op, k)
		if err != nil {
			return 0, 0, 0, err
		}
		if d >= cfg.runTime {
			break
		}
		next := int(float64(k) * 1.2 * float64(cfg.runTime) / float64(max(d, time.Microsecond)))
		k = min(max(next, 2*k), 100*k)
	}
	per := make([]time.Duration, cfg.runs)
	fr := make([]float64, cfg.runs)
	for i := range per {
		if per[i], _, err = timeRun(c, op, k); err != nil {
			return 0, 0, 0, err
		}
		fr[i] = rf.fraction(c, per[i], probe(probeTime))
	}
	slices.Sort(per)
	slices.Sort(fr)
	return per[len(per)/2], len(per), fr[len(fr)/2], nil
}

// timeRun runs op k times and returns the time per operation and the
// run's length. Without a gap the time per operation is the run's mean;
// with one (c.gap), the gap runs before each call, outside the timing,
// and the time per operation is the median of the calls, each timed
// alone, while the run's length counts the gaps too.
func timeRun(c benchCase, op func() error, k int) (per, run time.Duration, err error) {
	start := time.Now()
	if c.gap == nil {
		for range k {
			if err := op(); err != nil {
				return 0, 0, err
			}
		}
		run = time.Since(start)
		return run / time.Duration(k), run, nil
	}
	calls := make([]time.Duration, k)
	for i := range calls {
		c.gap()
		t0 := time.Now()
		if err := op(); err != nil {
			return 0, 0, err
		}
		calls[i] = time.Since(t0)
	}
	run = time.Since(start)
	slices.Sort(calls)
	return calls[k/2], run, nil
}

// machine describes where the benchmark ran.
func machine() machineJSON {
	return machineJSON{
		CPU:             cpuModel(),
		Cores:           runtime.NumCPU(),
		GOMAXPROCS:      runtime.GOMAXPROCS(0),
		GOOS:            runtime.GOOS,
		GOARCH:          runtime.GOARCH,
		GoVersion:       runtime.Version(),
		Implementations: attention.Implementations(),
		CalibKernels:    calib.Path(),
	}
}

// cpuModel reads the CPU's name from /proc/cpuinfo where there is one.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return "unknown"
}
