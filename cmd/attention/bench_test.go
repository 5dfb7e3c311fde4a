package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/calib"
)

// jsonKeys lists the JSON names of a struct's fields.
func jsonKeys(v any) []string {
	t := reflect.TypeOf(v)
	var keys []string
	for i := range t.NumField() {
		keys = append(keys, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return keys
}

func hasKeys(t *testing.T, what string, obj map[string]any, keys []string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			t.Errorf("%s lacks %q", what, k)
		}
	}
}

// TestBenchQuickJSON runs `attention bench --quick --json --svg FILE` and
// checks the JSON: every field present, limits above 0, each figure
// consistent with its time and its limit. In -short mode (the race run)
// it times a few cases through the same code.
func TestBenchQuickJSON(t *testing.T) {
	svgPath := filepath.Join(t.TempDir(), "bench.svg")
	var stdout, stderr bytes.Buffer
	if testing.Short() {
		cfg := benchConfig{quick: true, runs: 1, runTime: 100e3, workers: 2,
			keep: func(c benchCase) bool {
				return c.group == "attend" || (c.name == "Dot" && c.n < 4096) || (c.group == "decode" && c.t == 512) ||
					(c.group == "loop" && c.t == 1024)
			}}
		rep, err := bench(cfg, newProgress(&stderr))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.NewEncoder(&stdout).Encode(rep); err != nil {
			t.Fatal(err)
		}
		var svg bytes.Buffer
		if err := writeBenchSVG(&svg, rep); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(svgPath, svg.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if code := run([]string{"bench", "--quick", "--json", "--svg", svgPath}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench --quick = %d, stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "measuring the machine's limits") || !strings.Contains(stderr.String(), "[1/") {
		t.Errorf("no progress on stderr: %q", stderr.String())
	}

	var rep map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	hasKeys(t, "report", rep, jsonKeys(benchReport{}))
	machine, _ := rep["machine"].(map[string]any)
	hasKeys(t, "machine", machine, jsonKeys(machineJSON{}))

	limits, _ := rep["limits"].([]any)
	if len(limits) == 0 {
		t.Fatal("no limits")
	}
	kernels := map[string]bool{}
	for _, l := range limits {
		lm, _ := l.(map[string]any)
		hasKeys(t, "limits", lm, jsonKeys(limitsSet{}))
		kernels[lm["kernels"].(string)] = true
		if reads, _ := lm["reads"].([]any); len(reads) < 4 {
			t.Errorf("%d reads, want at least the four levels'", len(reads))
		}
		if !(lm["peak_gflops"].(float64) > 0) {
			t.Errorf("peak_gflops = %v, want > 0", lm["peak_gflops"])
		}
		levels, _ := lm["levels"].([]any)
		if len(levels) != 4 {
			t.Errorf("%d levels, want L1, L2, L3, DRAM", len(levels))
		}
		for _, lv := range levels {
			m, _ := lv.(map[string]any)
			hasKeys(t, "level", m, jsonKeys(levelJSON{}))
			if !(m["gbps"].(float64) > 0) || !(m["working_set_bytes"].(float64) > 0) {
				t.Errorf("level %v: bandwidth and working set must be > 0", m)
			}
		}
	}

	impls := attention.Implementations()
	for _, name := range append(slices.Clone(impls), calib.Widest().Name()) {
		if !kernels[widthKernels(name).Name()] {
			t.Errorf("no limits measured with the %s kernels", widthKernels(name).Name())
		}
	}
	results, _ := rep["results"].([]any)
	want := len(benchCases(benchConfig{quick: true, workers: runtime.GOMAXPROCS(0)})) * len(impls)
	if testing.Short() {
		want = 10 * len(impls) // the loop's 1024 keys at 0.3 ms, on 1 and 2 workers
	}
	if len(results) != want {
		t.Errorf("%d results, want %d", len(results), want)
	}
	seen := map[string]bool{}
	for _, r := range results {
		m, _ := r.(map[string]any)
		hasKeys(t, "result", m, jsonKeys(resultJSON{}))
		var res resultJSON
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		seen[res.Impl] = true
		what := res.Name + " " + res.Shape + " " + res.Impl
		if !(res.MedianNs > 0) || !(res.GBps > 0) || !(res.Limit > 0) || !(res.Fraction > 0) || !(res.PairedFraction > 0) || !(res.SpeedupVsGeneric > 0) {
			t.Errorf("%s: time, GB/s, limit, fractions and speedup must be > 0: %+v", what, res)
		}
		if math.IsInf(res.PairedFraction, 0) {
			t.Errorf("%s: paired fraction %v", what, res.PairedFraction)
		}
		measure := res.GBps
		if res.LimitUnit == "GFLOP/s" {
			measure = res.GFLOPS
		}
		if math.Abs(res.Fraction-measure/res.Limit) > 1e-9*res.Fraction {
			t.Errorf("%s: fraction %v, want %v / %v", what, res.Fraction, measure, res.Limit)
		}
		measure = res.GBps
		if res.MachineLimitUnit == "GFLOP/s" {
			measure = res.GFLOPS
		}
		if !(res.MachineLimit > 0) || math.Abs(res.MachineFraction-measure/res.MachineLimit) > 1e-9*res.MachineFraction {
			t.Errorf("%s: machine fraction %v, want %v / %v", what, res.MachineFraction, measure, res.MachineLimit)
		}
		// Each implementation against its own width's kernels and the
		// widest; a read limit measured at the case's own working set.
		if want := widthKernels(res.Impl).Name(); res.LimitKernels != want || res.MachineKernels != calib.Widest().Name() {
			t.Errorf("%s: limits of the %s and %s kernels, want %s and %s", what, res.LimitKernels, res.MachineKernels, want, calib.Widest().Name())
		}
		if res.Bound != "FMA peak" && res.ReadBytes != res.WorkingSetBytes {
			t.Errorf("%s: read limit measured at %d bytes, not at its working set of %d", what, res.ReadBytes, res.WorkingSetBytes)
		}
		if res.Impl == "generic" && res.SpeedupVsGeneric != 1 {
			t.Errorf("%s: speedup over itself %v", what, res.SpeedupVsGeneric)
		}
		// Every case on several workers has a twin on one.
		if (res.Workers > 1) != (res.SpeedupVsOneWorker > 0) {
			t.Errorf("%s: speedup over one worker %v", what, res.SpeedupVsOneWorker)
		}
		if res.Level == "" || res.Bound == "" || res.Runs < 1 {
			t.Errorf("%s: level %q, bound %q, runs %d", what, res.Level, res.Bound, res.Runs)
		}
	}
	for _, name := range impls {
		if !seen[name] {
			t.Errorf("no results for %s", name)
		}
	}

	// The plot parses as XML and draws a line per implementation and the
	// limit in each panel (d = 64 and 128).
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	counts := xmlCounts(t, svg)
	if counts["svg"] != 1 || counts["g.panel"] != 2 || counts["polyline.limit"] != 2 || counts["polyline.impl"] != 2*len(impls) {
		t.Errorf("plot elements: %v", counts)
	}
}

// xmlCounts parses an XML document, failing on any error, and counts its
// elements by name and by name.class.
func xmlCounts(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	counts := map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
			for _, a := range se.Attr {
				if a.Name.Local == "class" {
					counts[se.Name.Local+"."+a.Value]++
				}
			}
		}
	}
	return counts
}

func TestBenchTable(t *testing.T) {
	levels := func(l1, l2, l3, dram float64) []levelJSON {
		return []levelJSON{{"L1", 32 << 10, 16 << 10, l1}, {"L2", 512 << 10, 256 << 10, l2}, {"L3", 32 << 20, 8 << 20, l3}, {"DRAM", 0, 64 << 20, dram}}
	}
	reads := func(gbps ...float64) []readJSON {
		var rs []readJSON
		for i, b := range []int{16 << 10, 256 << 10, 512 << 10, 8 << 20, 64 << 20} {
			rs = append(rs, readJSON{b, gbps[i]})
		}
		return rs
	}
	rep := &benchReport{
		Machine: machineJSON{CPU: "Test CPU", Cores: 2, Implementations: []string{"fast", "generic"}, CalibKernels: "wide"},
		Runs:    3,
		Limits: []limitsSet{
			{Kernels: "wide", Bits: 512, Threads: 1, PeakGFLOPS: 200, Levels: levels(400, 200, 100, 20), Reads: reads(400, 200, 200, 100, 20)},
			{Kernels: "fast", Bits: 256, Threads: 1, PeakGFLOPS: 100, Levels: levels(200, 100, 50, 10), Reads: reads(200, 100, 100, 50, 10)},
		},
	}
	c := benchCase{name: "Attend", shape: "T=1024 d=64", workers: 1, flops: 4 * 1024 * 64, bytes: 8 * 1024 * 64, ws: 8 * 1024 * 64}
	rf, mf := roofline(rep, c, "fast"), roofline(rep, c, "wide")
	rep.Results = append(rep.Results, newResult(c, "fast", rf, mf, 5000, 3), newResult(c, "generic", rf, mf, 50000, 3))
	rep.Results[0].SpeedupVsGeneric, rep.Results[1].SpeedupVsGeneric = 10, 1
	rep.Results[0].PairedFraction, rep.Results[1].PairedFraction = 1.31, 0.131
	// A probe run of the 512 KiB read at 80 GB/s bounds the pair at 40 GFLOP/s.
	if got := rf.fraction(c, 5000, 80); math.Abs(got-52.4288/40) > 1e-9 {
		t.Errorf("paired fraction against an 80 GB/s probe = %v, want %v", got, 52.4288/40)
	}
	// A case bound by the FMA peak is paired with the FMA probe's rate.
	big := benchCase{name: "Batched", shape: "s", workers: 1, flops: 1e9, bytes: 1e6, ws: 1 << 20}
	if rb := roofline(rep, big, "fast"); !rb.fma || rb.limit != 100 || math.Abs(rb.fraction(big, 20*time.Millisecond, 80)-50.0/80) > 1e-12 {
		t.Errorf("FMA-bound roofline %+v, paired fraction %v", rb, rb.fraction(big, 20*time.Millisecond, 80))
	}
	if rb := roofline(rep, big, "wide"); !rb.fma || rb.limit != 200 {
		t.Errorf("FMA-bound roofline of the wide kernels %+v", rb)
	}
	// Without FLOPs the figure and the probe are both GB/s.
	exp := benchCase{name: "Exp", shape: "n", workers: 1, bytes: 1e6, ws: 16 << 10}
	if re := roofline(rep, exp, "fast"); re.fma || re.unit != "GB/s" || re.limit != 200 || math.Abs(re.fraction(exp, 10*time.Microsecond, 125)-0.8) > 1e-12 {
		t.Errorf("byte-bound roofline %+v", re)
	}
	// A decode step is set against a read at its own working set: 16 MiB
	// per thread, which lives in L3 but is twice the L3 level's working set.
	dec := benchCase{name: "Batched", shape: "decode", workers: 2, flops: 1e6, bytes: 32 << 20, ws: 16 << 20, ownRead: true}
	if rd := roofline(rep, dec, "fast").withRead(dec, 40); rd.fma || rd.unit != "GB/s" || rd.name != "16 MiB read" || rd.level.Name != "L3" ||
		rd.read.Bytes != 16<<20 || rd.limit != 40 || math.Abs(rd.fraction(dec, time.Millisecond, 50)-(32<<20)/1e6/50) > 1e-12 {
		t.Errorf("decode roofline %+v", rd)
	}
	if r := newResult(dec, "fast", roofline(rep, dec, "fast").withRead(dec, 40), roofline(rep, dec, "wide").withRead(dec, 50), time.Millisecond, 1); r.Bound != "16 MiB read" || r.Level != "L3" ||
		r.LimitUnit != "GB/s" || math.Abs(r.Fraction-(32<<20)/1e6/40) > 1e-12 || math.Abs(r.MachineFraction-(32<<20)/1e6/50) > 1e-12 ||
		math.Abs(r.GBps-(32<<20)/1e6) > 1e-9 || r.ReadBytes != 16<<20 {
		t.Errorf("decode result %+v", r)
	}
	// A decode step of 4 FLOPs a byte whose own read is 40 GB/s would need
	// 160 GFLOP/s of a peak of 100: the FMA peak bounds it, and its runs
	// are paired with the FMA probe; forced to the read, it is the read.
	fdec := dec
	fdec.flops = 4 * fdec.bytes
	if rd := roofline(rep, fdec, "fast").withRead(fdec, 40); !rd.fma || rd.unit != "GFLOP/s" || rd.name != "FMA peak" || rd.limit != 100 ||
		math.Abs(rd.fraction(fdec, time.Millisecond, 50)-fdec.flops/1e6/50) > 1e-9 {
		t.Errorf("FMA-bound decode roofline %+v", rd)
	}
	if rd := roofline(rep, fdec, "fast").withReadAs(fdec, 40, false); rd.fma || rd.unit != "GB/s" || rd.limit != 40 {
		t.Errorf("decode roofline forced to the read %+v", rd)
	}
	if r := newResult(fdec, "fast", roofline(rep, fdec, "fast").withRead(fdec, 40), roofline(rep, fdec, "wide").withRead(fdec, 60), time.Millisecond, 1); r.Bound != "FMA peak" ||
		r.LimitUnit != "GFLOP/s" || math.Abs(r.Fraction-fdec.flops/1e6/100) > 1e-9 || r.MachineBound != "FMA peak" || math.Abs(r.MachineFraction-fdec.flops/1e6/200) > 1e-9 || r.ReadBytes != 0 {
		t.Errorf("FMA-bound decode result %+v", r)
	}
	// 512 KiB lives in L2, whose level was read at 256 KiB: the limit is
	// the read at 512 KiB, 100 GB/s × 0.5 FLOP/B = 50 GFLOP/s (200 GB/s,
	// 100 GFLOP/s, with the wide kernels); 262144 FLOPs in 5 µs are 52.4
	// GFLOP/s, 105% of it and 52% of the machine's.
	r := rep.Results[0]
	if r.Level != "L2" || r.Bound != "512 KiB read" || r.Limit != 50 || r.MachineLimit != 100 || r.ReadBytes != 512<<10 ||
		r.LimitKernels != "fast" || r.MachineKernels != "wide" || math.Abs(r.GFLOPS-52.4288) > 1e-9 {
		t.Errorf("result %+v", r)
	}
	var out bytes.Buffer
	p := &printer{w: &out}
	writeBenchTable(p, rep)
	for _, want := range []string{
		"machine: Test CPU, 2 cores",
		"                      wide, 1 thread  fast, 1 thread",
		"  FP32 FMA peak        200.0 GFLOP/s   100.0 GFLOP/s",
		"  read 256 KiB (L2)       200.0 GB/s      100.0 GB/s",
		"  read 512 KiB (L2)       200.0 GB/s      100.0 GB/s",
		"limit (its width)          of limit  paired  limit (machine: wide)       of limit  vs generic  vs 1 worker",
		"vs 1 worker: the same case's median on one worker over this one's.",
		"Attend  T=1024 d=64  fast     512 KiB (L2)    5 µs     52.4      104.9  512 KiB read 50.0 GFLOP/s      105%    131%  512 KiB read 100.0 GFLOP/s       52%       10.0×",
		"Attend  T=1024 d=64  generic  512 KiB (L2)   50 µs      5.2       10.5  512 KiB read 50.0 GFLOP/s       10%     13%  512 KiB read 100.0 GFLOP/s        5%        1.0×",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// The read limit of a case is the read at its own working set, not the
// level's: an 8 MiB Dot against an "L3" read of a 65 MiB set (10.8 GB/s)
// reached 233% of it. A set between two measured sizes takes the smaller,
// faster one, a bound it cannot pass.
func TestBenchReadLimitAtWorkingSet(t *testing.T) {
	rep := &benchReport{Limits: []limitsSet{{Kernels: "k", Threads: 1, PeakGFLOPS: 100,
		Levels: []levelJSON{{"L1", 32 << 10, 16 << 10, 200}, {"L2", 1 << 20, 512 << 10, 100}, {"L3", 260 << 20, 65 << 20, 10.8}, {"DRAM", 0, 260 << 20, 9}},
		Reads:  []readJSON{{16 << 10, 200}, {512 << 10, 100}, {8 << 20, 25.2}, {65 << 20, 10.8}, {260 << 20, 9}}}}}
	dot := benchCase{name: "Dot", workers: 1, flops: 2 << 20, bytes: 8 << 20, ws: 8 << 20}
	if b := roofline(rep, dot, "k"); b.name != "8 MiB read" || b.level.Name != "L3" || b.read.GBps != 25.2 || math.Abs(b.limit-25.2/4) > 1e-12 {
		t.Errorf("8 MiB Dot: %+v, want the 8 MiB read's 25.2 GB/s", b)
	}
	between := dot
	between.ws = 3 << 20
	if b := roofline(rep, between, "k"); b.read.Bytes != 512<<10 || b.name != "512 KiB read" {
		t.Errorf("3 MiB Dot: bound by the read at %d bytes, want 512 KiB", b.read.Bytes)
	}
	// bench measures every case's own working set, per thread count (the
	// decode steps read their own buffers instead).
	cases := benchCases(benchConfig{workers: 2})
	for _, threads := range []int{1, 2} {
		sizes := readSizes(cases, threads)
		for _, c := range cases {
			if c.workers == threads && !c.ownRead && !slices.Contains(sizes, c.ws) {
				t.Errorf("%s %s on %d threads: working set %d not measured", c.name, c.shape, threads, c.ws)
			}
		}
	}
	if got := readSizes([]benchCase{{ws: 5, workers: 1, ownRead: true}, {ws: 7, workers: 2}}, 1); len(got) != 0 {
		t.Errorf("readSizes measures %v, want nothing: a decode step's own read, a case on 2 threads", got)
	}
}

func TestBenchFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"bench", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("bench --help = %d", code)
	}
	for _, f := range []string{"-json", "-svg", "-quick", "-runs", "-group", strings.Join(benchGroups, ", ")} {
		if !strings.Contains(stdout.String(), f) {
			t.Errorf("bench --help lacks %s:\n%s", f, stdout.String())
		}
	}
	// An unwritable plot fails before any measuring.
	stderr.Reset()
	if code := run([]string{"bench", "--svg", filepath.Join(t.TempDir(), "no", "such", "dir.svg")}, io.Discard, &stderr); code != 1 || strings.Contains(stderr.String(), "measuring") {
		t.Errorf("bench --svg into a missing directory: %d, %q", code, stderr.String())
	}
	// A group that does not exist, or a plot of a group left out, fails
	// before any measuring too.
	noPlot := filepath.Join(t.TempDir(), "loop.svg")
	for _, args := range [][]string{{"bench", "--frob"}, {"bench", "--runs", "-1"}, {"bench", "extra"},
		{"bench", "--group", "loop,frob"}, {"bench", "--group", "loop", "--svg", noPlot}} {
		stdout.Reset()
		stderr.Reset()
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
		if !strings.Contains(stderr.String(), "usage: attention bench") {
			t.Errorf("run(%q) stderr lacks the bench usage: %q", args, stderr.String())
		}
	}
	if _, err := os.Stat(noPlot); err == nil {
		t.Errorf("--group loop --svg %s created the plot", noPlot)
	}
}

// --group runs the cases of the groups it names, each group alone too.
func TestBenchGroupFlag(t *testing.T) {
	all := benchCases(benchConfig{workers: 2})
	var groups []string
	for _, c := range all {
		if !slices.Contains(groups, c.group) {
			groups = append(groups, c.group)
		}
	}
	if !slices.Equal(groups, benchGroups) {
		t.Errorf("the cases' groups %q, --group lists %q", groups, benchGroups)
	}
	for _, arg := range append(slices.Clone(benchGroups), "loop,decode") {
		fs := newFlagSet("bench", "", "")
		svg := ""
		cfg, err := benchFlags(fs, []string{"--group", arg}, io.Discard, &svg)
		if err != nil || cfg.keep == nil {
			t.Fatalf("--group %s: %v", arg, err)
		}
		n := 0
		for _, c := range all {
			if cfg.keep(c) != slices.Contains(strings.Split(arg, ","), c.group) {
				t.Errorf("--group %s: keep(%s %s) = %v", arg, c.group, c.shape, cfg.keep(c))
			}
			if cfg.keep(c) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("--group %s keeps no case", arg)
		}
	}
	fs := newFlagSet("bench", "", "")
	if cfg, err := benchFlags(fs, nil, io.Discard, new(string)); err != nil || cfg.keep != nil {
		t.Errorf("no --group: %v, keep set %v", err, cfg.keep != nil)
	}
}

// The loop cases: the bf16 step of 1024 and 4096 keys at each gap on 1
// and all workers, listed without building anything, their limit a read
// of the cache's bytes split between the workers.
func TestBenchLoopCases(t *testing.T) {
	floats := 0
	fill := func(n int) []float32 { floats += n; return make([]float32, n) }
	cs := loopCases([]int{1, 2}, false, fill)
	if len(cs) != 2*4*2 || floats != 0 {
		t.Fatalf("%d loop cases, %d floats filled to list them; want 16, none", len(cs), floats)
	}
	if q := loopCases([]int{1, 2}, true, fill); len(q) != 4 || !strings.Contains(q[0].shape, " gap=300µs ") {
		t.Errorf("--quick: %d loop cases, the first %q; want 4, all at 0.3 ms", len(q), q[0].shape)
	}
	want := []string{
		"decode loop gqa-1k bf16 cache 32/8×1×1024×128 gap=0s workers=1",
		"decode loop gqa-1k bf16 cache 32/8×1×1024×128 gap=0s workers=2",
		"decode loop gqa-1k bf16 cache 32/8×1×1024×128 gap=300µs workers=1",
		"decode loop gqa-4k bf16 cache 32/8×1×4096×128 gap=2ms workers=2",
	}
	for _, c := range cs {
		kvBytes := 2 * 2 * 8 * c.t * 128
		if c.group != "loop" || c.name != "AttendCache" || c.gap == nil || !c.ownRead || c.bytes != float64(kvBytes) ||
			c.ws != kvBytes/c.workers || c.flops != 4*32*float64(c.t)*128 {
			t.Errorf("%s: %+v", c.shape, c)
		}
		want = slices.DeleteFunc(want, func(s string) bool { return s == c.shape })
		sets, n := c.reads(), 0
		for _, set := range sets {
			for _, x := range set {
				n += 4 * len(x)
			}
		}
		if len(sets) != c.workers || n != kvBytes {
			t.Errorf("%s: the limit reads %d bytes on %d threads", c.shape, n, len(sets))
		}
	}
	if len(want) > 0 {
		t.Errorf("no cases %q", want)
	}
	op, closeFn, err := cs[len(cs)-1].setup()
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if floats < loopRows*loopCols {
		t.Errorf("setup filled %d floats, not the layer's %d", floats, loopRows*loopCols)
	}
	start := time.Now()
	cs[len(cs)-1].gap()
	if d := time.Since(start); d < 2*time.Millisecond {
		t.Errorf("a gap of 2 ms took %v", d)
	}
	if err := op(); err != nil {
		t.Fatal(err)
	}
}

// timeCase times a case with a gap call by call, the gap left out, and
// counts the gaps in a run's length.
func TestBenchTimeGap(t *testing.T) {
	spin := func(d time.Duration) {
		for t0 := time.Now(); time.Since(t0) < d; {
		}
	}
	gaps, calls := 0, 0
	c := benchCase{workers: 1, bytes: 1e6, ownRead: true,
		gap: func() { gaps++; spin(time.Millisecond) },
		setup: func() (func() error, func(), error) {
			return func() error { calls++; spin(20 * time.Microsecond); return nil }, nil, nil
		}}
	rf := bound{limit: 1, unit: "GB/s"}
	med, runs, paired, err := timeCase(c, benchConfig{runs: 3, runTime: 5 * time.Millisecond}, rf, func(time.Duration) float64 { return 1 })
	if err != nil {
		t.Fatal(err)
	}
	if runs != 3 || med < 20*time.Microsecond || med > 500*time.Microsecond || !(paired > 0) {
		t.Errorf("median %v of %d runs, paired %v; want about 20 µs of 3", med, runs, paired)
	}
	// Timed alone, 5 ms runs of 20 µs calls would be hundreds of calls.
	if gaps != calls || calls > 100 {
		t.Errorf("%d gaps, %d calls; want one before each call, a run of about 5 ms counting them", gaps, calls)
	}
}

// A case on several workers is set against its twin on one: the same
// name, implementation and shape but for workers=1.
func TestBenchSpeedups(t *testing.T) {
	res := func(impl, shape string, workers int, ns float64) resultJSON {
		return resultJSON{Name: "AttendCache", Impl: impl, Shape: shape, Workers: workers, MedianNs: ns}
	}
	rs := []resultJSON{
		res("fast", "loop gap=2ms workers=1", 1, 100), res("fast", "loop gap=2ms workers=2", 2, 80),
		res("generic", "loop gap=2ms workers=1", 1, 1000), res("generic", "loop gap=2ms workers=2", 2, 500),
		res("fast", "loop gap=0s workers=2", 2, 50), res("fast", "plain workers=1", 1, 10),
	}
	setSpeedups(rs)
	for i, want := range [][2]float64{{10, 0}, {6.25, 1.25}, {1, 0}, {1, 2}, {0, 0}, {0, 0}} {
		if rs[i].SpeedupVsGeneric != want[0] || rs[i].SpeedupVsOneWorker != want[1] {
			t.Errorf("%s %s: speedups %v over generic, %v over one worker; want %v", rs[i].Impl, rs[i].Shape, rs[i].SpeedupVsGeneric, rs[i].SpeedupVsOneWorker, want)
		}
	}
}
