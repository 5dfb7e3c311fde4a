package main

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// writeBenchSVG plots one decoder step's throughput (GFLOP/s) against T,
// a panel per d, a line per implementation, with the machine's limit for
// each working set (the roofline) drawn as a dashed line.
func writeBenchSVG(w io.Writer, rep *benchReport) error {
	var ds, ts []int
	var impls []string
	top := 0.0
	for _, r := range rep.Results {
		if r.Group != "attend" {
			continue
		}
		if !slices.Contains(ds, r.D) {
			ds = append(ds, r.D)
		}
		if !slices.Contains(ts, r.T) {
			ts = append(ts, r.T)
		}
		if !slices.Contains(impls, r.Impl) {
			impls = append(impls, r.Impl)
		}
		top = max(top, r.GFLOPS, r.MachineLimit)
	}
	if len(ds) == 0 {
		return fmt.Errorf("no attention results to plot")
	}
	slices.Sort(ds)
	slices.Sort(ts)
	top = niceCeil(top * 1.05)

	const panelW, panelH, left, gap, topM, bottom = 380.0, 300.0, 64.0, 56.0, 76.0, 96.0
	width := left + float64(len(ds))*(panelW+gap) - gap + 24
	height := topM + panelH + bottom
	s := &svgWriter{w: w}
	title := "attention bench: one decoder step, throughput against T"
	s.start(width, height, title)
	s.text(width/2, 24, 16, "middle", ` font-weight="bold"`, title)
	s.text(width/2, 42, 11, "middle", ` fill="#555555"`, fmt.Sprintf("%s, %d cores; scaled-dot score, median of %d runs", rep.Machine.CPU, rep.Machine.Cores, rep.Runs))

	colours := []string{"#d62728", "#2ca02c", "#9467bd", "#1f77b4"}
	colour := func(i int, name string) string {
		if name == "generic" {
			return "#1f77b4"
		}
		return colours[i%3]
	}
	// x: T on a log scale, the smallest and largest at the panel's edges
	// with a margin; y: GFLOP/s from 0.
	xOf := func(x0 float64, T int) float64 {
		lo, hi := math.Log2(float64(ts[0])), math.Log2(float64(ts[len(ts)-1]))
		f := 0.5
		if hi > lo {
			f = (math.Log2(float64(T)) - lo) / (hi - lo)
		}
		return x0 + 30 + f*(panelW-60)
	}
	yOf := func(v float64) float64 { return topM + panelH - v/top*panelH }

	for pi, d := range ds {
		x0 := left + float64(pi)*(panelW+gap)
		s.printf(`<g class="panel" data-d="%d">`+"\n", d)
		s.printf(`<rect x="%.1f" y="%.1f" width="%g" height="%g" fill="none" stroke="#888888"/>`+"\n", x0, topM, panelW, panelH)
		s.text(x0+panelW/2, topM-6, 12, "middle", "", fmt.Sprintf("d = %d", d))
		for i := 0; i <= 5; i++ {
			v := top * float64(i) / 5
			y := yOf(v)
			s.line(x0, y, x0+panelW, y, "#e6e6e6", 1, "")
			s.text(x0-4, y+4, 10, "end", "", fmt.Sprintf("%g", v))
		}
		for _, T := range ts {
			x := xOf(x0, T)
			s.line(x, topM+panelH, x, topM+panelH+4, "#888888", 1, "")
			s.text(x, topM+panelH+16, 10, "middle", "", fmt.Sprintf("%d", T))
		}
		s.text(x0+panelW/2, topM+panelH+32, 11, "middle", "", "T (keys), log scale")
		if pi == 0 {
			s.text(16, topM+panelH/2, 11, "middle", fmt.Sprintf(` transform="rotate(-90 16 %.1f)"`, topM+panelH/2), "GFLOP/s")
		}

		// The limit: the machine's roofline at each T (the same for
		// every implementation).
		var limit []float64
		for _, T := range ts {
			for _, r := range rep.Results {
				if r.Group == "attend" && r.D == d && r.T == T {
					limit = append(limit, r.MachineLimit)
					break
				}
			}
		}
		s.polyline(ts, limit, func(T int) float64 { return xOf(x0, T) }, yOf, "#000000", ` stroke-dasharray="6 4" class="limit"`)
		for ii, name := range impls {
			var ys []float64
			for _, T := range ts {
				for _, r := range rep.Results {
					if r.Group == "attend" && r.D == d && r.T == T && r.Impl == name {
						ys = append(ys, r.GFLOPS)
					}
				}
			}
			c := colour(ii, name)
			s.polyline(ts, ys, func(T int) float64 { return xOf(x0, T) }, yOf, c, fmt.Sprintf(` class="impl" data-impl="%s"`, esc(name)))
			for i, v := range ys {
				s.printf(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s T=%d d=%d: %.1f GFLOP/s</title></circle>`+"\n", xOf(x0, ts[i]), yOf(v), c, esc(name), ts[i], d, v)
			}
		}
		s.printf("</g>\n")
	}

	// Legend under the panels.
	ly := topM + panelH + 58
	x := left
	for ii, name := range impls {
		c := colour(ii, name)
		s.line(x, ly, x+24, ly, c, 2.5, "")
		s.text(x+30, ly+4, 11, "start", "", name)
		x += 110
	}
	s.line(x, ly, x+24, ly, "#000000", 1.5, ` stroke-dasharray="6 4"`)
	s.text(x+30, ly+4, 11, "start", "", "machine limit (roofline of the working set)")
	s.text(left, ly+24, 10, "start", ` fill="#555555"`, "limit = min(FMA peak, read bandwidth at a working set of the 8·T·d bytes of K and V × 0.5 FLOP/byte), widest registers")
	s.end()
	return s.err
}

func (s *svgWriter) polyline(ts []int, ys []float64, xOf func(int) float64, yOf func(float64) float64, stroke, extra string) {
	s.printf(`<polyline fill="none" stroke="%s" stroke-width="2"%s points="`, stroke, extra)
	for i, v := range ys {
		s.printf("%.1f,%.1f ", xOf(ts[i]), yOf(v))
	}
	s.printf(`"/>` + "\n")
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
