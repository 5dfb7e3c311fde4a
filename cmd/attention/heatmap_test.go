package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgElement is what the heatmap tests read from the SVG.
type svgElement struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG parses doc as XML, failing on any error, and returns its
// elements in document order.
func parseSVG(t *testing.T, doc []byte) []svgElement {
	t.Helper()
	var els []svgElement
	var open []int
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			els = append(els, e)
			open = append(open, len(els)-1)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				els[open[len(open)-1]].text += string(tok)
			}
		}
	}
	return els
}

func heatmapFiles(t *testing.T, args ...string) (svg, pngData []byte, stdout string) {
	t.Helper()
	dir := t.TempDir()
	sp, pp := filepath.Join(dir, "h.svg"), filepath.Join(dir, "h.png")
	var out, stderr bytes.Buffer
	if code := run(append([]string{"heatmap", "--svg", sp, "--png", pp}, args...), &out, &stderr); code != 0 {
		t.Fatalf("heatmap %q = %d, stderr:\n%s", args, code, stderr.String())
	}
	var err error
	if svg, err = os.ReadFile(sp); err != nil {
		t.Fatal(err)
	}
	if pngData, err = os.ReadFile(pp); err != nil {
		t.Fatal(err)
	}
	return svg, pngData, out.String()
}

// The toy translation's SVG: one cell per weight in the scale's colour,
// labels equal to the tokens, a legend.
func TestHeatmapSVG(t *testing.T) {
	grid, _, err := translate()
	if err != nil {
		t.Fatal(err)
	}
	svg, _, out := heatmapFiles(t)
	if !strings.Contains(out, "5 target × 4 source tokens") {
		t.Errorf("stdout = %q", out)
	}
	checkSVG(t, svg, grid)
}

func checkSVG(t *testing.T, svg []byte, grid weightGrid) {
	t.Helper()
	var cells, legends int
	var cols, rows []string
	for _, e := range parseSVG(t, svg) {
		switch e.attrs["class"] {
		case "cell":
			cells++
			i, _ := strconv.Atoi(e.attrs["data-row"])
			j, _ := strconv.Atoi(e.attrs["data-col"])
			if i >= len(grid.rows) || j >= len(grid.cols) {
				t.Fatalf("cell at row %d, column %d is outside the grid", i, j)
			}
			w := grid.weights[i*len(grid.cols)+j]
			if got, _ := strconv.ParseFloat(e.attrs["data-weight"], 32); float32(got) != w {
				t.Errorf("cell %d,%d weight %v, want %v", i, j, got, w)
			}
			if e.attrs["fill"] != hex(scaleColour(w)) {
				t.Errorf("cell %d,%d fill %s, want %s", i, j, e.attrs["fill"], hex(scaleColour(w)))
			}
		case "col-label":
			cols = append(cols, e.text)
		case "row-label":
			rows = append(rows, e.text)
		case "legend":
			legends++
		}
	}
	if want := len(grid.rows) * len(grid.cols); cells != want {
		t.Errorf("%d cells, want one per weight: %d", cells, want)
	}
	if strings.Join(cols, "|") != strings.Join(grid.cols, "|") {
		t.Errorf("column labels %q, want the source tokens %q", cols, grid.cols)
	}
	if strings.Join(rows, "|") != strings.Join(grid.rows, "|") {
		t.Errorf("row labels %q, want the target tokens %q", rows, grid.rows)
	}
	if legends != 1 {
		t.Errorf("%d colour scales, want 1", legends)
	}
}

// The PNG decodes at the layout's size, each cell (away from its text) has
// the colour of its weight, and the colour bar follows the scale.
func TestHeatmapPNG(t *testing.T) {
	grid, desc, err := translate()
	if err != nil {
		t.Fatal(err)
	}
	_, data, _ := heatmapFiles(t)
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PNG does not decode: %v", err)
	}
	l := layoutHeatmap(grid, "Attention weights (toy translation, score "+desc+")")
	if b := img.Bounds(); b.Dx() != l.width || b.Dy() != l.height {
		t.Fatalf("PNG is %v, want %dx%d", b, l.width, l.height)
	}
	for i := range grid.rows {
		for j := range grid.cols {
			w := grid.weights[i*len(grid.cols)+j]
			x, y := l.gridX+j*l.cellW+4, l.gridY+i*l.cellH+4
			if got := rgba(img.At(x, y)); got != scaleColour(w) {
				t.Errorf("cell %d,%d (weight %.3f) is %v, want %v", i, j, w, got, scaleColour(w))
			}
		}
	}
	// The bar: the tick weights at their heights, darker upwards.
	prev := -1.0
	for y := l.legendY + l.legendH - 2; y > l.legendY; y-- {
		lum := luminance(rgba(img.At(l.legendX+l.legendW/2, y)))
		if prev >= 0 && lum > prev {
			t.Fatalf("colour bar gets lighter upwards at y=%d", y)
		}
		prev = lum
	}
	for _, w := range []float32{0.25, 0.5, 0.75} {
		got, want := rgba(img.At(l.legendX+l.legendW/2, l.tickY(w))), scaleColour(w)
		if diff(got, want) > 3 {
			t.Errorf("colour bar at %.2f is %v, want %v", w, got, want)
		}
	}
}

func rgba(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}

func luminance(c color.RGBA) float64 {
	return 0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B)
}

func diff(a, b color.RGBA) int {
	d := 0
	for _, p := range [][2]uint8{{a.R, b.R}, {a.G, b.G}, {a.B, b.B}} {
		d = max(d, int(p[0])-int(p[1]), int(p[1])-int(p[0]))
	}
	return d
}

// The scale runs from the first stop to the last, through every stop,
// darker as the weight grows, and clamps outside [0, 1].
func TestScaleColour(t *testing.T) {
	if scaleColour(0) != scaleStops[0] || scaleColour(1) != scaleStops[len(scaleStops)-1] || scaleColour(0.5) != scaleStops[2] {
		t.Errorf("stops: %v %v %v", scaleColour(0), scaleColour(0.5), scaleColour(1))
	}
	if scaleColour(-1) != scaleColour(0) || scaleColour(2) != scaleColour(1) {
		t.Error("scale does not clamp")
	}
	prev := luminance(scaleColour(0))
	for k := 1; k <= 100; k++ {
		lum := luminance(scaleColour(float32(k) / 100))
		if lum >= prev {
			t.Fatalf("scale not darker at %d%%", k)
		}
		prev = lum
	}
}

func writeInput(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Weights given in a file are drawn as given; queries and keys with a
// scorer are run through the engine, which for the toy translation's
// states gives the demo's weights.
func TestHeatmapInput(t *testing.T) {
	svg, _, _ := heatmapFiles(t, writeInput(t, `{"source": ["a", "b", "c"], "target": ["x", "y"],
		"weights": [[0.5, 0.25, 0.25], [0, 0, 1]]}`))
	checkSVG(t, svg, weightGrid{rows: []string{"x", "y"}, cols: []string{"a", "b", "c"}, weights: []float32{0.5, 0.25, 0.25, 0, 0, 1}})

	rows := func(m [][]float32) string {
		var parts []string
		for _, r := range m {
			var xs []string
			for _, x := range r {
				xs = append(xs, strconv.FormatFloat(float64(x), 'g', -1, 32))
			}
			parts = append(parts, "["+strings.Join(xs, ",")+"]")
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	quote := func(ss []string) string { return `["` + strings.Join(ss, `","`) + `"]` }
	doc := `{"source": ` + quote(sourceWords) + `, "target": ` + quote(targetWords) +
		`, "scorer": "scaled-dot", "queries": ` + rows(targetState) + `, "keys": ` + rows(sourceState) + `}`
	grid, _, err := translate()
	if err != nil {
		t.Fatal(err)
	}
	svg, _, _ = heatmapFiles(t, writeInput(t, doc))
	checkSVG(t, svg, grid)

	// Flags may follow the input file.
	dir := t.TempDir()
	var out, stderr bytes.Buffer
	in := writeInput(t, `{"source": ["a"], "target": ["x"], "weights": [[1]]}`)
	if code := run([]string{"heatmap", in, "--svg", filepath.Join(dir, "a.svg"), "--png", ""}, &out, &stderr); code != 0 {
		t.Fatalf("flags after the input: %d, %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "a.svg")); err != nil {
		t.Error(err)
	}
}

// Each malformed input fails with exit code 1 and an error naming the
// problem, and writes nothing.
func TestHeatmapMalformed(t *testing.T) {
	const tok = `"source": ["a", "b"], "target": ["x", "y"]`
	for _, c := range []struct {
		name, doc string
		kind      error
		msg       string
	}{
		{"bad JSON", `{"source": ["a", "b"], "target": ["x"] "weights": []}`, errBadJSON, "line 1, column 40: invalid character '\"' after object key:value pair"},
		{"truncated", `{"source": ["a"`, errBadJSON, "the JSON ends early"},
		{"empty file", ``, errBadJSON, "empty"},
		{"wrong type", `{"source": "a b", "target": ["x"], "weights": [[1]]}`, errBadJSON, `"source" holds a JSON string where a list of strings belongs`},
		{"unknown field", `{` + tok + `, "weight": [[1, 0], [0, 1]]}`, errBadJSON, `unknown field "weight"`},
		{"ragged rows", `{` + tok + `, "weights": [[1, 0], [0.5]]}`, errShape, `source tokens but weights row 1 ("y") has 1 columns`},
		{"too few rows", `{` + tok + `, "weights": [[1, 0]]}`, errShape, "2 target tokens but 1 rows of weights"},
		{"too many columns", `{` + tok + `, "weights": [[1, 0, 0], [0, 1, 0]]}`, errShape, `2 source tokens but weights row 0 ("x") has 3 columns`},
		{"bare NaN", `{` + tok + `, "weights": [[NaN, 0], [0, 1]]}`, errNotFinite, "line 1, column 59: NaN is not a finite number"},
		{"Infinity", `{` + tok + `, "weights": [[1, 0], [0, Infinity]]}`, errNotFinite, "Infinity"},
		{"overflow", `{` + tok + `, "weights": [[1, 0], [0, 1e300]]}`, errNotFinite, "weights[1][1] = 1e+300"},
		{"out of range", `{` + tok + `, "weights": [[1.5, 0], [0, 1]]}`, errInput, `"x" for "a" (row 0, column 0) is 1.5, outside [0, 1]`},
		{"negative", `{` + tok + `, "weights": [[1, 0], [-0.25, 1]]}`, errInput, "is -0.25, outside [0, 1]"},
		{"no tokens", `{"source": [], "target": ["x"], "weights": [[]]}`, errInput, `"source": no tokens`},
		{"empty token", `{"source": ["a", " "], "target": ["x"], "weights": [[1, 0]]}`, errInput, "source[1] is an empty token"},
		{"nothing to draw", `{` + tok + `}`, errInput, "no weights"},
		{"both", `{` + tok + `, "weights": [[1, 0], [0, 1]], "queries": [[1], [1]]}`, errInput, "not both"},
		{"keys per token", `{` + tok + `, "queries": [[1], [1]], "keys": [[1]]}`, errShape, "2 source tokens but 1 keys"},
		{"queries per token", `{` + tok + `, "queries": [[1]], "keys": [[1], [0]]}`, errShape, "2 target tokens but 1 queries"},
		{"ragged keys", `{` + tok + `, "queries": [[1], [1]], "keys": [[1], [0, 1]]}`, errShape, `"keys" is ragged: row 1 has 2 numbers, want 1`},
		{"query size", `{` + tok + `, "queries": [[1, 0], [1, 0]], "keys": [[1], [0]]}`, errShape, "query"},
		{"unknown scorer", `{` + tok + `, "scorer": "cosine", "queries": [[1], [1]], "keys": [[1], [0]]}`, errInput, `unknown scorer "cosine"`},
		{"missing parameter", `{` + tok + `, "scorer": "general", "queries": [[1], [1]], "keys": [[1], [0]]}`, errInput, `scorer "general" needs "W"`},
		{"NaN from the engine", `{` + tok + `, "scorer": "dot", "queries": [[3e38], [1]], "keys": [[3e38], [0]]}`, errNotFinite, "is NaN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseHeatmap([]byte(c.doc))
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v containing %q", err, c.kind, c.msg)
			}
			dir := t.TempDir()
			in := writeInput(t, c.doc)
			var stdout, stderr bytes.Buffer
			code := run([]string{"heatmap", "--svg", filepath.Join(dir, "h.svg"), "--png", filepath.Join(dir, "h.png"), in}, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), c.msg) || !strings.Contains(stderr.String(), in) {
				t.Errorf("exit %d, stderr %q", code, stderr.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %d files for a malformed input", len(entries))
			}
		})
	}
}

func TestHeatmapFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"heatmap", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("heatmap --help = %d", code)
	}
	for _, want := range []string{"-svg", "-png", "-title", "INPUT", "queries", "scorer"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("heatmap --help lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, args := range [][]string{{"heatmap", "a.json", "b.json"}, {"heatmap", "--svg", "", "--png", ""}, {"heatmap", "--frob"}} {
		stderr.Reset()
		if code := run(args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: attention heatmap") {
			t.Errorf("run(%q) = %d, stderr %q", args, code, stderr.String())
		}
	}
	// A grid too large to draw is refused before anything is written.
	var big strings.Builder
	big.WriteString(`{"source": [`)
	for i := range 300 {
		if i > 0 {
			big.WriteString(",")
		}
		big.WriteString(`"t` + strconv.Itoa(i) + `"`)
	}
	big.WriteString(`], "target": ["x"], "weights": [[1` + strings.Repeat(",0", 299) + `]]}`)
	stderr.Reset()
	dir := t.TempDir()
	if code := run([]string{"heatmap", "--svg", filepath.Join(dir, "a.svg"), writeInput(t, big.String())}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "1 target × 300 source tokens make a") {
		t.Errorf("oversized grid: %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "a.svg")); err == nil {
		t.Error("oversized grid: wrote the SVG")
	}
	// A title too wide is named as the cause, not the grid.
	stderr.Reset()
	if code := run([]string{"heatmap", "--svg", filepath.Join(dir, "a.svg"), "--title", strings.Repeat("W", 1000)}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "the title makes the picture") {
		t.Errorf("title too wide: %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "a.svg")); err == nil {
		t.Error("title too wide: wrote the SVG")
	}
	stderr.Reset()
	if code := run([]string{"heatmap", filepath.Join(t.TempDir(), "missing.json")}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "missing.json") {
		t.Errorf("missing file: %d, %q", code, stderr.String())
	}
}

// TestHeatmapInChromium renders the SVG in headless Chromium, when it is
// installed, and checks that the browser draws the cells in the scale's
// colours where the layout puts them.
func TestHeatmapInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (Debian: apt-get install chromium)")
	}
	grid, desc, err := translate()
	if err != nil {
		t.Fatal(err)
	}
	svg, _, _ := heatmapFiles(t)
	dir := t.TempDir()
	in, shot := filepath.Join(dir, "h.svg"), filepath.Join(dir, "shot.png")
	if err := os.WriteFile(in, svg, 0o644); err != nil {
		t.Fatal(err)
	}
	l := layoutHeatmap(grid, "Attention weights (toy translation, score "+desc+")")
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size="+strconv.Itoa(l.width)+","+strconv.Itoa(l.height), "--screenshot="+shot, in)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range grid.rows {
		for j := range grid.cols {
			w := grid.weights[i*len(grid.cols)+j]
			got := rgba(img.At(l.gridX+j*l.cellW+5, l.gridY+i*l.cellH+5))
			if diff(got, scaleColour(w)) > 6 {
				t.Errorf("chromium drew cell %d,%d as %v, want %v", i, j, got, scaleColour(w))
			}
		}
	}
}

// The README's example input holds the toy translation's states: the
// engine run on it gives the demo's weights.
func TestHeatmapExampleFile(t *testing.T) {
	data, err := os.ReadFile("../../docs/heatmap-input.json")
	if err != nil {
		t.Fatal(err)
	}
	got, desc, err := parseHeatmap(data)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := translate()
	if err != nil {
		t.Fatal(err)
	}
	if desc != "score scaled-dot" || strings.Join(got.rows, " ") != strings.Join(want.rows, " ") || strings.Join(got.cols, " ") != strings.Join(want.cols, " ") {
		t.Fatalf("got %q, %v × %v", desc, got.rows, got.cols)
	}
	for i := range want.weights {
		if got.weights[i] != want.weights[i] {
			t.Fatalf("weight %d = %v, want %v", i, got.weights[i], want.weights[i])
		}
	}
}

// hostileInputs are small files that ask for far more than they hold: a
// grid of 100,000 × 100,000 tokens (40 GB of weights, as many queries), and
// a ragged matrix whose first row is long and whose other rows are many.
func hostileInputs() []struct{ name, doc, msg string } {
	const n = 100_000
	var toks, ones strings.Builder
	for i := range n {
		if i > 0 {
			toks.WriteString(",")
			ones.WriteString(",")
		}
		toks.WriteString(`"t` + strconv.Itoa(i) + `"`)
		ones.WriteString("[1]")
	}
	grid := `"source": [` + toks.String() + `], "target": [` + toks.String() + `]`
	const m = 200_000
	ragged := "[[0" + strings.Repeat(",0", m-1) + "]" + strings.Repeat(",[0]", m-1) + "]"
	tooLarge := "too large to draw: 100000 target × 100000 source tokens make a picture"
	return []struct{ name, doc, msg string }{
		{"queries and keys", `{` + grid + `, "queries": [` + ones.String() + `], "keys": [` + ones.String() + `]}`, tooLarge},
		{"weights", `{` + grid + `, "weights": [` + ones.String() + `]}`, tooLarge},
		{"ragged W", `{"source": ["a"], "target": ["x"], "scorer": "general", "queries": [[1]], "keys": [[1]], "W": ` + ragged + `}`,
			`"W" is ragged: row 1 has 1 numbers, want 200000`},
	}
}

// An input that asks for a huge grid or matrix is refused before anything
// in proportion to it is allocated or computed. Each runs first in a child
// process with its memory limited, so an unbounded allocation fails the
// test instead of ending the tests; once that is refused, the same input
// runs here, where it must allocate little more than its own size.
func TestHeatmapHugeInput(t *testing.T) {
	// Ample for the runtime's reservations and the input, a fraction of
	// what the inputs ask for.
	const limit = 2 << 30
	// encoding/json alone allocates some 20 bytes per byte of these inputs.
	const maxAlloc = 100 << 20
	for _, c := range hostileInputs() {
		t.Run(c.name, func(t *testing.T) {
			in := writeInput(t, c.doc)
			dir := t.TempDir()
			args := []string{"heatmap", "--svg", filepath.Join(dir, "h.svg"), "--png", filepath.Join(dir, "h.png"), in}
			code, stderr, ran := runLimited(t, limit, args...)
			if ran && (code != 1 || !strings.Contains(stderr, c.msg) || !strings.Contains(stderr, in)) {
				if len(stderr) > 2000 {
					stderr = stderr[:2000] + "…"
				}
				t.Fatalf("exit %d, want 1 with an error containing %q; stderr:\n%s", code, c.msg, stderr)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			var errOut bytes.Buffer
			code = run(args, io.Discard, &errOut)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if code != 1 || !strings.Contains(errOut.String(), c.msg) {
				t.Fatalf("in process: exit %d, stderr %q", code, errOut.String())
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxAlloc {
				t.Errorf("allocated %d MB for a %d MB input, want at most %d MB", alloc>>20, len(c.doc)>>20, maxAlloc>>20)
			}
			t.Logf("%d MB input: refused in %v, %d MB allocated", len(c.doc)>>20, took, (after.TotalAlloc-before.TotalAlloc)>>20)
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("wrote %d files", len(entries))
			}
		})
	}
}

// A token too long to measure is refused, not drawn: font.MeasureString
// sums advances in 26.6 fixed point, which wraps, so this one (a little
// over 2³² units of advance) would measure a few pixels wide and pass for
// a narrow column.
func TestHeatmapLongToken(t *testing.T) {
	adv, ok := face(labelSize, false).GlyphAdvance('W')
	if !ok || adv <= 0 {
		t.Fatalf("advance of W: %v, %v", adv, ok)
	}
	n := int((1<<32)/int64(adv)) + 1
	long := strings.Repeat("W", n)
	dir := t.TempDir()
	in := writeInput(t, `{"source": ["a", "`+long+`"], "target": ["x"], "weights": [[0.5, 0.5]]}`)
	var stderr bytes.Buffer
	code := run([]string{"heatmap", "--svg", filepath.Join(dir, "h.svg"), "--png", "", in}, io.Discard, &stderr)
	if want := "source[1] is " + strconv.Itoa(n) + " characters long"; code != 1 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, want 1 with %q; stderr %.300q", code, want, stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("wrote %d files", len(entries))
	}
}
