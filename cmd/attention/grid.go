package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// weightGrid is a matrix of attention weights, one row per query (target
// token) and one column per key (source token), row-major.
type weightGrid struct {
	rows, cols []string
	weights    []float32
}

// shades darken with the weight, one step per fifth of [0, 1].
var shades = []rune(" ░▒▓█")

func shade(w float32) rune {
	i := int(w * float32(len(shades)))
	return shades[max(0, min(i, len(shades)-1))]
}

// drawGrid draws each weight as a shaded block and its value, so the
// alignment can be seen at a glance and still read exactly.
func drawGrid(p *printer, g weightGrid) {
	const sample = "██ 0.00"
	cell := utf8.RuneCountInString(sample)
	for _, c := range g.cols {
		cell = max(cell, utf8.RuneCountInString(c))
	}
	label := 0
	for _, r := range g.rows {
		label = max(label, utf8.RuneCountInString(r))
	}

	// Lines are built whole so trailing padding can be trimmed.
	var line strings.Builder
	flush := func() {
		p.printf("%s\n", strings.TrimRight(line.String(), " "))
		line.Reset()
	}
	fmt.Fprintf(&line, "  %*s", label, "")
	for _, c := range g.cols {
		fmt.Fprintf(&line, "  %-*s", cell, c)
	}
	flush()
	for i, r := range g.rows {
		fmt.Fprintf(&line, "  %-*s", label, r)
		for j := range g.cols {
			w := g.weights[i*len(g.cols)+j]
			b := string(shade(w))
			fmt.Fprintf(&line, "  %-*s", cell, b+b+" "+fixed(2)(w))
		}
		flush()
	}
	p.printf("  legend: %s\n", legend())
}

// legend reads "░ ≥ 0.2  ▒ ≥ 0.4  …"; the blank shade is below the first.
func legend() string {
	parts := make([]string, 0, len(shades))
	for i, s := range shades[1:] {
		parts = append(parts, string(s)+" ≥ "+fixed(1)(float32(i+1)/float32(len(shades))))
	}
	return strings.Join(parts, "   ") + "   (blank below; each row sums to 1)"
}
