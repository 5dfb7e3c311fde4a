package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/glancelab/attention"
)

// heatmapInput is the JSON a heatmap is drawn from: the tokens and either
// the weights themselves or the vectors to compute them from.
//
//	{"source": ["the", "cat"], "target": ["le", "chat"],
//	 "weights": [[0.9, 0.1], [0.2, 0.8]]}
//
//	{"source": [...], "target": [...], "scorer": "scaled-dot",
//	 "queries": [[...], ...],  one decoder state per target token
//	 "keys": [[...], ...],     one encoder state per source token
//	 "values": [[...], ...],   optional, the keys if absent
//	 "W": [[...]], "U": [[...]], "v": [...]}  the scorer's parameters
//
// Scorers: dot, scaled-dot, general (W), additive (W, U, v), concat (W, v).
type heatmapInput struct {
	Source  []string    `json:"source"`
	Target  []string    `json:"target"`
	Weights [][]float64 `json:"weights"`
	Scorer  string      `json:"scorer"`
	Queries [][]float64 `json:"queries"`
	Keys    [][]float64 `json:"keys"`
	Values  [][]float64 `json:"values"`
	W       [][]float64 `json:"W"`
	U       [][]float64 `json:"U"`
	V       []float64   `json:"v"`
}

// The ways an input can be wrong, for errors.Is; each error names the
// field, the row and the sizes involved.
var (
	errBadJSON   = errors.New("bad JSON")
	errShape     = errors.New("size mismatch")
	errNotFinite = errors.New("not a finite number")
	errInput     = errors.New("invalid input")
)

// parseHeatmap reads a heatmap's JSON and returns its weight grid and a
// description (the scorer, when the engine computed the weights).
func parseHeatmap(data []byte) (weightGrid, string, error) {
	var in heatmapInput
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return weightGrid{}, "", jsonError(data, err)
	}
	if dec.More() {
		return weightGrid{}, "", fmt.Errorf("%w: more than one JSON value in the file", errBadJSON)
	}
	if err := tokens("source", in.Source); err != nil {
		return weightGrid{}, "", err
	}
	if err := tokens("target", in.Target); err != nil {
		return weightGrid{}, "", err
	}
	// The tokens alone fix the picture's size, so a grid too large to draw
	// is refused before its weights are read or computed: memory and work
	// stay in proportion to what can be drawn, not to the token counts.
	if err := checkPicture(weightGrid{rows: in.Target, cols: in.Source}, ""); err != nil {
		return weightGrid{}, "", err
	}
	vectors := in.Queries != nil || in.Keys != nil || in.Values != nil || in.Scorer != ""
	switch {
	case in.Weights != nil && vectors:
		return weightGrid{}, "", fmt.Errorf("%w: give either weights or queries, keys and a scorer, not both", errInput)
	case in.Weights != nil:
		g, err := givenWeights(in)
		return g, "", err
	case vectors:
		return computedWeights(in)
	}
	return weightGrid{}, "", fmt.Errorf("%w: no weights, and no queries and keys to compute them from", errInput)
}

func tokens(field string, ts []string) error {
	if len(ts) == 0 {
		return fmt.Errorf("%w: %q: no tokens", errInput, field)
	}
	for i, t := range ts {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("%w: %s[%d] is an empty token", errInput, field, i)
		}
	}
	return nil
}

// jsonError turns a decoding error into one that says where the problem
// is, and recognises the NaN and Infinity that some encoders write.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// The offset counts the offending byte as read.
		line, col := position(data, syn.Offset-1)
		rest := string(data[max(syn.Offset-1, 0):])
		for _, bad := range []string{"NaN", "Infinity", "-Infinity", "inf", "nan"} {
			if strings.HasPrefix(rest, bad) {
				return fmt.Errorf("%w: line %d, column %d: %s is %w: JSON has no NaN or infinity, and weights must be finite", errBadJSON, line, col, bad, errNotFinite)
			}
		}
		return fmt.Errorf("%w: line %d, column %d: %v", errBadJSON, line, col, syn)
	case errors.As(err, &typ):
		line, col := position(data, typ.Offset)
		return fmt.Errorf("%w: line %d, column %d: %q holds a JSON %s where %s belongs", errBadJSON, line, col, typ.Field, typ.Value, describeType(typ.Type.String()))
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: the file is empty", errBadJSON)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the JSON ends early: a bracket, brace or string is not closed", errBadJSON)
	}
	return fmt.Errorf("%w: %v", errBadJSON, err)
}

func describeType(t string) string {
	switch t {
	case "float64":
		return "a number"
	case "string":
		return "a string"
	case "[]float64":
		return "a list of numbers"
	case "[][]float64":
		return "a list of rows of numbers"
	case "[]string":
		return "a list of strings"
	}
	return t
}

// position converts a byte offset into a line and column, both from 1.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// matrix checks that m has rows rows (rows < 0: any) of cols numbers
// (cols < 0: whatever the first row has), all finite, and returns it as a
// Matrix.
func matrix(field string, m [][]float64, rows, cols int) (attention.Matrix, error) {
	if m == nil {
		return attention.Matrix{}, fmt.Errorf("%w: %q is missing", errInput, field)
	}
	if rows >= 0 && len(m) != rows {
		return attention.Matrix{}, fmt.Errorf("%w: %q has %d rows, want %d", errShape, field, len(m), rows)
	}
	if len(m) == 0 {
		return attention.Matrix{}, fmt.Errorf("%w: %q has no rows", errShape, field)
	}
	if cols < 0 {
		cols = len(m[0])
	}
	if cols == 0 {
		return attention.Matrix{}, fmt.Errorf("%w: %q has empty rows", errShape, field)
	}
	// Every row is checked before the copy is allocated, whose size would
	// otherwise be the row count times the first row's length, however
	// short the other rows are.
	for i, row := range m {
		if len(row) != cols {
			return attention.Matrix{}, fmt.Errorf("%w: %q is ragged: row %d has %d numbers, want %d", errShape, field, i, len(row), cols)
		}
	}
	flat := make([]float32, 0, len(m)*cols)
	for i, row := range m {
		for j, x := range row {
			f := float32(x)
			if math.IsNaN(x) || math.IsInf(float64(f), 0) {
				return attention.Matrix{}, fmt.Errorf("%w: %s[%d][%d] = %v", errNotFinite, field, i, j, x)
			}
			flat = append(flat, f)
		}
	}
	return attention.NewMatrix(len(m), cols, flat)
}

// givenWeights checks weights given directly: one row per target token,
// one column per source token, each in [0, 1].
func givenWeights(in heatmapInput) (weightGrid, error) {
	if len(in.Weights) != len(in.Target) {
		return weightGrid{}, fmt.Errorf("%w: %d target tokens but %d rows of weights (one row per target token)", errShape, len(in.Target), len(in.Weights))
	}
	for i, row := range in.Weights {
		if len(row) != len(in.Source) {
			return weightGrid{}, fmt.Errorf("%w: %d source tokens but weights row %d (%q) has %d columns", errShape, len(in.Source), i, in.Target[i], len(row))
		}
	}
	m, err := matrix("weights", in.Weights, len(in.Target), len(in.Source))
	if err != nil {
		return weightGrid{}, err
	}
	g := weightGrid{rows: in.Target, cols: in.Source}
	for i := range m.Rows() {
		g.weights = append(g.weights, m.Row(i)...)
	}
	return g, checkWeights(g)
}

// checkWeights rejects weights outside [0, 1], naming the cell.
func checkWeights(g weightGrid) error {
	for k, w := range g.weights {
		i, j := k/len(g.cols), k%len(g.cols)
		if w != w {
			return fmt.Errorf("%w: the weight of %q for %q (row %d, column %d) is NaN", errNotFinite, g.rows[i], g.cols[j], i, j)
		}
		if w < 0 || w > 1 {
			return fmt.Errorf("%w: the weight of %q for %q (row %d, column %d) is %v, outside [0, 1]", errInput, g.rows[i], g.cols[j], i, j, w)
		}
	}
	return nil
}

// computedWeights runs the engine: a Memory over the keys and values and
// one Attend per query.
func computedWeights(in heatmapInput) (weightGrid, string, error) {
	keys, err := matrix("keys", in.Keys, len(in.Source), -1)
	if err != nil {
		if errors.Is(err, errShape) && in.Keys != nil && len(in.Keys) != len(in.Source) {
			err = fmt.Errorf("%w: %d source tokens but %d keys (one per source token)", errShape, len(in.Source), len(in.Keys))
		}
		return weightGrid{}, "", err
	}
	values := keys
	if in.Values != nil {
		if values, err = matrix("values", in.Values, len(in.Source), -1); err != nil {
			return weightGrid{}, "", err
		}
	}
	queries, err := matrix("queries", in.Queries, len(in.Target), -1)
	if err != nil {
		if errors.Is(err, errShape) && in.Queries != nil && len(in.Queries) != len(in.Target) {
			err = fmt.Errorf("%w: %d target tokens but %d queries (one per target token)", errShape, len(in.Target), len(in.Queries))
		}
		return weightGrid{}, "", err
	}
	scorer, err := heatmapScorer(in)
	if err != nil {
		return weightGrid{}, "", err
	}
	mem, err := attention.NewMemory(scorer, keys, values)
	if err != nil {
		return weightGrid{}, "", fmt.Errorf("%w: %v", errShape, err)
	}
	g := weightGrid{rows: in.Target, cols: in.Source, weights: make([]float32, len(in.Target)*len(in.Source))}
	ctx := make([]float32, mem.ValueDim())
	var ws attention.Workspace
	for i := range queries.Rows() {
		row := g.weights[i*mem.Len() : (i+1)*mem.Len()]
		if err := mem.Attend(ctx, row, queries.Row(i), &ws); err != nil {
			return weightGrid{}, "", fmt.Errorf("%w: query %d (%q): %v", errShape, i, in.Target[i], err)
		}
	}
	if err := checkWeights(g); err != nil {
		return weightGrid{}, "", fmt.Errorf("%w (an infinite score: are the vectors too large?)", err)
	}
	return g, "score " + scorer.String(), nil
}

func heatmapScorer(in heatmapInput) (attention.Scorer, error) {
	need := func(names ...string) error {
		for _, n := range names {
			missing := (n == "W" && in.W == nil) || (n == "U" && in.U == nil) || (n == "v" && in.V == nil)
			if missing {
				return fmt.Errorf("%w: scorer %q needs %q", errInput, in.Scorer, n)
			}
		}
		return nil
	}
	vec := func() ([]float32, error) {
		v := make([]float32, len(in.V))
		for i, x := range in.V {
			if math.IsNaN(x) || math.IsInf(float64(float32(x)), 0) {
				return nil, fmt.Errorf("%w: v[%d] = %v", errNotFinite, i, x)
			}
			v[i] = float32(x)
		}
		return v, nil
	}
	wrap := func(s attention.Scorer, err error) (attention.Scorer, error) {
		if err != nil {
			return nil, fmt.Errorf("%w: scorer %q: %v", errShape, in.Scorer, err)
		}
		return s, nil
	}
	switch in.Scorer {
	case "dot":
		return attention.ScoreDot(), nil
	case "scaled-dot", "":
		return attention.ScoreScaledDot(), nil
	case "general":
		if err := need("W"); err != nil {
			return nil, err
		}
		W, err := matrix("W", in.W, -1, -1)
		if err != nil {
			return nil, err
		}
		return wrap(attention.ScoreGeneral(W))
	case "additive":
		if err := need("W", "U", "v"); err != nil {
			return nil, err
		}
		W, err := matrix("W", in.W, -1, -1)
		if err != nil {
			return nil, err
		}
		U, err := matrix("U", in.U, -1, -1)
		if err != nil {
			return nil, err
		}
		v, err := vec()
		if err != nil {
			return nil, err
		}
		return wrap(attention.ScoreAdditive(W, U, v))
	case "concat":
		if err := need("W", "v"); err != nil {
			return nil, err
		}
		W, err := matrix("W", in.W, -1, -1)
		if err != nil {
			return nil, err
		}
		v, err := vec()
		if err != nil {
			return nil, err
		}
		return wrap(attention.ScoreConcat(W, v))
	}
	return nil, fmt.Errorf("%w: unknown scorer %q (want dot, scaled-dot, general, additive or concat)", errInput, in.Scorer)
}
