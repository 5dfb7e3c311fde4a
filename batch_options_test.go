package attention

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// The sink's special values on every path: −Inf is no sink, NaN and +Inf
// make the rows of their head NaN even when nothing is attended, a huge
// sink outweighs every key (zero output, its own LSE), and a row that
// attends nothing gets a zero output and the sink as its LSE.
func TestBatchedSinkSpecials(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(71)
		nan, inf := float32(math.NaN()), float32(math.Inf(1))
		sinks := []float32{nan, inf, -inf, 1.5, 1e30, -1e30}
		e := NewBatched(2)
		defer e.Close()
		for _, Tq := range []int{3, 20} {
			for _, Hkv := range []int{6, 3} {
				for _, weights := range []bool{false, true} {
					c := batchCase{B: 2, H: 6, Hkv: Hkv, Tq: Tq, Tk: 40, dk: 4, dv: 3, valid: true, weights: weights, logit: weights,
						sinks: true, alibi: true, lse: true}
					p := newBatchProblem(t, r, c)
					copy(p.opt.Sinks, sinks)
					p.opt.ValidLen = []int{0, 40}
					if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
						t.Fatal(err)
					}
					p.check(t)
					for h, s := range sinks {
						for i := range Tq {
							checkNothingAttended(t, p, h, i, s)
						}
					}
				}
			}
		}
	})
}

// checkNothingAttended checks row (0, h, i), which attends no key and has
// sink s: a zero output and LSE s, or NaN for a NaN or +Inf sink.
func checkNothingAttended(t *testing.T, p *batchProblem, h, i int, s float32) {
	t.Helper()
	lse, o := p.lse[h*p.c.Tq+i], p.out.Row(0, h, i)
	if s != s || math.IsInf(float64(s), 1) {
		if lse == lse || o[0] == o[0] {
			t.Fatalf("%v: sink %v, nothing attended: out %v, LSE %v, want NaN", p.c, s, o, lse)
		}
		return
	}
	if math.Float32bits(lse) != math.Float32bits(s) {
		t.Fatalf("%v: sink %v, nothing attended: LSE %v", p.c, s, lse)
	}
	for _, x := range o {
		if x != 0 || math.Signbit(float64(x)) {
			t.Fatalf("%v: sink %v, nothing attended: out %v, want +0", p.c, s, o)
		}
	}
}

// ALiBi is the bias it stands for: a Bias holding fl(slope·float32(j −
// pos_i)) gives the same bits, on every path (both add the term to the
// softcapped score with one rounding).
func TestBatchedALiBiIsItsBias(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(73)
		e := NewBatched(1)
		defer e.Close()
		for _, c := range []batchCase{
			{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 300, dk: 16, dv: 8, causal: true, softcap: 4, alibi: true, lse: true},
			{B: 2, H: 4, Hkv: 4, Tq: 20, Tk: 50, dk: 16, dv: 8, shift: 5, valid: true, toValid: true, alibi: true, lse: true},
			{B: 1, H: 8, Hkv: 2, Tq: 1, Tk: 300, dk: 16, dv: 8, keep: true, alibi: true, lse: true},
			{B: 1, H: 2, Hkv: 1, Tq: 20, Tk: 30, dk: 16, dv: 8, causal: true, weights: true, logit: true, alibi: true, lse: true},
		} {
			p := newBatchProblem(t, r, c)
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatal(err)
			}
			want := append(append([]float32(nil), p.out.data...), p.lse...)
			bias := tensor(t, r, c.B, c.H, c.Tq, c.Tk, false, 1)
			for b := range c.B {
				for h := range c.H {
					for i := range c.Tq {
						row := bias.Row(b, h, i)
						clear(row)
						alibiScores(row, 1, c.Tk, p.opt.ALiBi[h], p.refProblem(b, h, i).Pos, 0)
					}
				}
			}
			p.opt.ALiBi, p.opt.Bias = nil, &bias
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatal(err)
			}
			got := append(append([]float32(nil), p.out.data...), p.lse...)
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) && (got[j] == got[j] || want[j] == want[j]) {
					t.Fatalf("%v: element %d with the bias %v, with ALiBi %v", c, j, got[j], want[j])
				}
			}
		}
	})
}

// Attending keys [0, h) and [h, Tk) apart (the sink with the first part)
// and merging the two by their LSE gives attention over every key, within
// the bounds the oracle's merge derives from the parts' own.
func TestBatchedMergeHalves(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(72)
		e := NewBatched(2)
		defer e.Close()
		for _, c := range []batchCase{
			{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 300, dk: 32, dv: 16, causal: true, softcap: 3, bias: biasFull, sinks: true, alibi: true, lse: true},
			{B: 1, H: 4, Hkv: 1, Tq: 1, Tk: 500, dk: 16, dv: 8, valid: true, keep: true, bias: biasRows, sinks: true, alibi: true, lse: true},
			{B: 2, H: 2, Hkv: 2, Tq: 5, Tk: 70, dk: 8, dv: 8, causal: true, shift: -3, valid: true, lse: true},
			{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 2500, dk: 16, dv: 8, valid: true, sinks: true, alibi: true, lse: true},
		} {
			for _, h := range []int{0, 1, c.Tk / 3, c.Tk - 1, c.Tk} {
				mergeHalves(t, r, e, newBatchProblem(t, r, c), h)
			}
		}
	})
}

func mergeHalves(t *testing.T, r *rand.Rand, e *Batched, p *batchProblem, h int) {
	c := p.c
	parts := [2]*batchProblem{p.keys(t, r, 0, h, true), p.keys(t, r, h, c.Tk, false)}
	for _, x := range parts {
		if err := e.Attend(x.outputs(), x.q, x.k, x.v, &x.opt); err != nil {
			t.Fatal(err)
		}
		x.check(t)
	}
	a, b := parts[0], parts[1]
	if err := MergeAttention(a.out.data, a.lse, b.out.data, b.lse, c.dv); err != nil {
		t.Fatal(err)
	}
	for bi := range c.B {
		for hi := range c.H {
			for i := range c.Tq {
				_, wa := a.want(bi, hi, i)
				_, wb := b.want(bi, hi, i)
				want, whole := reference.Merge(wa, wb), reference.Attend(p.refProblem(bi, hi, i))
				if !near(want.LSE, whole.LSE) {
					t.Fatalf("%v split at %d: the oracle's merged LSE %v, over all keys %v", c, h, want.LSE, whole.LSE)
				}
				if x := a.lse[(bi*c.H+hi)*c.Tq+i]; !testutil.Close(x, want.LSE, want.LSEBound) {
					t.Fatalf("%v split at %d: merged LSE[%d][%d][%d] = %v, want %v ± %g", c, h, bi, hi, i, x, want.LSE, want.LSEBound)
				}
				for col, x := range a.out.Row(bi, hi, i) {
					if !near(want.Context[col], whole.Context[col]) || !testutil.Close(x, want.Context[col], want.CtxBound[col]) {
						t.Fatalf("%v split at %d: merged out[%d][%d][%d][%d] = %v, want %v ± %g (all keys: %v)",
							c, h, bi, hi, i, col, x, want.Context[col], want.CtxBound[col], whole.Context[col])
					}
				}
			}
		}
	}
}

// near reports whether two float64 results agree to rounding.
func near(a, b float64) bool {
	if a != a || math.IsInf(a, 0) {
		return a == b || a != a && b != b
	}
	return math.Abs(a-b) <= 1e-9*(1+math.Abs(b))
}

// keys returns the problem of p over keys [j0, j1) only, with the same
// queries and fresh packed outputs: views of its keys, values and bias, its
// masks cut to those keys, the causal shift moved so that every row keeps
// its position (and so its frontier and ALiBi distances), and its sinks if
// sink is set. p may not align the frontier to ValidLen.
func (p *batchProblem) keys(t testing.TB, r *rand.Rand, j0, j1 int, sink bool) *batchProblem {
	c := p.c
	x := &batchProblem{c: c, q: p.q, opt: p.opt}
	x.c.Tk, x.c.strided, x.c.sinks = j1-j0, false, c.sinks && sink
	x.k, x.v = keyRange(t, p.k, j0, j1), keyRange(t, p.v, j0, j1)
	x.c.shift = c.shift + c.Tk - j1
	x.opt.CausalShift = x.c.shift
	if c.valid {
		x.opt.ValidLen = make([]int, c.B)
		for b, n := range p.opt.ValidLen {
			x.opt.ValidLen[b] = min(max(n-j0, 0), j1-j0)
		}
	}
	if c.keep {
		x.opt.Keep = nil
		for i := range c.Tq {
			x.opt.Keep = append(x.opt.Keep, p.opt.Keep[i*c.Tk+j0:i*c.Tk+j1]...)
		}
	}
	if c.bias != biasNone {
		x.bias = colRange(t, p.bias, j0, j1)
		x.opt.Bias = &x.bias
	}
	if !x.c.sinks {
		x.opt.Sinks = nil
	}
	x.out = tensor(t, r, c.B, c.H, c.Tq, c.dv, false, 1)
	x.lse = make([]float32, c.B*c.H*c.Tq)
	return x
}

// keyRange returns the view of rows [j0, j1) of every (batch, head) of x.
func keyRange(t testing.TB, x Tensor, j0, j1 int) Tensor {
	if j0 == j1 {
		return Tensor{batch: x.batch, heads: x.heads, cols: x.cols}
	}
	y, err := NewTensorStrided(x.batch, x.heads, j1-j0, x.cols, x.bs, x.hs, x.rs, x.data[j0*x.rs:])
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// colRange returns the view of columns [j0, j1) of every row of x.
func colRange(t testing.TB, x Tensor, j0, j1 int) Tensor {
	if j0 == j1 {
		return Tensor{batch: x.batch, heads: x.heads, rows: x.rows}
	}
	y, err := NewTensorStrided(x.batch, x.heads, x.rows, j1-j0, x.bs, x.hs, x.rs, x.data[j0:])
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// nextMasked against a plain scan, from every start, over lengths that
// cover the 32-flag and 8-flag steps and their tails, with masks from
// none to all.
func TestNextMasked(t *testing.T) {
	r := testutil.Rand(30)
	for n := range 100 {
		for _, density := range []int{0, 1, 8, 50, 100} {
			keep := make([]bool, n)
			for i := range keep {
				keep[i] = r.IntN(100) >= density
			}
			kb := keepBytes(keep)
			for k := 0; k <= n; k++ {
				want := k
				for want < n && keep[want] {
					want++
				}
				if got := nextMasked(kb, k); got != want {
					t.Fatalf("n=%d density=%d%%: nextMasked(%v, %d) = %d, want %d", n, density, keep, k, got, want)
				}
			}
		}
	}
}
