package main

import (
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
)

// The Go fonts (x/image/font/gofont) draw the PNG's text and measure the
// layout: they cover Latin, Greek and Cyrillic scripts and common symbols.
var (
	fontsOnce           sync.Once
	regularTTF, boldTTF *opentype.Font
	facesMu             sync.Mutex
	faces               = map[faceKey]font.Face{}
)

type faceKey struct {
	size float64
	bold bool
}

// face returns the Go font at size pixels (72 dpi, so points are pixels).
func face(size float64, bold bool) font.Face {
	fontsOnce.Do(func() {
		var err error
		if regularTTF, err = opentype.Parse(goregular.TTF); err != nil {
			panic(err) // the embedded font is known good
		}
		if boldTTF, err = opentype.Parse(gobold.TTF); err != nil {
			panic(err)
		}
	})
	facesMu.Lock()
	defer facesMu.Unlock()
	k := faceKey{size, bold}
	if f, ok := faces[k]; ok {
		return f
	}
	ttf := regularTTF
	if bold {
		ttf = boldTTF
	}
	f, err := opentype.NewFace(ttf, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		panic(err)
	}
	faces[k] = f
	return f
}

// textWidth is the advance of s in pixels.
func textWidth(s string, size float64, bold bool) int {
	return font.MeasureString(face(size, bold), s).Ceil()
}
