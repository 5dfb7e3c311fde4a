package attention

import (
	"fmt"
	"math"
)

// A Scorer is one of the score functions score(s, h) of the decoder state s
// (the query) against an encoder state h (a key). Construct one with
// ScoreDot, ScoreScaledDot, ScoreDotWithScale, ScoreGeneral, ScoreAdditive
// or ScoreConcat, then hand it to NewMemory.
//
// Whatever depends only on the encoder states (U·h for additive, W·h for
// general, the key half of concat) is computed once in NewMemory; a decoder
// step then costs O(T·d) for T keys.
type Scorer interface {
	fmt.Stringer
	// bind checks the scorer against key dimension dk and returns the
	// query dimension and the encoder-side projection (nil if none).
	bind(op string, keys Matrix) (dq int, proj []float32, projCols int, err error)
	// scratch returns how many float32 of workspace score needs.
	scratch(m *Memory) int
	// score writes the scores of keys [0, len(dst)) against q.
	score(dst []float32, m *Memory, q, tmp []float32)
}

// ScoreDot is the dot-product score sᵀh (Luong "dot"). Query and keys must
// have the same dimension.
func ScoreDot() Scorer { return dotScorer{scale: 1, name: "dot"} }

// ScoreScaledDot is sᵀh/√d with d the key dimension, the scaled form that
// keeps scores from sharpening the softmax as d grows.
func ScoreScaledDot() Scorer { return dotScorer{name: "scaled-dot"} }

// ScoreDotWithScale is scale·sᵀh. The scale must be finite.
func ScoreDotWithScale(scale float32) (Scorer, error) {
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) {
		return nil, argErr("ScoreDotWithScale", "scale %v is not finite", scale)
	}
	return dotScorer{scale: scale, fixed: true, name: fmt.Sprintf("dot×%g", scale)}, nil
}

type dotScorer struct {
	scale float32 // 0 and !fixed: 1/√d, resolved in scale
	fixed bool
	name  string
}

func (s dotScorer) String() string { return s.name }

func (s dotScorer) bind(op string, keys Matrix) (int, []float32, int, error) {
	return keys.cols, nil, 0, nil
}

func (s dotScorer) factor(d int) float32 {
	if s.fixed || s.scale == 1 {
		return s.scale
	}
	if d == 0 {
		return 1
	}
	return float32(1 / math.Sqrt(float64(d)))
}

func (s dotScorer) scratch(m *Memory) int {
	if s.factor(m.keys.cols) == 1 {
		return 0
	}
	return m.keys.cols
}

func (s dotScorer) score(dst []float32, m *Memory, q, tmp []float32) {
	if f := s.factor(m.keys.cols); f != 1 {
		// Scaling the query (d products) instead of the scores (T products)
		// costs less whenever T > d, and is exact for powers of two.
		tmp = tmp[:len(q)]
		for j, v := range q {
			tmp[j] = f * v
		}
		q = tmp
	}
	scoreRows(dst, m.keys.rowsFrom(0), m.keys.stride, q)
}

// ScoreGeneral is the bilinear ("general") score sᵀ W h. W has one row per
// query dimension and one column per key dimension. NewMemory computes W·h
// for every key once, so a step is one pass of dot products.
func ScoreGeneral(W Matrix) (Scorer, error) {
	if W.rows == 0 {
		return nil, argErr("ScoreGeneral", "W has no rows")
	}
	return generalScorer{w: W}, nil
}

type generalScorer struct{ w Matrix }

func (s generalScorer) String() string { return "general" }

func (s generalScorer) bind(op string, keys Matrix) (int, []float32, int, error) {
	if s.w.cols != keys.cols {
		return 0, nil, 0, shapeErr(op, "W.Cols", s.w.cols, keys.cols, "key dimension")
	}
	return s.w.rows, project(s.w, keys), s.w.rows, nil
}

func (s generalScorer) scratch(*Memory) int { return 0 }

func (s generalScorer) score(dst []float32, m *Memory, q, _ []float32) {
	scoreRows(dst, m.proj, m.projCols, q)
}

// ScoreAdditive is the additive (Bahdanau) score vᵀ tanh(W s + U h). W is
// da×ds (ds the query dimension), U is da×dk (dk the key dimension) and v
// has length da. NewMemory computes U·h for every key once; a step computes
// W·s once and then one tanh row per key.
func ScoreAdditive(W, U Matrix, v []float32) (Scorer, error) {
	const op = "ScoreAdditive"
	if len(v) == 0 {
		return nil, argErr(op, "v is empty")
	}
	if W.rows != len(v) {
		return nil, shapeErr(op, "W.Rows", W.rows, len(v), "len(v)")
	}
	if U.rows != len(v) {
		return nil, shapeErr(op, "U.Rows", U.rows, len(v), "len(v)")
	}
	return additiveScorer{w: W, u: U, v: v, name: "additive"}, nil
}

// ScoreConcat is Luong's concat score vᵀ tanh(W [s; h]): W is
// da×(ds+dk), its first ds columns multiply the query and the rest the key,
// so it is the additive score with W and U side by side in one matrix.
func ScoreConcat(W Matrix, v []float32) (Scorer, error) {
	const op = "ScoreConcat"
	if len(v) == 0 {
		return nil, argErr(op, "v is empty")
	}
	if W.rows != len(v) {
		return nil, shapeErr(op, "W.Rows", W.rows, len(v), "len(v)")
	}
	return additiveScorer{w: W, v: v, concat: true, name: "concat"}, nil
}

type additiveScorer struct {
	w, u   Matrix
	v      []float32
	concat bool // u is the right part of w, split once the key dim is known
	name   string
}

func (s additiveScorer) String() string { return s.name }

// split returns the query and key parts of the weights for key dim dk.
func (s additiveScorer) split(dk int) (w, u Matrix) {
	if !s.concat {
		return s.w, s.u
	}
	ds := s.w.cols - dk
	return s.w.colsFrom(0, ds), s.w.colsFrom(ds, dk)
}

func (s additiveScorer) bind(op string, keys Matrix) (int, []float32, int, error) {
	if s.concat && s.w.cols <= keys.cols {
		return 0, nil, 0, shapeErr(op, "W.Cols", s.w.cols, keys.cols+1, "more than the key dimension: query columns then key columns")
	}
	w, u := s.split(keys.cols)
	if u.cols != keys.cols {
		return 0, nil, 0, shapeErr(op, "U.Cols", u.cols, keys.cols, "key dimension")
	}
	return w.cols, project(u, keys), len(s.v), nil
}

func (s additiveScorer) scratch(*Memory) int {
	return (1 + 2*additiveRows(len(s.v))) * len(s.v)
}

func (s additiveScorer) score(dst []float32, m *Memory, q, tmp []float32) {
	w, _ := s.split(m.keys.cols)
	ws := tmp[:len(s.v)]
	scoreRows(ws, w.rowsFrom(0), w.stride, q)
	additiveScores(dst, m.proj, m.projCols, ws, s.v, tmp[len(s.v):])
}

// project returns P = K·Aᵀ packed (T rows of A.Rows): row i is A·K[i].
// It runs once per source sequence.
func project(a, keys Matrix) []float32 {
	p := make([]float32, keys.rows*a.rows)
	for i := 0; i < keys.rows; i++ {
		scoreRows(p[i*a.rows:(i+1)*a.rows], a.rowsFrom(0), a.stride, keys.Row(i))
	}
	return p
}
