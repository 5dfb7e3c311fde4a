package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	fixedpt "golang.org/x/image/math/fixed"
)

// writeHeatmapPNG draws the same picture as writeHeatmapSVG (the same
// layout) as a PNG, its text in the Go fonts.
func writeHeatmapPNG(w io.Writer, g weightGrid, title string) error {
	return png.Encode(w, renderHeatmap(g, title))
}

func renderHeatmap(g weightGrid, title string) *image.RGBA {
	l := layoutHeatmap(g, title)
	img := image.NewRGBA(image.Rect(0, 0, l.width, l.height))
	fill(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})
	ink := color.RGBA{0x1a, 0x1a, 0x1a, 0xff}
	grey := color.RGBA{0x55, 0x55, 0x55, 0xff}
	frameGrey := color.RGBA{0x88, 0x88, 0x88, 0xff}

	drawText(img, margin, l.titleY, title, titleSize, true, ink, alignStart)
	gridW, gridH := len(g.cols)*l.cellW, len(g.rows)*l.cellH
	drawText(img, l.gridX+gridW/2, l.axisY, "source tokens (keys)", smallSize, false, grey, alignMiddle)
	drawVertical(img, margin+smallSize, l.gridY+gridH/2, "output tokens (queries)", smallSize, grey)
	for j, c := range g.cols {
		drawText(img, l.gridX+j*l.cellW+l.cellW/2, l.colLabelY, c, labelSize, false, ink, alignMiddle)
	}
	for i, r := range g.rows {
		drawText(img, l.gridX-12, l.gridY+i*l.cellH+l.cellH/2+labelSize/3, r, labelSize, false, ink, alignEnd)
	}
	for i := range g.rows {
		for j := range g.cols {
			wt := g.weights[i*len(g.cols)+j]
			x, y := l.gridX+j*l.cellW, l.gridY+i*l.cellH
			fill(img, image.Rect(x, y, x+l.cellW, y+l.cellH), scaleColour(wt))
			drawText(img, x+l.cellW/2, y+l.cellH/2+valueSize/3, fmt.Sprintf("%.2f", wt), valueSize, false, inkOn(wt), alignMiddle)
		}
	}
	frame(img, image.Rect(l.gridX, l.gridY, l.gridX+gridW, l.gridY+gridH), frameGrey)

	// The colour bar, row by row through scaleColour, 1 at the top.
	for y := l.legendY; y < l.legendY+l.legendH; y++ {
		wt := 1 - float32(y-l.legendY)/float32(l.legendH-1)
		fill(img, image.Rect(l.legendX, y, l.legendX+l.legendW, y+1), scaleColour(wt))
	}
	frame(img, image.Rect(l.legendX, l.legendY, l.legendX+l.legendW, l.legendY+l.legendH), frameGrey)
	for _, t := range legendTicks {
		y := l.tickY(t)
		fill(img, image.Rect(l.legendX+l.legendW, y, l.legendX+l.legendW+5, y+1), grey)
		drawText(img, l.legendX+l.legendW+8, y+smallSize/3, fmt.Sprintf("%.2f", t), smallSize, false, ink, alignStart)
	}
	drawText(img, l.legendX+l.legendW/2, l.colLabelY, "weight", smallSize, false, grey, alignMiddle)
	if rowsSumToOne(g) {
		drawText(img, l.gridX, l.footY, "each row is one softmax: its weights sum to 1", smallSize, false, grey, alignStart)
	}
	return img
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

// frame draws a one-pixel outline just inside r.
func frame(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+1), c)
	fill(img, image.Rect(r.Min.X, r.Max.Y-1, r.Max.X, r.Max.Y), c)
	fill(img, image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Max.Y), c)
	fill(img, image.Rect(r.Max.X-1, r.Min.Y, r.Max.X, r.Max.Y), c)
}

type align int

const (
	alignStart align = iota
	alignMiddle
	alignEnd
)

// drawText draws s in the Go font with its baseline at y.
func drawText(img *image.RGBA, x, y int, s string, size float64, bold bool, c color.RGBA, a align) {
	f := face(size, bold)
	w := font.MeasureString(f, s).Ceil()
	switch a {
	case alignMiddle:
		x -= w / 2
	case alignEnd:
		x -= w
	}
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: f, Dot: fixedpt.P(x, y)}
	d.DrawString(s)
}

// drawVertical draws s turned a quarter left, centred on (cx, cy): drawn
// level into a mask, then copied rotated.
func drawVertical(img *image.RGBA, cx, cy int, s string, size float64, c color.RGBA) {
	f := face(size, false)
	w := font.MeasureString(f, s).Ceil()
	m := f.Metrics()
	asc, h := m.Ascent.Ceil(), m.Height.Ceil()
	mask := image.NewAlpha(image.Rect(0, 0, w, h))
	d := font.Drawer{Dst: mask, Src: image.Opaque, Face: f, Dot: fixedpt.P(0, asc)}
	d.DrawString(s)
	rot := image.NewAlpha(image.Rect(0, 0, h, w))
	for y := range h {
		for x := range w {
			rot.SetAlpha(y, w-1-x, mask.AlphaAt(x, y))
		}
	}
	r := image.Rect(cx-asc, cy-w/2, cx-asc+h, cy-w/2+w)
	draw.DrawMask(img, r, image.NewUniform(c), image.Point{}, rot, image.Point{}, draw.Over)
}
