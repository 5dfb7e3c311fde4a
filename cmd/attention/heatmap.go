package main

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"
)

const heatmapDescription = `Draws attention weights as a heatmap, one row per output (target) token and
one column per source token, darker for a larger weight, with the value in
each cell and a colour scale. Writes an SVG (text labels, scalable, opens in
any browser) and a PNG.

INPUT is a JSON file with "source" and "target" tokens and either "weights"
(one row per target token, one column per source token) or "queries" (one
per target token), "keys" (and optionally "values", one per source token)
and a "scorer" (dot, scaled-dot, general, additive, concat; "W", "U" and
"v" hold their parameters), in which case the engine computes the weights.
Without INPUT it draws the built-in toy translation of the demo.`

func runHeatmap(stdout, _ io.Writer, args []string) error {
	fs := newFlagSet("heatmap", "[--svg FILE] [--png FILE] [INPUT.json]", heatmapDescription)
	svgPath := fs.String("svg", "heatmap.svg", "write the SVG to `FILE` (empty: none)")
	pngPath := fs.String("png", "heatmap.png", "write the PNG to `FILE` (empty: none)")
	title := fs.String("title", "", "the picture's title (default: from the input)")
	rest, err := parseFlagsArgs(fs, args, stdout, 1)
	if err != nil {
		return err
	}
	input := ""
	if len(rest) > 0 {
		input = rest[0]
	}

	var (
		grid weightGrid
		desc string
	)
	if input == "" {
		grid, desc, err = translate()
		desc = "toy translation, score " + desc
	} else {
		data, rerr := os.ReadFile(input)
		if rerr != nil {
			return rerr
		}
		grid, desc, err = parseHeatmap(data)
		if err != nil {
			return fmt.Errorf("%s: %w", input, err)
		}
		if desc == "" {
			desc = filepath.Base(input)
		}
	}
	if err != nil {
		return err
	}
	if *title == "" {
		*title = "Attention weights (" + desc + ")"
	}
	if err := checkPicture(grid, *title); err != nil {
		return err
	}
	if *svgPath == "" && *pngPath == "" {
		return &usageError{msg: "--svg and --png are both empty: nothing to write", usage: usageOf(fs)}
	}
	p := &printer{w: stdout}
	for _, out := range []struct {
		path  string
		write func(io.Writer, weightGrid, string) error
	}{{*svgPath, writeHeatmapSVG}, {*pngPath, writeHeatmapPNG}} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, func(w io.Writer) error { return out.write(w, grid, *title) }); err != nil {
			return err
		}
		p.printf("wrote %s (%d target × %d source tokens)\n", out.path, len(grid.rows), len(grid.cols))
	}
	return p.err
}

// writeFile creates name and writes it with write, reporting the first
// error, the close included.
func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// The colour scale: white through blue to navy, darker for larger weights
// (as the demo's shaded grid), interpolated linearly in sRGB between the
// stops, which are evenly spaced over [0, 1].
var scaleStops = []color.RGBA{
	{0xf7, 0xfb, 0xff, 0xff},
	{0xc6, 0xdb, 0xef, 0xff},
	{0x6b, 0xae, 0xd6, 0xff},
	{0x21, 0x71, 0xb5, 0xff},
	{0x08, 0x30, 0x6b, 0xff},
}

// scaleColour returns the colour of weight w (clamped to [0, 1]).
func scaleColour(w float32) color.RGBA {
	w = min(max(w, 0), 1)
	pos := float64(w) * float64(len(scaleStops)-1)
	i := min(int(pos), len(scaleStops)-2)
	f := pos - float64(i)
	a, b := scaleStops[i], scaleStops[i+1]
	mix := func(x, y uint8) uint8 { return uint8(float64(x) + f*(float64(y)-float64(x)) + 0.5) }
	return color.RGBA{mix(a.R, b.R), mix(a.G, b.G), mix(a.B, b.B), 0xff}
}

// inkOn returns the text colour that reads on the cell colour of w.
func inkOn(w float32) color.RGBA {
	if w >= 0.5 {
		return color.RGBA{0xff, 0xff, 0xff, 0xff}
	}
	return color.RGBA{0x1a, 0x1a, 0x1a, 0xff}
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// maxPicture bounds the picture's width and height in pixels (a PNG that
// size takes 1 GiB of memory).
const maxPicture = 16384

// A cell is at least minCellW pixels wide and always cellH high.
const (
	minCellW = 64
	cellH    = 44
)

// errTooLarge marks a grid, or a title, whose picture would be more than
// maxPicture pixels a side.
var errTooLarge = errors.New("too large to draw")

// checkPicture refuses the picture of g titled title if it would be more
// than maxPicture pixels a side. The token counts alone refuse a huge grid
// before any token is measured, and the label lengths a label too long to
// measure: font.MeasureString sums in 26.6 fixed point, which wraps past
// 2²⁵ pixels, so such a label could pass for a narrow one. Both keep the
// layout's sums far inside a 32-bit int.
func checkPicture(g weightGrid, title string) error {
	if len(g.cols) > maxPicture/minCellW || len(g.rows) > maxPicture/cellH {
		return fmt.Errorf("%w: %d target × %d source tokens make a picture at least %d×%d, more than %d pixels a side: draw a part of the grid",
			errTooLarge, len(g.rows), len(g.cols), int64(len(g.cols))*minCellW, int64(len(g.rows))*cellH, maxPicture)
	}
	const long = "%w: %s is %d characters long, more than a picture %d pixels wide holds"
	for _, labels := range []struct {
		field string
		ss    []string
	}{{"target", g.rows}, {"source", g.cols}} {
		for i, s := range labels.ss {
			if n := utf8.RuneCountInString(s); n > maxPicture {
				return fmt.Errorf(long, errTooLarge, labels.field+"["+strconv.Itoa(i)+"]", n, maxPicture)
			}
		}
	}
	if n := utf8.RuneCountInString(title); n > maxPicture {
		return fmt.Errorf(long, errTooLarge, "the title", n, maxPicture)
	}
	l := layoutHeatmap(g, title)
	if l.width <= maxPicture && l.height <= maxPicture {
		return nil
	}
	if bare := layoutHeatmap(g, ""); bare.width <= maxPicture && bare.height <= maxPicture {
		return fmt.Errorf("%w: the title makes the picture %d pixels wide, more than %d: shorten it", errTooLarge, l.width, maxPicture)
	}
	return fmt.Errorf("%w: %d target × %d source tokens make a %d×%d picture, more than %d pixels a side: draw a part of the grid",
		errTooLarge, len(g.rows), len(g.cols), l.width, l.height, maxPicture)
}

// Font sizes in pixels, shared by the SVG and the PNG.
const (
	titleSize = 20
	labelSize = 18
	valueSize = 15
	smallSize = 14
	margin    = 16
)

// heatLayout places everything, in pixels, for both the SVG and the PNG.
// Text is measured with the Go fonts the PNG is drawn with; the SVG names
// them first and leaves some slack for the browser's substitute.
type heatLayout struct {
	cellW, cellH     int
	titleY           int // baselines
	axisY            int
	colLabelY        int
	gridX, gridY     int // top left of the cells
	legendX, legendY int // the colour bar's top left
	legendW, legendH int
	footY            int // baseline of the note under the grid
	width, height    int
}

func layoutHeatmap(g weightGrid, title string) heatLayout {
	widest := func(ss []string, size float64) int {
		n := 0
		for _, s := range ss {
			n = max(n, textWidth(s, size, false))
		}
		return n
	}
	var l heatLayout
	l.cellW = max(minCellW, widest(g.cols, labelSize)+24, textWidth("0.00", valueSize, false)+24)
	l.cellH = cellH
	l.titleY = margin + titleSize
	l.axisY = l.titleY + 32
	l.colLabelY = l.axisY + 28
	l.gridY = l.colLabelY + 12
	l.gridX = margin + 24 + widest(g.rows, labelSize) + 14
	gridW, gridH := len(g.cols)*l.cellW, len(g.rows)*l.cellH
	l.legendX = l.gridX + gridW + 28
	l.legendY = l.gridY
	l.legendW = 20
	l.legendH = max(gridH, 4*l.cellH)
	l.footY = l.gridY + max(gridH, l.legendH) + 26
	l.width = l.legendX + l.legendW + 10 + textWidth("1.00", smallSize, false) + margin
	// Browsers without the Go fonts draw the title in a wider one.
	l.width = max(l.width, 2*margin+textWidth(title, titleSize, true)*6/5)
	l.height = l.footY + margin
	return l
}

// legendTicks are the weights labelled on the colour bar.
var legendTicks = []float32{0, 0.25, 0.5, 0.75, 1}

// tickY is the height on the colour bar of weight w: 1 at the top.
func (l heatLayout) tickY(w float32) int {
	return l.legendY + int(float32(l.legendH-1)*(1-w)+0.5)
}
