package attention

import (
	"fmt"
	"math"

	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/scalar"
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
	// bind checks the scorer against the keys and returns the query
	// dimension and the matrix a whose products a·K[i] with the keys
	// NewMemory stores as projections (a zero Matrix if none).
	bind(op string, keys Matrix) (dq int, a Matrix, err error)
	// scratch returns how many float32 of workspace prepare and score need.
	scratch(m *Memory) int
	// prepare computes, once a step, what score needs from query q, in
	// the head of tmp, and returns it with the rest of tmp.
	prepare(m *Memory, q, tmp []float32) (pq, rest []float32)
	// prepared returns len(pq), the same for every query, so that
	// AttendMany can keep the prepared queries of many steps side by side.
	prepared(m *Memory) int
	// score writes the scores of keys [i, i+len(dst)) given prepare's pq.
	score(dst []float32, m *Memory, i int, pq, tmp []float32)
	// operands returns the views the scorer holds (zero Matrix for none).
	operands() [3]operand
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

func (s dotScorer) bind(op string, keys Matrix) (int, Matrix, error) {
	return keys.cols, Matrix{}, nil
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
	if s.factor(m.keys.cols) == 1 && !m.rotated() && m.channelKeys() == nil {
		return 0
	}
	return m.keys.cols
}

// prepare scales the query, rotates it where the keys are (an I8
// cache's, see KVCache), and multiplies it by an I8 cache's per-channel
// key scales (see WithScales).
func (s dotScorer) prepare(m *Memory, q, tmp []float32) ([]float32, []float32) {
	f := s.factor(m.keys.cols)
	ks := m.channelKeys()
	if f == 1 && !m.rotated() && ks == nil {
		return q, tmp
	}
	// Scaling the query (d products) instead of the scores (T products)
	// costs less whenever T > d, and is exact for powers of two.
	sq := tmp[:len(q)]
	for j, v := range q {
		sq[j] = f * v
	}
	if m.rotated() {
		kernel.RotateRows(sq, len(sq))
	}
	if ks != nil {
		mulChannels(sq, ks, 1)
	}
	return sq, tmp[len(q):]
}

// channelKeys returns the per-channel key scales a dot scorer folds into
// its queries (see WithScales), nil for other Memories and scorers (those
// that project the keys read them scaled, see cacheHead.key).
func (m *Memory) channelKeys() []float32 {
	if _, dot := m.scorer.(dotScorer); !dot || m.kv == nil || m.keys.cols == 0 {
		return nil
	}
	return m.kv.ks
}

// scaleContexts multiplies each context row of ctx by an I8 cache's
// per-channel value scales (see WithScales), if it has them.
func (m *Memory) scaleContexts(ctx []float32) {
	if m.kv == nil || m.kv.vs == nil || m.values.cols == 0 {
		return
	}
	for i := 0; i+m.values.cols <= len(ctx); i += m.values.cols {
		mulChannels(ctx[i:i+m.values.cols], m.kv.vs, 1)
	}
}

// rotated reports whether the Memory's dot products are with an I8
// cache's rotated key rows, which take rotated queries (the scorers that
// project the keys read them rotated back, see cacheHead.key).
func (m *Memory) rotated() bool {
	_, dot := m.scorer.(dotScorer)
	return dot && m.kv != nil && m.kv.rot && m.keys.cols > 0
}

func (s dotScorer) prepared(m *Memory) int { return m.keys.cols }

// score needs no special case for keys of dimension 0: the rows have
// stride 0 and every dot product is 0.
func (s dotScorer) score(dst []float32, m *Memory, i int, q, _ []float32) {
	if m.kv != nil {
		m.kv.scoreKeys(dst, i, q)
		return
	}
	kernel.ScoreRows(dst, m.keys.rowsFrom(i), m.keys.stride, q)
}

func (s dotScorer) operands() [3]operand { return [3]operand{} }

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

func (s generalScorer) bind(op string, keys Matrix) (int, Matrix, error) {
	if s.w.cols != keys.cols {
		return 0, Matrix{}, shapeErr(op, "W.Cols", s.w.cols, keys.cols, "key dimension")
	}
	return s.w.rows, s.w, nil
}

// With keys of dimension 0 every projection W·h is the zero vector, stored
// nowhere, and every score is qᵀ0: one float of scratch holds it.
func (s generalScorer) scratch(m *Memory) int {
	if m.keys.cols == 0 {
		return 1
	}
	return 0
}

func (s generalScorer) prepare(m *Memory, q, tmp []float32) ([]float32, []float32) {
	if m.keys.cols == 0 {
		tmp[0] = zeroDot(q)
		return tmp[:1], tmp[1:]
	}
	return q, tmp
}

func (s generalScorer) prepared(m *Memory) int {
	if m.keys.cols == 0 {
		return 1
	}
	return m.dq
}

func (s generalScorer) score(dst []float32, m *Memory, i int, q, _ []float32) {
	if m.keys.cols == 0 {
		fillWith(dst, q[0])
		return
	}
	kernel.ScoreRows(dst, m.proj[i*m.projCols:], m.projCols, q)
}

func (s generalScorer) operands() [3]operand { return [3]operand{{"the scorer's W", s.w}} }

// zeroDot returns qᵀ0 as a dot product kernel computes it: +0, or NaN if q
// holds a NaN or an infinity.
func zeroDot(q []float32) float32 {
	var z float32
	for _, v := range q {
		z += v * 0
	}
	return z
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
	// da is what two of W.Rows, U.Rows and len(v) agree on; the error names
	// the third. W sets it when all three differ.
	switch {
	case W.rows == U.rows && len(v) != W.rows:
		return nil, shapeErr(op, "len(v)", len(v), W.rows, "W.Rows and U.Rows")
	case U.rows == len(v) && W.rows != len(v):
		return nil, shapeErr(op, "W.Rows", W.rows, len(v), "len(v) and U.Rows")
	case U.rows != W.rows:
		return nil, shapeErr(op, "U.Rows", U.rows, W.rows, "W.Rows")
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
	if len(v) != W.rows {
		return nil, shapeErr(op, "len(v)", len(v), W.rows, "W.Rows")
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

func (s additiveScorer) bind(op string, keys Matrix) (int, Matrix, error) {
	if s.concat && s.w.cols <= keys.cols {
		return 0, Matrix{}, shapeErr(op, "W.Cols", s.w.cols, keys.cols+1, "more than the key dimension: query columns then key columns")
	}
	w, u := s.split(keys.cols)
	if u.cols != keys.cols {
		return 0, Matrix{}, shapeErr(op, "U.Cols", u.cols, keys.cols, "key dimension")
	}
	return w.cols, u, nil
}

// The workspace holds W·s (da floats), then additiveScores' blocks; with
// keys of dimension 0, where every U·h is the zero vector and every score
// vᵀtanh(W·s), one float for that score instead.
func (s additiveScorer) scratch(m *Memory) int {
	da := len(s.v)
	if m.keys.cols == 0 {
		return da + 1
	}
	return (1 + 2*kernel.AdditiveRows(da)) * da
}

func (s additiveScorer) prepare(m *Memory, q, tmp []float32) ([]float32, []float32) {
	w, _ := s.split(m.keys.cols)
	da := len(s.v)
	ws := tmp[:da]
	kernel.ScoreRows(ws, w.rowsFrom(0), w.stride, q)
	if m.keys.cols == 0 {
		var c float32
		for j, v := range s.v {
			c += v * scalar.Tanh32(ws[j])
		}
		tmp[da] = c
		return tmp[da : da+1], nil
	}
	return ws, tmp[da:]
}

func (s additiveScorer) prepared(m *Memory) int {
	if m.keys.cols == 0 {
		return 1
	}
	return len(s.v)
}

func (s additiveScorer) score(dst []float32, m *Memory, i int, ws, tmp []float32) {
	if m.keys.cols == 0 {
		fillWith(dst, ws[0])
		return
	}
	kernel.AdditiveScores(dst, m.proj[i*m.projCols:], m.projCols, ws, s.v, tmp)
}

func (s additiveScorer) operands() [3]operand {
	v := Matrix{rows: 1, cols: len(s.v), stride: len(s.v), data: s.v}
	if s.concat {
		return [3]operand{{"the scorer's W", s.w}, {"the scorer's v", v}}
	}
	return [3]operand{{"the scorer's W", s.w}, {"the scorer's U", s.u}, {"the scorer's v", v}}
}
