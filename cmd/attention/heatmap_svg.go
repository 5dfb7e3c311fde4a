package main

import (
	"fmt"
	"io"
)

// heatmapFonts names the fonts the PNG is drawn with first, so a browser
// that has them draws the same picture.
const heatmapFonts = "Go, 'DejaVu Sans', Helvetica, Arial, sans-serif"

// writeHeatmapSVG draws the grid as SVG: a rect per weight (class "cell",
// with its row, column and weight as data attributes and a tooltip), the
// tokens as text, and a colour bar with ticks.
func writeHeatmapSVG(w io.Writer, g weightGrid, title string) error {
	l := layoutHeatmap(g, title)
	s := &svgWriter{w: w}
	s.start(float64(l.width), float64(l.height), title)
	s.printf(`<g font-family="%s">`+"\n", heatmapFonts)
	s.text(float64(margin), float64(l.titleY), titleSize, "start", ` font-weight="bold" class="title"`, title)

	gridW, gridH := len(g.cols)*l.cellW, len(g.rows)*l.cellH
	s.text(float64(l.gridX+gridW/2), float64(l.axisY), smallSize, "middle", ` fill="#555555" class="axis"`, "source tokens (keys)")
	cy, ax := float64(l.gridY+gridH/2), float64(margin+smallSize)
	s.text(ax, cy, smallSize, "middle", fmt.Sprintf(` fill="#555555" class="axis" transform="rotate(-90 %.0f %.0f)"`, ax, cy), "output tokens (queries)")

	for j, c := range g.cols {
		s.text(float64(l.gridX+j*l.cellW+l.cellW/2), float64(l.colLabelY), labelSize, "middle", ` class="col-label"`, c)
	}
	for i, r := range g.rows {
		s.text(float64(l.gridX-12), float64(l.gridY+i*l.cellH+l.cellH/2+labelSize/3), labelSize, "end", ` class="row-label"`, r)
	}
	for i, r := range g.rows {
		for j, c := range g.cols {
			wt := g.weights[i*len(g.cols)+j]
			x, y := l.gridX+j*l.cellW, l.gridY+i*l.cellH
			s.printf(`<rect class="cell" data-row="%d" data-col="%d" data-weight="%g" x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s → %s: %.3f</title></rect>`+"\n",
				i, j, wt, x, y, l.cellW, l.cellH, hex(scaleColour(wt)), esc(r), esc(c), wt)
			s.text(float64(x+l.cellW/2), float64(y+l.cellH/2+valueSize/3), valueSize, "middle", fmt.Sprintf(` fill="%s" class="value"`, hex(inkOn(wt))), fmt.Sprintf("%.2f", wt))
		}
	}
	s.printf(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888888"/>`+"\n", l.gridX, l.gridY, gridW, gridH)

	// The colour bar: the same stops as scaleColour, 1 at the top.
	s.printf(`<defs><linearGradient id="scale" x1="0" y1="1" x2="0" y2="0">`)
	for k, c := range scaleStops {
		s.printf(`<stop offset="%g" stop-color="%s"/>`, float64(k)/float64(len(scaleStops)-1), hex(c))
	}
	s.printf("</linearGradient></defs>\n")
	s.printf(`<rect class="legend" x="%d" y="%d" width="%d" height="%d" fill="url(#scale)" stroke="#888888"/>`+"\n", l.legendX, l.legendY, l.legendW, l.legendH)
	for _, t := range legendTicks {
		y := l.tickY(t)
		s.line(float64(l.legendX+l.legendW), float64(y), float64(l.legendX+l.legendW+5), float64(y), "#555555", 1, "")
		s.text(float64(l.legendX+l.legendW+8), float64(y+smallSize/3), smallSize, "start", ` class="tick"`, fmt.Sprintf("%.2f", t))
	}
	s.text(float64(l.legendX+l.legendW/2), float64(l.colLabelY), smallSize, "middle", ` fill="#555555"`, "weight")
	if rowsSumToOne(g) {
		s.text(float64(l.gridX), float64(l.footY), smallSize, "start", ` fill="#555555"`, "each row is one softmax: its weights sum to 1")
	}
	s.printf("</g>\n")
	s.end()
	return s.err
}

// rowsSumToOne reports whether every row's weights sum to 1, as a softmax's
// do (a fully masked row sums to 0 and breaks the rule).
func rowsSumToOne(g weightGrid) bool {
	for i := range g.rows {
		var sum float64
		for _, w := range g.weights[i*len(g.cols) : (i+1)*len(g.cols)] {
			sum += float64(w)
		}
		if sum < 0.999 || sum > 1.001 {
			return false
		}
	}
	return true
}
