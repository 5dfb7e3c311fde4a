package main

import (
	"fmt"
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

// limitsSet holds the limits measured with Threads threads at once.
type limitsSet struct {
	Threads    int         `json:"threads"`
	PeakGFLOPS float64     `json:"peak_gflops"`
	Levels     []levelJSON `json:"levels"`
}

type levelJSON struct {
	Name            string  `json:"name"`
	CapacityBytes   int     `json:"capacity_bytes"`    // 0 for DRAM
	WorkingSetBytes int     `json:"working_set_bytes"` // per thread, as measured
	GBps            float64 `json:"gbps"`
}

func limitsJSON(l calib.Limits) limitsSet {
	s := limitsSet{Threads: l.Threads, PeakGFLOPS: l.GFLOPS}
	for _, lv := range l.Levels {
		s.Levels = append(s.Levels, levelJSON{Name: lv.Name, CapacityBytes: lv.Capacity, WorkingSetBytes: lv.Bytes, GBps: lv.GBps})
	}
	return s
}

// calibLimits turns the JSON form back into the form that places working
// sets.
func (s limitsSet) calibLimits() calib.Limits {
	l := calib.Limits{Threads: s.Threads, GFLOPS: s.PeakGFLOPS}
	for _, lv := range s.Levels {
		l.Levels = append(l.Levels, calib.Level{Name: lv.Name, Capacity: lv.CapacityBytes, Bytes: lv.WorkingSetBytes, GBps: lv.GBps})
	}
	return l
}

type resultJSON struct {
	Group           string  `json:"group"` // kernel, attend, batched, decode
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
	// The limit for this working set: "FMA peak" or "<level> read".
	Bound     string  `json:"bound"`
	Limit     float64 `json:"limit"`
	LimitUnit string  `json:"limit_unit"` // GFLOP/s or GB/s
	Fraction  float64 `json:"fraction"`   // of the limit
	// The median over the runs of the figure over the same limit
	// re-measured right after that run: on a shared machine this sets like
	// against like, where Fraction sets a median against a best.
	PairedFraction   float64 `json:"paired_fraction"`
	SpeedupVsGeneric float64 `json:"speedup_vs_generic"`
}

// bound is the roofline of a case's working set: with FLOPs counted, the
// attainable rate is the lower of the FMA peak and the level's bandwidth
// times the FLOPs per byte; without, the bandwidth. Limits measured with as
// many threads as the case uses apply.
type bound struct {
	name  string  // "FMA peak" or "<level> read"
	limit float64 // in unit
	unit  string  // GFLOP/s or GB/s
	level calib.Level
	fma   bool // the FMA peak bounds it; otherwise the level's bandwidth
}

func roofline(rep *benchReport, c benchCase) bound {
	lims := rep.Limits[0]
	for _, l := range rep.Limits {
		if l.Threads == c.workers {
			lims = l
		}
	}
	lv := lims.calibLimits().LevelFor(c.ws)
	if c.ownRead {
		// The limit is set by withRead, from a read of c.reads().
		lv.Bytes, lv.GBps = c.ws, 0
		return bound{name: size(c.ws) + " read", unit: "GB/s", level: lv}
	}
	if c.flops > 0 {
		if memBound := lv.GBps * c.flops / c.bytes; memBound < lims.PeakGFLOPS {
			return bound{name: lv.Name + " read", limit: memBound, unit: "GFLOP/s", level: lv}
		}
		return bound{name: "FMA peak", limit: lims.PeakGFLOPS, unit: "GFLOP/s", level: lv, fma: true}
	}
	return bound{name: lv.Name + " read", limit: lv.GBps, unit: "GB/s", level: lv}
}

// withRead returns the bound of an ownRead case with its limit, the read
// bandwidth gbps measured at the case's working set.
func (b bound) withRead(gbps float64) bound {
	b.limit, b.level.GBps = gbps, gbps
	return b
}

// probe returns the calibration kernel that measures this bound.
func (b bound) probe(threads int) *calib.Probe {
	if b.fma {
		return calib.FMAProbe(threads)
	}
	return calib.ReadProbe(b.level.Bytes, threads)
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

// newResult sets a measured case against its roofline.
func newResult(c benchCase, impl string, b bound, med time.Duration, runs int) resultJSON {
	sec := med.Seconds()
	r := resultJSON{
		Group: c.group, Name: c.name, Shape: c.shape, Impl: impl,
		N: c.n, T: c.t, D: c.d, Heads: c.heads, Causal: c.causal, Workers: c.workers,
		WorkingSetBytes: c.ws, Level: b.level.Name, Runs: runs,
		MedianNs: float64(med.Nanoseconds()),
		GBps:     c.bytes / sec / 1e9,
		Bound:    b.name, Limit: b.limit, LimitUnit: b.unit,
		Fraction: b.rate(c, med) / b.limit,
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

	p.printf("machine limits (calibration kernels: %s; best of the runs)\n", m.CalibKernels)
	p.printf("  %-22s", "")
	for _, l := range rep.Limits {
		p.printf("  %14s", fmt.Sprintf("%d thread%s", l.Threads, plural(l.Threads)))
	}
	p.printf("\n  %-22s", "FP32 FMA peak")
	for _, l := range rep.Limits {
		p.printf("  %14s", fmt.Sprintf("%.1f GFLOP/s", l.PeakGFLOPS))
	}
	p.printf("\n")
	for i, lv := range rep.Limits[0].Levels {
		p.printf("  %-22s", fmt.Sprintf("%s read (%s)", lv.Name, size(lv.WorkingSetBytes)))
		for _, l := range rep.Limits {
			p.printf("  %14s", fmt.Sprintf("%.1f GB/s", l.Levels[i].GBps))
		}
		p.printf("\n")
	}
	p.printf("\n")

	header := []string{"what", "shape", "impl", "working set", "median", "GFLOP/s", "read GB/s", "limit", "of limit", "paired", "vs generic"}
	rows := [][]string{header}
	for _, r := range rep.Results {
		gflops := "-"
		if r.GFLOPS > 0 {
			gflops = fmt.Sprintf("%.1f", r.GFLOPS)
		}
		rows = append(rows, []string{
			r.Name, r.Shape, r.Impl,
			fmt.Sprintf("%s (%s)", size(r.WorkingSetBytes), r.Level),
			duration(r.MedianNs), gflops, fmt.Sprintf("%.1f", r.GBps),
			fmt.Sprintf("%s %.1f %s", r.Bound, r.Limit, r.LimitUnit),
			fmt.Sprintf("%.0f%%", 100*r.Fraction),
			fmt.Sprintf("%.0f%%", 100*r.PairedFraction),
			fmt.Sprintf("%.1f×", r.SpeedupVsGeneric),
		})
	}
	writeColumns(p, rows, map[int]bool{4: true, 5: true, 6: true, 8: true, 9: true, 10: true})
	p.printf("\nread GB/s: the bytes the operation must read (its inputs, once) per second.\n" +
		"limit: the roofline for the working set, the lower of the FMA peak and the read\n" +
		"bandwidth of the level it lives in times the FLOPs per byte read (that bandwidth\n" +
		"alone where FLOPs are not counted), for as many threads as the operation uses;\n" +
		"for the decode steps (read GB/s: K and V, each key/value head once), a read of\n" +
		"those same K and V buffers (\"32 MiB read\": the working set per thread).\n" +
		"of limit: the median against the best calibration run (the stricter figure).\n" +
		"paired: the median over the runs of each run against the same limit re-measured\n" +
		"right after it, so both meet the same load from the rest of the machine.\n")
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
