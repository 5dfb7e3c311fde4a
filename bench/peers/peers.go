package peers

import (
	"math"

	"github.com/viterin/vek/vek32"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glancelab/attention"
)

// The operations, one function per library, each writing into buffers
// its caller owns so that no timed call allocates (vek's _Into forms).

// dotNaive is the textbook loop.
func dotNaive(x, y []float32) float32 {
	var s float32
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func dotGonum(x, y []float32) float32 {
	return blas32.Dot(blas32.Vector{N: len(x), Inc: 1, Data: x}, blas32.Vector{N: len(y), Inc: 1, Data: y})
}

// expNaive rounds math.Exp, the standard library having no float32 exp.
func expNaive(dst, x []float32) {
	for i, v := range x {
		dst[i] = float32(math.Exp(float64(v)))
	}
}

// softmaxNaive is the max-subtracted softmax with math.Exp.
func softmaxNaive(dst, x []float32) {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	var sum float32
	for i, v := range x {
		dst[i] = float32(math.Exp(float64(v - m)))
		sum += dst[i]
	}
	for i := range dst {
		dst[i] /= sum
	}
}

// softmaxVek builds the softmax from vek's vector functions.
// vek refuses overlapping _Into arguments, so in place is its own case.
func softmaxVek(dst, x []float32) {
	if len(x) > 0 && &dst[0] == &x[0] {
		vek32.SubNumber_Inplace(dst, vek32.Max(x))
	} else {
		vek32.SubNumber_Into(dst, x, vek32.Max(x))
	}
	vek32.Exp_Inplace(dst)
	vek32.DivNumber_Inplace(dst, vek32.Sum(dst))
}

// step is one decoder step of scaled dot-product attention over T keys and
// values of dimension d (row-major), with its scratch space.
type step struct {
	T, d      int
	k, v, q   []float32
	scores    []float32
	ctx       []float32
	scale     float32
	mem       *attention.Memory
	workspace attention.Workspace
}

func newStep(k, v, q []float32, T, d int) *step {
	keys, err := attention.NewMatrix(T, d, k)
	if err != nil {
		panic(err)
	}
	values, err := attention.NewMatrix(T, d, v)
	if err != nil {
		panic(err)
	}
	mem, err := attention.NewMemory(attention.ScoreScaledDot(), keys, values)
	if err != nil {
		panic(err)
	}
	return &step{T: T, d: d, k: k, v: v, q: q, scores: make([]float32, T), ctx: make([]float32, d),
		scale: float32(1 / math.Sqrt(float64(d))), mem: mem}
}

func (s *step) attention() {
	if err := s.mem.Attend(s.ctx, nil, s.q, &s.workspace); err != nil {
		panic(err)
	}
}

func (s *step) naive() {
	for i := range s.T {
		s.scores[i] = s.scale * dotNaive(s.k[i*s.d:(i+1)*s.d], s.q)
	}
	softmaxNaive(s.scores, s.scores)
	clear(s.ctx)
	for i, w := range s.scores {
		row := s.v[i*s.d : (i+1)*s.d]
		for j := range s.ctx {
			s.ctx[j] += w * row[j]
		}
	}
}

// gonum: scores = scale·K q (Gemv), softmax with math.Exp, ctx = Vᵀ w
// (Gemv, transposed).
func (s *step) gonum() {
	K := blas32.General{Rows: s.T, Cols: s.d, Stride: s.d, Data: s.k}
	V := blas32.General{Rows: s.T, Cols: s.d, Stride: s.d, Data: s.v}
	sc := blas32.Vector{N: s.T, Inc: 1, Data: s.scores}
	blas32.Gemv(blas.NoTrans, s.scale, K, blas32.Vector{N: s.d, Inc: 1, Data: s.q}, 0, sc)
	softmaxNaive(s.scores, s.scores)
	blas32.Gemv(blas.Trans, 1, V, sc, 0, blas32.Vector{N: s.d, Inc: 1, Data: s.ctx})
}

// vek: scores = K q (MatMul with q as a d×1 matrix), scaled, vek's
// softmax, ctx = w V (MatMul with w as a 1×T matrix).
func (s *step) vek() {
	vek32.MatMul_Into(s.scores, s.k, s.q, s.d)
	vek32.MulNumber_Inplace(s.scores, s.scale)
	softmaxVek(s.scores, s.scores)
	vek32.MatMul_Into(s.ctx, s.scores, s.v, s.T)
}

// batch is multi-head scaled dot-product attention over [heads][T][d]
// (one batch entry, keys and queries of the same length, not causal), with
// the scratch the matrix-product formulations need.
type batch struct {
	heads, T, d int
	q, k, v     []float32
	out         []float32
	s           []float32 // T×T scores of one head
	kt          []float32 // Kᵀ of one head, for vek's MatMul
	engine      *attention.Batched
	tq, tk, tv  attention.Tensor
	to          attention.Tensor
}

func newBatch(q, k, v []float32, heads, T, d int) *batch {
	b := &batch{heads: heads, T: T, d: d, q: q, k: k, v: v, out: make([]float32, heads*T*d),
		s: make([]float32, T*T), kt: make([]float32, T*d), engine: attention.NewBatched(1)}
	var err error
	for _, t := range []struct {
		dst  *attention.Tensor
		data []float32
	}{{&b.tq, q}, {&b.tk, k}, {&b.tv, v}, {&b.to, b.out}} {
		if *t.dst, err = attention.NewTensor(1, heads, T, d, t.data); err != nil {
			panic(err)
		}
	}
	return b
}

func (b *batch) close() { b.engine.Close() }

func (b *batch) attention() {
	if err := b.engine.Attend(attention.BatchOutputs{Out: b.to}, b.tq, b.tk, b.tv, nil); err != nil {
		panic(err)
	}
}

func (b *batch) head(h int) (q, k, v, out []float32) {
	n := b.T * b.d
	return b.q[h*n : (h+1)*n], b.k[h*n : (h+1)*n], b.v[h*n : (h+1)*n], b.out[h*n : (h+1)*n]
}

func (b *batch) softmaxRows(softmax func(dst, x []float32)) {
	for i := range b.T {
		row := b.s[i*b.T : (i+1)*b.T]
		softmax(row, row)
	}
}

func (b *batch) naive() {
	scale := float32(1 / math.Sqrt(float64(b.d)))
	for h := range b.heads {
		q, k, v, out := b.head(h)
		for i := range b.T {
			for j := range b.T {
				b.s[i*b.T+j] = scale * dotNaive(q[i*b.d:(i+1)*b.d], k[j*b.d:(j+1)*b.d])
			}
		}
		b.softmaxRows(softmaxNaive)
		clear(out)
		for i := range b.T {
			o := out[i*b.d : (i+1)*b.d]
			for j, w := range b.s[i*b.T : (i+1)*b.T] {
				for c, x := range v[j*b.d : (j+1)*b.d] {
					o[c] += w * x
				}
			}
		}
	}
}

// gonum: S = scale·Q Kᵀ (Gemm), row softmax with math.Exp, O = P V (Gemm).
func (b *batch) gonum() {
	scale := float32(1 / math.Sqrt(float64(b.d)))
	gen := func(rows, cols int, data []float32) blas32.General {
		return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data}
	}
	for h := range b.heads {
		q, k, v, out := b.head(h)
		S := gen(b.T, b.T, b.s)
		blas32.Gemm(blas.NoTrans, blas.Trans, scale, gen(b.T, b.d, q), gen(b.T, b.d, k), 0, S)
		b.softmaxRows(softmaxNaive)
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, S, gen(b.T, b.d, v), 0, gen(b.T, b.d, out))
	}
}

// vek: Kᵀ copied out (MatMul takes row-major operands), S = Q Kᵀ, scaled,
// vek's row softmax, O = P V.
func (b *batch) vek() {
	scale := float32(1 / math.Sqrt(float64(b.d)))
	for h := range b.heads {
		q, k, v, out := b.head(h)
		for j := range b.T {
			for c := range b.d {
				b.kt[c*b.T+j] = k[j*b.d+c]
			}
		}
		vek32.MatMul_Into(b.s, q, b.kt, b.d)
		vek32.MulNumber_Inplace(b.s, scale)
		b.softmaxRows(softmaxVek)
		vek32.MatMul_Into(out, b.s, v, b.T)
	}
}
