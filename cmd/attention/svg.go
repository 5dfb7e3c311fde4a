package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
)

// svgWriter builds an SVG document, keeping the first write error.
type svgWriter struct {
	w   io.Writer
	err error
}

func (s *svgWriter) printf(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, args...)
	}
}

func (s *svgWriter) start(width, height float64, title string) {
	s.printf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">`+"\n",
		width, height, width, height)
	s.printf("<title>%s</title>\n", esc(title))
	s.printf(`<rect width="%g" height="%g" fill="#ffffff"/>`+"\n", width, height)
}

func (s *svgWriter) end() { s.printf("</svg>\n") }

// text places a label; anchor is start, middle or end; extra holds more
// attributes (may be empty).
func (s *svgWriter) text(x, y, size float64, anchor, extra, label string) {
	s.printf(`<text x="%.1f" y="%.1f" font-size="%g" text-anchor="%s"%s>%s</text>`+"\n", x, y, size, anchor, extra, esc(label))
}

func (s *svgWriter) line(x1, y1, x2, y2 float64, stroke string, width float64, extra string) {
	s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`+"\n", x1, y1, x2, y2, stroke, width, extra)
}

// esc escapes text for XML content and attribute values.
func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s)) // writing to a bytes.Buffer cannot fail
	return b.String()
}
