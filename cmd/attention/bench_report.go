package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/glancelab/attention/internal/calib"
)

// benchReport is what `attention bench --json` prints. Every field is
// always present (no omitempty): a figure that does not apply is 0.
type benchReport struct {
	Machine machineJSON  `json:"machine"`
	Quick   bool         `json:"quick"`
	Runs    int          `json:"runs"`
	Limits  []limitsSet  `json:"limits"`
	Results []resultJSON `json:"results"`
}

type machineJSON struct {
	CPU             string   `json:"cpu"`
	Cores           int      `json:"cores"`
	GOMAXPROCS      int      `json:"gomaxprocs"`
	GOOS            string   `json:"goos"`
	GOARCH          string   `json:"goarch"`
	GoVersion       string   `json:"go_version"`
	Implementations []string `json:"implementations"`
	CalibKernels    string   `json:"calib_kernels"`
}

// limitsSet holds the limits measured with one set of calibration kernels
// on Threads threads at once.
type limitsSet struct {
	Kernels    string      `json:"kernels"` // avx512, avx2, neon or generic
	Bits       int         `json:"bits"`    // the width of their registers
	Threads    int         `json:"threads"`
	PeakGFLOPS float64     `json:"peak_gflops"`
	Levels     []levelJSON `json:"levels"`
	Reads      []readJSON  `json:"reads"` // every read measured (the levels' and the cases'), smallest first
}

type levelJSON struct {
	Name            string  `json:"name"`
	CapacityBytes   int     `json:"capacity_bytes"`    // 0 for DRAM
	WorkingSetBytes int     `json:"working_set_bytes"` // per thread, as measured
	GBps            float64 `json:"gbps"`
}

type readJSON struct {
	WorkingSetBytes int     `json:"working_set_bytes"` // per thread
	GBps            float64 `json:"gbps"`
}

func limitsJSON(k *calib.Kernels, l calib.Limits) limitsSet {
	s := limitsSet{Kernels: k.Name(), Bits: k.Bits(), Threads: l.Threads, PeakGFLOPS: l.GFLOPS}
	for _, lv := range l.Levels {
		s.Levels = append(s.Levels, levelJSON{Name: lv.Name, CapacityBytes: lv.Capacity, WorkingSetBytes: lv.Bytes, GBps: lv.GBps})
	}
	for _, r := range l.Reads {
		s.Reads = append(s.Reads, readJSON{WorkingSetBytes: r.Bytes, GBps: r.GBps})
	}
	return s
}

// calibLimits turns the JSON form back into the form that places working
// sets and picks their read limits.
func (s limitsSet) calibLimits() calib.Limits {
	l := calib.Limits{Path: s.Kernels, Threads: s.Threads, GFLOPS: s.PeakGFLOPS}
	for _, lv := range s.Levels {
		l.Levels = append(l.Levels, calib.Level{Name: lv.Name, Capacity: lv.CapacityBytes, Bytes: lv.WorkingSetBytes, GBps: lv.GBps})
	}
	for _, r := range s.Reads {
		l.Reads = append(l.Reads, calib.Read{Bytes: r.WorkingSetBytes, GBps: r.GBps})
	}
	return l
}

type resultJSON struct {
	Group           string  `json:"group"` // kernel, attend, batched, decode, loop
	Name            string  `json:"name"`
	Shape           string  `json:"shape"`
	Impl            string  `json:"impl"`
	N               int     `json:"n"`
	T               int     `json:"t"`
	D               int     `json:"d"`
	Heads           int     `json:"heads"`
	Causal          bool    `json:"causal"`
	Workers         int     `json:"workers"`
	WorkingSetBytes int     `json:"working_set_bytes"` // per worker
	Level           string  `json:"level"`             // where the working set lives
	Runs            int     `json:"runs"`
	MedianNs        float64 `json:"median_ns"`
	GFLOPS          float64 `json:"gflops"` // 0 where FLOPs are not counted
	GBps            float64 `json:"gbps"`   // the bytes the operation must read, per second
	// The limit for this working set, measured with the calibration
	// kernels of the implementation's register width (LimitKernels):
	// "FMA peak" or "<working set> read", the read at ReadBytes.
	Bound        string  `json:"bound"`
	Limit        float64 `json:"limit"`
	LimitUnit    string  `json:"limit_unit"` // GFLOP/s or GB/s
	LimitKernels string  `json:"limit_kernels"`
	ReadBytes    int     `json:"read_working_set_bytes"` // per thread; 0 where the FMA peak bounds it
	Fraction     float64 `json:"fraction"`               // of the limit
	// The median over the runs of the figure over the same limit
	// re-measured right after that run: on a shared machine this sets like
	// against like, where Fraction sets a median against a best.
	PairedFraction float64 `json:"paired_fraction"`
	// The same working set's limit with the widest kernels the machine has
	// (MachineKernels): what the core itself can do.
	MachineBound     string  `json:"machine_bound"`
	MachineLimit     float64 `json:"machine_limit"`
	MachineLimitUnit string  `json:"machine_limit_unit"` // GFLOP/s or GB/s: a decode step may be bound by the FMAs of one width and the read of another
	MachineKernels   string  `json:"machine_kernels"`
	MachineFraction  float64 `json:"machine_fraction"`
	SpeedupVsGeneric float64 `json:"speedup_vs_generic"`
	// The same case on one worker (at the same gap, for the loop group)
	// over this one: 0 for a case on one worker or without a one-worker
	// twin.
	SpeedupVsOneWorker float64 `json:"speedup_vs_one_worker"`
}

// bound is the roofline of a case's working set for one set of
// calibration kernels: with FLOPs counted, the attainable rate is the lower
// of the FMA peak and the read bandwidth at the working set times the
// FLOPs per byte; without, that bandwidth. Limits measured with as many
// threads as the case uses apply.
type bound struct {
	name    string  // "FMA peak" or "<working set> read"
	limit   float64 // in unit
	unit    string  // GFLOP/s or GB/s
	kernels string  // the calibration kernels it was measured with
	level   calib.Level
	read    calib.Read // the read it is bound by (at the case's own working set, where measured)
	fma     bool       // the FMA peak bounds it; otherwise the read
	peak    float64    // an ownRead case's FMA peak, for withRead
}

// roofline returns the bound of a case with the limits the named kernels
// measured. The read is the one measured at the case's own working set
// (bench measures every case's), or at the nearest smaller one: never a
// level's larger set, which reads slower and would let a figure pass 100%.
func roofline(rep *benchReport, c benchCase, kernels string) bound {
	lims := rep.Limits[0]
	found := false
	for _, l := range rep.Limits {
		if l.Kernels == kernels && (!found || l.Threads == c.workers) {
			lims, found = l, true
		}
	}
	cl := lims.calibLimits()
	b := bound{kernels: lims.Kernels, level: cl.LevelFor(c.ws)}
	if c.ownRead {
		// The limit is set by withRead, from a read of c.reads().
		b.read = calib.Read{Bytes: c.ws}
		b.name, b.unit, b.peak = size(c.ws)+" read", "GB/s", lims.PeakGFLOPS
		return b
	}
	b.read = cl.ReadLimit(c.ws)
	b.name = size(b.read.Bytes) + " read"
	if c.flops > 0 {
		if memBound := b.read.GBps * c.flops / c.bytes; memBound < lims.PeakGFLOPS {
			b.limit, b.unit = memBound, "GFLOP/s"
			return b
		}
		b.name, b.limit, b.unit, b.fma = "FMA peak", lims.PeakGFLOPS, "GFLOP/s", true
		return b
	}
	b.limit, b.unit = b.read.GBps, "GB/s"
	return b
}

// withRead returns the bound of an ownRead case c with its limit, the
// read bandwidth gbps measured at the case's working set, or the FMA peak
// where that is the lower roofline (ownFMA). A decode step with many
// query rows to a key, on a core whose FMA pipes are narrow for its
// memory (the 8 heads on 1 of mqa-32k do 4 FLOPs a byte, more than a
// first-generation Zen's FMAs keep up with at its DRAM read; measured:
// docs/performance/amd-epyc-zen1.md#decode-steps-bound-by-their-fmas-from-code-comments),
// is bound by its FMAs, and a fraction of the read alone would understate
// it.
func (b bound) withRead(c benchCase, gbps float64) bound {
	return b.withReadAs(c, gbps, b.ownFMA(c, gbps))
}

// ownFMA reports whether the FMA peak, not the read of gbps, bounds the
// ownRead case c.
func (b bound) ownFMA(c benchCase, gbps float64) bool {
	return c.flops > 0 && b.peak > 0 && gbps*c.flops/c.bytes > b.peak
}

// withReadAs is withRead with the kind of bound given: the FMA peak if
// fma, else the read. The bench pairs each run of a case with a probe of
// the bound it chose then, and keeps that kind when the limits are raised.
func (b bound) withReadAs(c benchCase, gbps float64, fma bool) bound {
	b.read.GBps = gbps
	if fma {
		b.name, b.limit, b.unit, b.fma = "FMA peak", b.peak, "GFLOP/s", true
		return b
	}
	b.limit = gbps
	return b
}

// rate is the case's figure (GFLOP/s, or GB/s where FLOPs are not counted)
// at per time per operation.
func (b bound) rate(c benchCase, per time.Duration) float64 {
	if b.unit == "GFLOP/s" {
		return c.flops / per.Seconds() / 1e9
	}
	return c.bytes / per.Seconds() / 1e9
}

// fraction is the case's figure at per time per operation over the bound
// computed from a probe's rate (GFLOP/s or GB/s) instead of the limits.
func (b bound) fraction(c benchCase, per time.Duration, probeRate float64) float64 {
	limit := probeRate
	if !b.fma && b.unit == "GFLOP/s" {
		limit = probeRate * c.flops / c.bytes
	}
	return b.rate(c, per) / limit
}

// newResult sets a measured case against its roofline for the
// implementation's width (b) and for the machine's (m).
func newResult(c benchCase, impl string, b, m bound, med time.Duration, runs int) resultJSON {
	sec := med.Seconds()
	r := resultJSON{
		Group: c.group, Name: c.name, Shape: c.shape, Impl: impl,
		N: c.n, T: c.t, D: c.d, Heads: c.heads, Causal: c.causal, Workers: c.workers,
		WorkingSetBytes: c.ws, Level: b.level.Name, Runs: runs,
		MedianNs: float64(med.Nanoseconds()),
		GBps:     c.bytes / sec / 1e9,
		Bound:    b.name, Limit: b.limit, LimitUnit: b.unit, LimitKernels: b.kernels,
		Fraction:     b.rate(c, med) / b.limit,
		MachineBound: m.name, MachineLimit: m.limit, MachineLimitUnit: m.unit, MachineKernels: m.kernels,
		MachineFraction: m.rate(c, med) / m.limit,
	}
	if !b.fma {
		r.ReadBytes = b.read.Bytes
	}
	if c.flops > 0 {
		r.GFLOPS = c.flops / sec / 1e9
	}
	return r
}

// writeBenchTable prints the machine, its limits and one line per result.
func writeBenchTable(p *printer, rep *benchReport) {
	m := rep.Machine
	p.printf("machine: %s, %d cores, %s/%s, %s\n", m.CPU, m.Cores, m.GOOS, m.GOARCH, m.GoVersion)
	mode := ""
	if rep.Quick {
		mode = ", --quick"
	}
	p.printf("implementations: %s; median of %d runs%s (one for an operation longer than all of them should take)\n\n", strings.Join(m.Implementations, ", "), rep.Runs, mode)
	writeLimitsTable(p, rep)

	machine := ""
	if len(rep.Results) > 0 {
		machine = ": " + rep.Results[0].MachineKernels
	}
	header := []string{"what", "shape", "impl", "working set", "median", "GFLOP/s", "read GB/s",
		"limit (its width)", "of limit", "paired", "limit (machine" + machine + ")", "of limit", "vs generic", "vs 1 worker"}
	rows := [][]string{header}
	limit := func(bound string, limit float64, unit string) string {
		return fmt.Sprintf("%s %.1f %s", bound, limit, unit)
	}
	for _, r := range rep.Results {
		gflops, vsOne := "-", "-"
		if r.GFLOPS > 0 {
			gflops = fmt.Sprintf("%.1f", r.GFLOPS)
		}
		if r.SpeedupVsOneWorker > 0 {
			vsOne = fmt.Sprintf("%.2f×", r.SpeedupVsOneWorker)
		}
		rows = append(rows, []string{
			r.Name, r.Shape, r.Impl,
			fmt.Sprintf("%s (%s)", size(r.WorkingSetBytes), r.Level),
			duration(r.MedianNs), gflops, fmt.Sprintf("%.1f", r.GBps),
			limit(r.Bound, r.Limit, r.LimitUnit),
			fmt.Sprintf("%.0f%%", 100*r.Fraction),
			fmt.Sprintf("%.0f%%", 100*r.PairedFraction),
			limit(r.MachineBound, r.MachineLimit, r.MachineLimitUnit),
			fmt.Sprintf("%.0f%%", 100*r.MachineFraction),
			fmt.Sprintf("%.1f×", r.SpeedupVsGeneric), vsOne,
		})
	}
	writeColumns(p, rows, map[int]bool{4: true, 5: true, 6: true, 8: true, 9: true, 11: true, 12: true, 13: true})
	writeBenchNotes(p)
}

// writeBenchNotes prints how to read the table under it.
func writeBenchNotes(p *printer) {
	p.printf("\nread GB/s: the bytes the operation must read (its inputs, once) per second.\n" +
		"limit: the roofline for the working set, the lower of the FMA peak and the read\n" +
		"bandwidth measured at that working set (\"8 MiB read\") times the FLOPs per byte\n" +
		"read (that bandwidth alone where FLOPs are not counted), for as many threads as\n" +
		"the operation uses; for the decode steps (read GB/s: K and V, each key/value head\n" +
		"once), a read of those same K and V buffers (\"32 MiB read\": the working set per\n" +
		"thread), or the FMA peak where their FLOPs need more than it at that read's\n" +
		"bandwidth (GFLOP/s then). limit (its width): measured with the calibration kernels of the\n" +
		"implementation's register width (avx512: zmm, avx2: ymm, neon, generic: scalar\n" +
		"Go); limit (machine): with the widest this CPU has, so that its fraction says\n" +
		"how much of the core the operation uses.\n" +
		"of limit: the median against the best run of the limit's kernels, in the\n" +
		"calibration or paired with a case (the stricter figure).\n" +
		"paired: the median over the runs of each run against its width's limit re-measured\n" +
		"right after it, so both meet the same load from the rest of the machine.\n" +
		"vs 1 worker: the same case's median on one worker over this one's.\n" +
		"decode loop: each call after gap of other work (matrix-vector rows over 64 MiB\n" +
		"of weights, not timed), the median call; against the plain step's limit (a read\n" +
		"of the cache's bytes, kept in the caches where the gap's weights push them out).\n")
}

// writeLimitsTable prints the limits: a column per set of calibration
// kernels and thread count, a row for the FMA peak and one per working set
// a read was measured at (a dash where a set did not measure it).
func writeLimitsTable(p *printer, rep *benchReport) {
	if len(rep.Limits) == 0 {
		return
	}
	var sizes []int
	for _, l := range rep.Limits {
		for _, r := range l.Reads {
			if !slices.Contains(sizes, r.WorkingSetBytes) {
				sizes = append(sizes, r.WorkingSetBytes)
			}
		}
	}
	slices.Sort(sizes)
	p.printf("machine limits (calibration kernels by register width; the best of their runs, in the calibration and paired with the cases)\n")
	rows := [][]string{{""}, {"FP32 FMA peak"}}
	for _, l := range rep.Limits {
		rows[0] = append(rows[0], fmt.Sprintf("%s, %d thread%s", l.Kernels, l.Threads, plural(l.Threads)))
		rows[1] = append(rows[1], fmt.Sprintf("%.1f GFLOP/s", l.PeakGFLOPS))
	}
	places := rep.Limits[0].calibLimits()
	for _, b := range sizes {
		row := []string{fmt.Sprintf("read %s (%s)", size(b), places.LevelFor(b).Name)}
		for _, l := range rep.Limits {
			cell := "-"
			for _, r := range l.Reads {
				if r.WorkingSetBytes == b {
					cell = fmt.Sprintf("%.1f GB/s", r.GBps)
				}
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	right := map[int]bool{}
	for i := range rep.Limits {
		right[i+1] = true
	}
	for i := range rows {
		rows[i][0] = "  " + rows[i][0]
	}
	writeColumns(p, rows, right)
	p.printf("\n")
}

// writeColumns prints rows as aligned columns; right aligns those marked.
func writeColumns(p *printer, rows [][]string, right map[int]bool) {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			if i < len(r)-1 {
				b.WriteString("  ")
			}
		}
		p.printf("%s\n", strings.TrimRight(b.String(), " "))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// size prints bytes in KiB or MiB.
func size(b int) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.3g KiB", float64(b)/(1<<10))
	default:
		return fmt.Sprintf("%d B", b)
	}
}

// duration prints nanoseconds with three significant figures.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	default:
		return fmt.Sprintf("%.3g ns", ns)
	}
}
