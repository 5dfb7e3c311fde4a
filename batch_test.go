package attention

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

type batchCase struct {
	B, H, Hkv, Tq, Tk, dk, dv int
	window                    int // BatchOptions.Window
	causal                    bool
	shift                     int
	valid, keep, weights      bool
	strided                   bool
	// Score-stage options: softcap, a bias (biasNone, biasFull or a
	// broadcast shape), the causal frontier aligned to ValidLen, logits.
	softcap        float32
	bias           biasKind
	toValid, logit bool
	// Per-head options and the LSE output: a sink logit per head (one
	// head's −Inf), ALiBi slopes, each row's log-sum-exp.
	sinks, alibi, lse bool
}

type biasKind int

const (
	biasNone      biasKind = iota
	biasFull               // [B][H][Tq][Tk]
	biasRows               // [1][1][Tq][Tk]
	biasBatchHead          // [B][1][1][Tk]
	biasHeads              // [1][H][Tq][Tk]
)

func (c batchCase) String() string {
	return fmt.Sprintf("B%d H%d/%d Tq%d Tk%d dk%d dv%d window=%d causal=%v%+d valid=%v keep=%v weights=%v strided=%v softcap=%v bias=%d toValid=%v logits=%v sinks=%v alibi=%v lse=%v",
		c.B, c.H, c.Hkv, c.Tq, c.Tk, c.dk, c.dv, c.window, c.causal, c.shift, c.valid, c.keep, c.weights, c.strided, c.softcap, c.bias, c.toValid, c.logit,
		c.sinks, c.alibi, c.lse)
}

// tensor fills a [B][H][T][d] tensor with random data, packed or with
// padding after every row and head (a view into a larger buffer).
func tensor(t testing.TB, r *rand.Rand, B, H, T, d int, strided bool, scale float32) Tensor {
	rs, hs := d, T*d
	if strided {
		rs = d + 3
		hs = T*rs + 5
	}
	bs := H * hs
	data := testutil.Floats(r, max(1, B*bs), scale)
	x, err := NewTensorStrided(B, H, T, d, bs, hs, rs, data)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

type batchProblem struct {
	c       batchCase
	q, k, v Tensor
	out, w  Tensor
	bias    Tensor
	logits  Tensor
	lse     []float32
	opt     BatchOptions
	// lenient skips the rows where float32 may overflow while the float64
	// oracle does not (the fuzzer's huge values).
	lenient bool
	// rows, if set, limits the check to query rows below it.
	rows int
}

func newBatchProblem(t testing.TB, r *rand.Rand, c batchCase) *batchProblem {
	p := &batchProblem{c: c}
	p.q = tensor(t, r, c.B, c.H, c.Tq, c.dk, c.strided, 2)
	p.k = tensor(t, r, c.B, c.Hkv, c.Tk, c.dk, c.strided, 2)
	p.v = tensor(t, r, c.B, c.Hkv, c.Tk, c.dv, c.strided, 3)
	p.out = tensor(t, r, c.B, c.H, c.Tq, c.dv, c.strided, 1)
	p.opt = BatchOptions{Causal: c.causal, CausalShift: c.shift}
	if c.valid {
		p.opt.ValidLen = make([]int, c.B)
		for b := range p.opt.ValidLen {
			p.opt.ValidLen[b] = r.IntN(c.Tk + 1)
		}
	}
	if c.keep {
		p.opt.Keep = make([]bool, c.Tq*c.Tk)
		for i := range p.opt.Keep {
			p.opt.Keep[i] = r.IntN(4) > 0
		}
	}
	if c.weights {
		p.w = tensor(t, r, c.B, c.H, c.Tq, c.Tk, false, 1)
	}
	p.opt.Softcap = c.softcap
	p.opt.CausalToValidLen = c.toValid
	p.opt.Window = c.window
	if c.bias != biasNone {
		p.bias = randomBias(t, r, c)
		p.opt.Bias = &p.bias
	}
	if c.logit {
		p.logits = tensor(t, r, c.B, c.H, c.Tq, c.Tk, false, 1)
	}
	p.perHead(r)
	return p
}

// perHead sets the problem's sinks (in [−3, 3], the last head's −Inf: no
// sink), ALiBi slopes (in [−1/4, 1), as the geometric slopes of ALiBi and
// some negative ones) and its LSE output (NaN until written), as its case
// asks.
func (p *batchProblem) perHead(r *rand.Rand) {
	c := p.c
	if c.sinks {
		p.opt.Sinks = testutil.Floats(r, c.H, 3)
		if c.H > 1 {
			p.opt.Sinks[c.H-1] = float32(math.Inf(-1))
		}
	}
	if c.alibi {
		p.opt.ALiBi = make([]float32, c.H)
		for h := range p.opt.ALiBi {
			p.opt.ALiBi[h] = float32(math.Exp2(-8*float64(h+1)/float64(c.H))) - float32(r.IntN(4)/3)/4
		}
	}
	if c.lse {
		p.lse = make([]float32, c.B*c.H*c.Tq)
		fillNaN(p.lse)
	}
}

// randomBias returns a bias of the case's shape with random entries, a
// sixth of them −Inf, and an eighth of its rows all −Inf.
func randomBias(t testing.TB, r *rand.Rand, c batchCase) Tensor {
	bb, bh, bq := c.B, c.H, c.Tq
	switch c.bias {
	case biasRows:
		bb, bh = 1, 1
	case biasBatchHead:
		bh, bq = 1, 1
	case biasHeads:
		bb = 1
	}
	bias := tensor(t, r, bb, bh, bq, c.Tk, c.strided, 3)
	ninf := float32(math.Inf(-1))
	for b := range bb {
		for h := range bh {
			for i := range bq {
				row := bias.Row(b, h, i)
				if r.IntN(8) == 0 {
					for j := range row {
						row[j] = ninf // a row fully masked by the bias
					}
				}
				for j := range row {
					if r.IntN(6) == 0 {
						row[j] = ninf
					}
				}
			}
		}
	}
	return bias
}

// outputs returns what the problem asks Batched.Attend to write: out, and
// the weights and logits if its case wants them.
func (p *batchProblem) outputs() BatchOutputs {
	dst := BatchOutputs{Out: p.out}
	if p.c.weights {
		dst.Weights = &p.w
	}
	if p.c.logit {
		dst.Logits = &p.logits
	}
	if p.c.lse {
		dst.LSE = p.lse
	}
	return dst
}

// biasRow is the bias row query i of head h in batch entry b sees.
func (p *batchProblem) biasRow(b, h, i int) []float32 {
	if p.opt.Bias == nil {
		return nil
	}
	x := p.opt.Bias
	return x.Row(broadcast(b, x.batch), broadcast(h, x.heads), broadcast(i, x.rows))
}

// rowEnd is how many keys query i of batch entry b may attend: its valid
// length and, if causal, its frontier, with base the causal alignment (the
// frontier saturates, as the engine's does).
func (p *batchProblem) rowEnd(b, i, base int) int {
	c, end := p.c, p.c.Tk
	if p.opt.ValidLen != nil {
		end = p.opt.ValidLen[b]
	}
	if c.causal {
		end = min(end, max(0, addSat(addSat(i+base-c.Tq, c.shift), 1)))
	}
	return end
}

// check compares every output row (and weights, logits and LSE row) with
// the oracle.
func (p *batchProblem) check(t *testing.T) {
	t.Helper()
	c := p.c
	for b := range c.B {
		for h := range c.H {
			for i := range c.Tq {
				if p.rows > 0 && i >= p.rows {
					continue
				}
				rp, want := p.want(b, h, i)
				if p.lenient && overflowRisk(want) {
					continue
				}
				p.checkRow(t, [3]int{b, h, i}, &rp, &want)
			}
		}
	}
}

// refProblem states query row i of head h in batch entry b for the oracle:
// its keys and values, masks, score options, sink and ALiBi slope.
func (p *batchProblem) refProblem(b, h, i int) reference.Problem {
	c := p.c
	scale := float32(1)
	if c.dk > 0 {
		scale = float32(1 / math.Sqrt(float64(c.dk)))
	}
	rp := reference.Problem{Kind: reference.KindDotScale, Scale: scale, Query: p.q.Row(b, h, i), Valid: c.Tk, DV: c.dv,
		Softcap: c.softcap, Bias: p.biasRow(b, h, i)}
	base := c.Tk
	if c.toValid && p.opt.ValidLen != nil {
		base = p.opt.ValidLen[b]
	}
	// The keys below the row's end (valid length, causal frontier), from
	// its window's first key on, that the keep-mask keeps.
	rp.Valid = p.rowEnd(b, i, base)
	if c.window > 0 {
		rp.Start = max(0, rp.Valid-c.window)
	}
	rp.Pos = addSat(i+base-c.Tq, c.shift) // the row's position, for ALiBi
	if c.sinks {
		rp.HasSink, rp.Sink = true, p.opt.Sinks[h]
	}
	if c.alibi {
		rp.Slope = p.opt.ALiBi[h]
	}
	kh := h / (c.H / c.Hkv)
	for j := range c.Tk {
		rp.Keys = append(rp.Keys, p.k.Row(b, kh, j))
		rp.Values = append(rp.Values, p.v.Row(b, kh, j))
	}
	if p.opt.Keep != nil {
		rp.Keep = p.opt.Keep[i*c.Tk : (i+1)*c.Tk]
	}
	return rp
}

// want returns the oracle's problem and answer for row (b, h, i), its
// bounds widened where the engine runs the online softmax: it rescales
// the partial output and sum once per key tile, per tile an exp (≤ 2u),
// two products and the rounding of the max difference, which is bounded
// by the spread of the scores. That relative error reaches the output,
// the weights (divided by the online sum) and, as an absolute one, the LSE.
func (p *batchProblem) want(b, h, i int) (reference.Problem, reference.Result) {
	c := p.c
	rp := p.refProblem(b, h, i)
	want := reference.Attend(rp)
	packed := c.Tq
	if c.Hkv > 0 {
		packed *= c.H / c.Hkv
	}
	if (c.weights || c.logit) && !useBlock(packed, c.dk, c.dv) {
		return rp, want // whole rows
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for j, s := range want.Scores {
		if rp.Attended(j) && !math.IsInf(s, 0) {
			lo, hi = math.Min(lo, s), math.Max(hi, s)
		}
	}
	if !(hi >= lo) {
		return rp, want
	}
	// The block path's tiles are the shorter; + the causal diagonal, row
	// by row; each fold of a chunk of keys rescales once more.
	tile := keyTile(true, c.dk, c.dv)
	tiles := float64((c.Tk+tile-1)/tile + 1 + (c.Tk+splitKeys-1)/splitKeys)
	extra := (4*tiles + (hi - lo) + 2) * reference.U
	for j, w := range want.Weights {
		if !rp.Attended(j) || w == 0 { // a zero weight adds no error, even to 0·Inf
			continue
		}
		want.WeightBound[j] += w * extra
		for col, v := range rp.Values[j] {
			want.CtxBound[col] += w * math.Abs(float64(v)) * extra
		}
	}
	want.LSEBound += extra / (1 - extra)
	return rp, want
}

// checkRow compares row (b, h, i) of every output with the oracle's
// answer want to the problem rp.
func (p *batchProblem) checkRow(t *testing.T, at [3]int, rp *reference.Problem, want *reference.Result) {
	t.Helper()
	c := p.c
	b, h, i := at[0], at[1], at[2]
	if c.logit {
		lg := p.logits.Row(b, h, i)
		for j := range c.Tk {
			ws, bound := math.Inf(-1), 0.0
			if rp.Attended(j) {
				ws, bound = want.Scores[j], want.ScoreBound[j]
			}
			if !testutil.Close(lg[j], ws, bound) {
				t.Fatalf("%v: logits[%d][%d][%d][%d] = %v, want %v ± %g", c, b, h, i, j, lg[j], ws, bound)
			}
		}
	}
	o := p.out.Row(b, h, i)
	for col := range c.dv {
		if !testutil.Close(o[col], want.Context[col], want.CtxBound[col]) {
			t.Fatalf("%v: out[%d][%d][%d][%d] = %v, want %v ± %g", c, b, h, i, col, o[col], want.Context[col], want.CtxBound[col])
		}
	}
	if c.weights {
		w := p.w.Row(b, h, i)
		for j := range c.Tk {
			if !testutil.Close(w[j], want.Weights[j], want.WeightBound[j]) || (!rp.Attended(j) && w[j] != 0) {
				t.Fatalf("%v: weight[%d][%d][%d][%d] = %v, want %v", c, b, h, i, j, w[j], want.Weights[j])
			}
		}
	}
	if c.lse {
		if x := p.lse[(b*c.H+h)*c.Tq+i]; !testutil.Close(x, want.LSE, want.LSEBound) {
			t.Fatalf("%v: LSE[%d][%d][%d] = %v, want %v ± %g", c, b, h, i, x, want.LSE, want.LSEBound)
		}
	}
}

// overflowRisk reports whether any oracle bound says a float32
// intermediate could overflow.
func overflowRisk(want reference.Result) bool {
	for _, bs := range [][]float64{want.ScoreBound, want.CtxBound, want.WeightBound} {
		for _, b := range bs {
			if math.IsInf(b, 0) || b > 1e30 {
				return true
			}
		}
	}
	return false
}

func batchCases(short bool) []batchCase {
	cs := []batchCase{
		{B: 1, H: 1, Hkv: 1, Tq: 1, Tk: 1, dk: 1, dv: 1},
		{B: 2, H: 8, Hkv: 2, Tq: 17, Tk: 33, dk: 7, dv: 5, causal: true},
		{B: 2, H: 8, Hkv: 1, Tq: 33, Tk: 17, dk: 64, dv: 80, causal: true, valid: true},
		{B: 1, H: 8, Hkv: 8, Tq: 40, Tk: 300, dk: 80, dv: 64, keep: true},
		{B: 3, H: 4, Hkv: 2, Tq: 20, Tk: 20, dk: 128, dv: 128, causal: true, weights: true, strided: true},
		{B: 2, H: 2, Hkv: 1, Tq: 9, Tk: 270, dk: 7, dv: 1, valid: true, keep: true, strided: true},
		{B: 1, H: 2, Hkv: 2, Tq: 5, Tk: 9, dk: 3, dv: 4, causal: true, shift: -3},
		{B: 1, H: 2, Hkv: 2, Tq: 5, Tk: 9, dk: 3, dv: 4, causal: true, shift: 2, weights: true},
		{B: 2, H: 8, Hkv: 2, Tq: 70, Tk: 300, dk: 64, dv: 64, causal: true, valid: true, keep: true, weights: true},
		{B: 2, H: 4, Hkv: 2, Tq: 17, Tk: 300, dk: 64, dv: 32, causal: true, softcap: 5, bias: biasFull},
		{B: 2, H: 4, Hkv: 2, Tq: 35, Tk: 290, dk: 64, dv: 24, causal: true, valid: true, keep: true, softcap: 3, bias: biasRows, strided: true},
		{B: 2, H: 4, Hkv: 1, Tq: 5, Tk: 40, dk: 8, dv: 8, keep: true, softcap: 2, bias: biasRows, logit: true},
		{B: 3, H: 2, Hkv: 2, Tq: 20, Tk: 33, dk: 16, dv: 8, causal: true, valid: true, toValid: true, bias: biasBatchHead, weights: true, logit: true},
		{B: 3, H: 2, Hkv: 2, Tq: 20, Tk: 33, dk: 16, dv: 8, causal: true, shift: -4, valid: true, toValid: true},
		{B: 1, H: 4, Hkv: 2, Tq: 4, Tk: 6, dk: 8, dv: 4, causal: true, shift: -2, softcap: 1, bias: biasHeads, strided: true},
		{B: 2, H: 2, Hkv: 1, Tq: 3, Tk: 600, dk: 8, dv: 4, softcap: 0.5, logit: true},
		// Decode steps: the query heads of a group packed into one task,
		// on the row path (4 rows) and across the block's lanes (8, 16
		// and 20 rows of several heads), with masks and every output.
		{B: 2, H: 8, Hkv: 2, Tq: 1, Tk: 300, dk: 32, dv: 24, valid: true},
		{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 300, dk: 32, dv: 24, valid: true, keep: true, bias: biasHeads, weights: true},
		{B: 2, H: 8, Hkv: 2, Tq: 4, Tk: 260, dk: 16, dv: 16, causal: true, keep: true, softcap: 2, bias: biasFull, logit: true},
		{B: 1, H: 16, Hkv: 1, Tq: 1, Tk: 70, dk: 8, dv: 8, causal: true, bias: biasRows, weights: true, logit: true, strided: true},
		{B: 1, H: 4, Hkv: 1, Tq: 5, Tk: 129, dk: 8, dv: 8, causal: true, valid: true, toValid: true, weights: true},
		{B: 2, H: 8, Hkv: 1, Tq: 1, Tk: 1500, dk: 24, dv: 16, valid: true, softcap: 2, bias: biasHeads, strided: true},
		{B: 1, H: 12, Hkv: 4, Tq: 1, Tk: 700, dk: 13, dv: 9, causal: true, valid: true},
		// Eight heads of a group, through the eight-row kernels where
		// there are some: columns past a multiple of 16, tiles cut by
		// valid lengths.
		{B: 2, H: 16, Hkv: 2, Tq: 1, Tk: 1100, dk: 128, dv: 100, valid: true},
		// Groups of two and six heads leave one row to the multi-row
		// kernels, with value rows wider than one block of theirs.
		{B: 1, H: 2, Hkv: 1, Tq: 1, Tk: 300, dk: 16, dv: 128},
		{B: 1, H: 6, Hkv: 1, Tq: 1, Tk: 50, dk: 8, dv: 200, valid: true},
		// Groups of five and seven heads: the wide kernels where there are
		// some, an odd row count (a lone last row in the scores' pairs).
		{B: 2, H: 10, Hkv: 2, Tq: 1, Tk: 700, dk: 64, dv: 40, valid: true},
		{B: 1, H: 7, Hkv: 1, Tq: 1, Tk: 1100, dk: 128, dv: 128},
		// Groups of two to four heads at the widths where the avx512
		// scores read K in address order and the blends take a key stream
		// at a time, asking for no tile ahead: several tiles a task, cut
		// by valid lengths, odd key counts (a blend's odd last key).
		{B: 2, H: 8, Hkv: 2, Tq: 1, Tk: 1301, dk: 128, dv: 128, valid: true},
		{B: 1, H: 6, Hkv: 3, Tq: 1, Tk: 1101, dk: 64, dv: 64},
		{B: 2, H: 3, Hkv: 1, Tq: 1, Tk: 1099, dk: 128, dv: 64, valid: true, strided: true},
		// Rows longer than a chunk of keys: partials folded chunk by
		// chunk, on the row path and the block path, the chunk edges
		// meeting valid lengths, causal frontiers and keep-masks.
		{B: 2, H: 4, Hkv: 1, Tq: 1, Tk: 2500, dk: 16, dv: 8, valid: true, keep: true},
		{B: 1, H: 8, Hkv: 1, Tq: 2, Tk: 2049, dk: 8, dv: 16, causal: true, softcap: 3, bias: biasHeads},
		{B: 1, H: 2, Hkv: 2, Tq: 20, Tk: 1100, dk: 8, dv: 8, causal: true, shift: -1030, valid: true, keep: true},
		// Sliding windows: prefill on the block path, decode on the row
		// path, windows that cross chunks of keys, with masks and every
		// output.
		{B: 2, H: 4, Hkv: 2, Tq: 40, Tk: 300, dk: 16, dv: 8, window: 17, causal: true, valid: true, toValid: true},
		{B: 1, H: 4, Hkv: 1, Tq: 20, Tk: 200, dk: 16, dv: 8, window: 5, causal: true, keep: true, weights: true, logit: true},
		{B: 2, H: 8, Hkv: 2, Tq: 1, Tk: 2500, dk: 16, dv: 8, window: 1100, valid: true, softcap: 2, bias: biasFull},
		{B: 1, H: 8, Hkv: 1, Tq: 3, Tk: 3000, dk: 8, dv: 8, window: 700, causal: true, keep: true, weights: true},
		{B: 1, H: 2, Hkv: 1, Tq: 9, Tk: 50, dk: 8, dv: 8, window: 100, causal: true, shift: -3},
		// Sinks, ALiBi and the LSE on every path: the block kernels with
		// row-by-row tails, the direct block path, the row path, whole
		// rows, the block path's weights, a packed decode step, and ALiBi
		// without a causal mask (keys after the row's position).
		{B: 2, H: 4, Hkv: 2, Tq: 17, Tk: 300, dk: 64, dv: 32, causal: true, softcap: 5, bias: biasFull, sinks: true, alibi: true, lse: true},
		{B: 1, H: 2, Hkv: 2, Tq: 20, Tk: 40, dk: 16, dv: 8, sinks: true, alibi: true, lse: true, strided: true},
		{B: 2, H: 4, Hkv: 4, Tq: 3, Tk: 600, dk: 8, dv: 4, valid: true, sinks: true, alibi: true, lse: true},
		{B: 1, H: 4, Hkv: 2, Tq: 3, Tk: 50, dk: 8, dv: 4, keep: true, weights: true, logit: true, sinks: true, alibi: true, lse: true},
		{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 70, dk: 8, dv: 4, causal: true, valid: true, toValid: true, weights: true, logit: true, sinks: true, alibi: true, lse: true},
		{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 300, dk: 32, dv: 24, valid: true, keep: true, sinks: true, alibi: true, lse: true},
		{B: 1, H: 2, Hkv: 1, Tq: 5, Tk: 9, dk: 3, dv: 4, shift: 3, alibi: true, lse: true},
		{B: 1, H: 2, Hkv: 2, Tq: 24, Tk: 9, dk: 3, dv: 4, shift: -4, alibi: true, sinks: true},
		// With rows cut into chunks (the sink and the LSE after the fold)
		// on the multi-row path and the block path, and with windows.
		{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 2500, dk: 16, dv: 8, valid: true, sinks: true, alibi: true, lse: true},
		{B: 1, H: 2, Hkv: 2, Tq: 20, Tk: 1100, dk: 8, dv: 8, causal: true, shift: -1030, keep: true, sinks: true, alibi: true, lse: true},
		{B: 2, H: 4, Hkv: 2, Tq: 40, Tk: 300, dk: 16, dv: 8, window: 17, causal: true, valid: true, toValid: true, sinks: true, alibi: true, lse: true},
		{B: 1, H: 4, Hkv: 1, Tq: 20, Tk: 200, dk: 16, dv: 8, window: 5, causal: true, weights: true, logit: true, sinks: true, alibi: true, lse: true},
		{B: 2, H: 8, Hkv: 2, Tq: 1, Tk: 2500, dk: 16, dv: 8, window: 1100, valid: true, bias: biasFull, sinks: true, alibi: true, lse: true},
	}
	if !short {
		cs = append(cs,
			batchCase{B: 1, H: 2, Hkv: 1, Tq: 300, Tk: 300, dk: 128, dv: 128, causal: true},
			batchCase{B: 1, H: 2, Hkv: 2, Tq: 129, Tk: 513, dk: 80, dv: 64, valid: true, strided: true},
		)
	}
	return cs
}

// The cases of batchCases, on one worker and two, on every
// implementation. With -short, on two workers only: the results are the
// same bits on any number (TestBatchedBitIdenticalAcrossWorkers).
func TestBatchedMatchesReference(t *testing.T) {
	workerCounts := []int{1, 2}
	if testing.Short() {
		workerCounts = []int{2}
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(21)
		for _, workers := range workerCounts {
			e := NewBatched(workers)
			for _, c := range batchCases(testing.Short()) {
				p := newBatchProblem(t, r, c)
				if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				p.check(t)
			}
			e.Close()
		}
	})
}

// Random shapes and masks, including ragged tile edges.
func TestBatchedRandomShapes(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 12
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(22)
		e := NewBatched(2)
		defer e.Close()
		for range n {
			hkv := []int{1, 2, 4}[r.IntN(3)]
			c := batchCase{
				B: 1 + r.IntN(2), H: hkv * (1 + r.IntN(3)), Hkv: hkv,
				Tq: 1 + r.IntN(60), Tk: 1 + r.IntN(300), dk: []int{1, 7, 64, 80, 128}[r.IntN(5)], dv: 1 + r.IntN(70),
				causal: r.IntN(2) == 0, shift: r.IntN(7) - 3, valid: r.IntN(3) == 0, keep: r.IntN(3) == 0,
				weights: r.IntN(4) == 0, strided: r.IntN(2) == 0,
				softcap: []float32{0, 0, 1, 30}[r.IntN(4)], bias: biasKind(r.IntN(5)), toValid: r.IntN(3) == 0, logit: r.IntN(4) == 0,
				sinks: r.IntN(3) == 0, alibi: r.IntN(3) == 0, lse: r.IntN(2) == 0,
			}
			p := newBatchProblem(t, r, c)
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			p.check(t)
		}
	})
}

// Each output row is computed by exactly one worker in a fixed order, so
// the results are the same bits whatever the number of workers.
func TestBatchedBitIdenticalAcrossWorkers(t *testing.T) {
	r := testutil.Rand(23)
	for _, keep := range []bool{false, true} {
		c := batchCase{B: 2, H: 8, Hkv: 2, Tq: 77, Tk: 301, dk: 64, dv: 48, causal: true, valid: true, keep: keep}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		// Packed groups of a decode step and of a short verify.
		c = batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 64, dv: 48, valid: true, keep: keep}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		c = batchCase{B: 1, H: 8, Hkv: 2, Tq: 4, Tk: 2000, dk: 64, dv: 48, causal: true, keep: keep}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		// Sinks, ALiBi and the LSE, on the block path and the row path.
		c = batchCase{B: 2, H: 4, Hkv: 2, Tq: 37, Tk: 301, dk: 64, dv: 48, causal: true, keep: keep, sinks: true, alibi: true, lse: true}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		c = batchCase{B: 3, H: 4, Hkv: 4, Tq: 2, Tk: 700, dk: 16, dv: 8, valid: true, keep: keep, sinks: true, alibi: true, lse: true}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		// One task whose chunks of keys are shared out between workers.
		c = batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 5000, dk: 16, dv: 8, valid: true, keep: keep, sinks: true, alibi: true, lse: true}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		// Windows that leave a task's first chunks out: shared out, and
		// task by task on the row path and the block path.
		c = batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 5000, dk: 16, dv: 8, valid: true, window: 1500, keep: keep, lse: true}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		c = batchCase{B: 2, H: 8, Hkv: 2, Tq: 1, Tk: 3000, dk: 16, dv: 8, valid: true, window: 700, keep: keep}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
		c = batchCase{B: 2, H: 8, Hkv: 2, Tq: 3, Tk: 3000, dk: 16, dv: 8, window: 1200, causal: true, keep: keep, sinks: true}
		sameForAnyWorkers(t, newBatchProblem(t, r, c))
	}
}

func sameForAnyWorkers(t *testing.T, p *batchProblem) {
	c := p.c
	var first []float32
	for _, workers := range []int{1, 2, 3, 8} {
		e := NewBatched(workers)
		if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
			t.Fatal(err)
		}
		e.Close()
		var got []float32
		for b := range c.B {
			for h := range c.H {
				for i := range c.Tq {
					got = append(got, p.out.Row(b, h, i)...)
				}
			}
		}
		got = append(got, p.lse...)
		if first == nil {
			first = got
			continue
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
				t.Fatalf("%v workers=%d: element %d = %v, with one worker %v", c, workers, i, got[i], first[i])
			}
		}
	}
}

// With Tq = 1 the batched engine agrees with Memory.Attend: bit for bit on
// the path that forms the weights (the same kernels in the same order), and
// within the error bounds on the online path.
func TestBatchedAgreesWithMemory(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(24)
		for _, T := range []int{1, 5, 256, 257, 700} {
			c := batchCase{B: 1, H: 1, Hkv: 1, Tq: 1, Tk: T, dk: 24, dv: 9, weights: true}
			p := newBatchProblem(t, r, c)
			e := NewBatched(1)
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatal(err)
			}
			keys, _ := NewMatrixStrided(T, 24, p.k.rs, p.k.rowsFrom(0, 0, 0))
			vals, _ := NewMatrixStrided(T, 9, p.v.rs, p.v.rowsFrom(0, 0, 0))
			sc, _ := ScoreDotWithScale(float32(1 / math.Sqrt(24)))
			mem, err := NewMemory(sc, keys, vals)
			if err != nil {
				t.Fatal(err)
			}
			ctx, w := make([]float32, 9), make([]float32, T)
			if err := mem.Attend(ctx, w, p.q.Row(0, 0, 0), nil); err != nil {
				t.Fatal(err)
			}
			o := p.out.Row(0, 0, 0)
			for i := range ctx {
				if math.Float32bits(ctx[i]) != math.Float32bits(o[i]) {
					t.Fatalf("T=%d: batched %v, Memory %v", T, o, ctx)
				}
			}
			p.c.weights = false
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatal(err)
			}
			p.check(t)
			e.Close()
		}
	})
}

func TestBatchedFullyMaskedAndNaN(t *testing.T) {
	r := testutil.Rand(25)
	// Three query rows go row by row, twenty through the block kernels.
	for _, Tq := range []int{3, 20} {
		for _, weights := range []bool{false, true} {
			fullyMaskedAndNaN(t, r, batchCase{B: 2, H: 2, Hkv: 1, Tq: Tq, Tk: 5, dk: 4, dv: 3, valid: true, keep: true, weights: weights, logit: weights})
		}
	}
}

func fullyMaskedAndNaN(t *testing.T, r *rand.Rand, c batchCase) {
	p := newBatchProblem(t, r, c)
	p.opt.ValidLen = []int{0, 5}
	p.k.Row(1, 0, 2)[1] = float32(math.NaN())
	for i := range c.Tq {
		// Every row attends the NaN key, and not every other key: the
		// weights of the keys a NaN row masks are still exactly 0.
		p.opt.Keep[i*c.Tk+2], p.opt.Keep[i*c.Tk+(i%2)*4] = true, false
	}
	e := NewBatched(1)
	defer e.Close()
	if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
		t.Fatal(err)
	}
	for h := range 2 {
		for i := range c.Tq {
			for _, x := range p.out.Row(0, h, i) {
				if x != 0 || math.Signbit(float64(x)) {
					t.Fatalf("%v: fully masked row gives %v", c, p.out.Row(0, h, i))
				}
			}
			if c.weights {
				for _, x := range p.w.Row(0, h, i) {
					if x != 0 || math.Signbit(float64(x)) {
						t.Fatalf("%v: fully masked row has weights %v", c, p.w.Row(0, h, i))
					}
				}
			}
			for _, x := range p.out.Row(1, h, i) {
				if x == x {
					t.Fatalf("%v: NaN key did not propagate: %v", c, p.out.Row(1, h, i))
				}
			}
		}
	}
	p.check(t)
}

func TestBatchedAllocatesNothing(t *testing.T) {
	r := testutil.Rand(26)
	for _, workers := range []int{1, 2} {
		for _, weights := range []bool{false, true} {
			c := batchCase{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 100, dk: 32, dv: 32, causal: true, keep: true, weights: weights,
				softcap: 3, bias: biasRows, logit: weights, sinks: true, alibi: true, lse: true}
			p := newBatchProblem(t, r, c)
			e := NewBatched(workers)
			e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt)
			if n := testing.AllocsPerRun(5, func() { e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }); n != 0 {
				t.Errorf("workers=%d weights=%v: %v allocations per Attend, want 0", workers, weights, n)
			}
			e.Close()
		}
		// A decode step whose chunks of keys are work items on two
		// workers.
		c := batchCase{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 32, valid: true}
		p := newBatchProblem(t, r, c)
		e := NewBatched(workers)
		e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt)
		if n := testing.AllocsPerRun(5, func() { e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt) }); n != 0 {
			t.Errorf("workers=%d, chunked decode: %v allocations per Attend, want 0", workers, n)
		}
		// The same step with no options (nil): valid lengths aside, the
		// same work.
		if n := testing.AllocsPerRun(5, func() { e.Attend(p.outputs(), p.q, p.k, p.v, nil) }); n != 0 {
			t.Errorf("workers=%d, chunked decode, nil options: %v allocations per Attend, want 0", workers, n)
		}
		e.Close()
	}
}

func TestBatchedShapeErrors(t *testing.T) {
	r := testutil.Rand(27)
	q := tensor(t, r, 2, 4, 3, 8, false, 1)
	k := tensor(t, r, 2, 2, 5, 8, false, 1)
	v := tensor(t, r, 2, 2, 5, 6, false, 1)
	out := tensor(t, r, 2, 4, 3, 6, false, 1)
	dst := BatchOutputs{Out: out}
	e := NewBatched(1)
	defer e.Close()
	bad := map[string]func() error{
		"k dim":     func() error { return e.Attend(dst, q, tensor(t, r, 2, 2, 5, 7, false, 1), v, nil) },
		"heads":     func() error { return e.Attend(dst, tensor(t, r, 2, 3, 3, 8, false, 1), k, v, nil) },
		"v rows":    func() error { return e.Attend(dst, q, k, tensor(t, r, 2, 2, 4, 6, false, 1), nil) },
		"out dim":   func() error { return e.Attend(BatchOutputs{Out: tensor(t, r, 2, 4, 3, 5, false, 1)}, q, k, v, nil) },
		"batch":     func() error { return e.Attend(dst, q, tensor(t, r, 1, 2, 5, 8, false, 1), v, nil) },
		"valid len": func() error { return e.Attend(dst, q, k, v, &BatchOptions{ValidLen: []int{1}}) },
		"keep len":  func() error { return e.Attend(dst, q, k, v, &BatchOptions{Keep: make([]bool, 14)}) },
		"weights": func() error {
			w := tensor(t, r, 2, 4, 3, 4, false, 1)
			return e.Attend(BatchOutputs{Out: out, Weights: &w}, q, k, v, nil)
		},
		"valid >= T":  func() error { return e.Attend(dst, q, k, v, &BatchOptions{ValidLen: []int{1, 6}}) },
		"softcap < 0": func() error { return e.Attend(dst, q, k, v, &BatchOptions{Softcap: -1}) },
		"softcap NaN": func() error { return e.Attend(dst, q, k, v, &BatchOptions{Softcap: float32(math.NaN())}) },
		"softcap Inf": func() error { return e.Attend(dst, q, k, v, &BatchOptions{Softcap: float32(math.Inf(1))}) },
		"bias cols": func() error {
			x := tensor(t, r, 1, 1, 3, 4, false, 1)
			return e.Attend(dst, q, k, v, &BatchOptions{Bias: &x})
		},
		"bias heads": func() error {
			x := tensor(t, r, 1, 2, 3, 5, false, 1)
			return e.Attend(dst, q, k, v, &BatchOptions{Bias: &x})
		},
		"bias batch": func() error {
			x := tensor(t, r, 3, 1, 3, 5, false, 1)
			return e.Attend(dst, q, k, v, &BatchOptions{Bias: &x})
		},
		"bias rows": func() error {
			x := tensor(t, r, 1, 1, 2, 5, false, 1)
			return e.Attend(dst, q, k, v, &BatchOptions{Bias: &x})
		},
		"logits": func() error {
			x := tensor(t, r, 2, 4, 3, 4, false, 1)
			return e.Attend(BatchOutputs{Out: out, Logits: &x}, q, k, v, nil)
		},
		"sinks len": func() error { return e.Attend(dst, q, k, v, &BatchOptions{Sinks: make([]float32, 2)}) },
		"alibi len": func() error { return e.Attend(dst, q, k, v, &BatchOptions{ALiBi: make([]float32, 5)}) },
		"alibi NaN": func() error {
			return e.Attend(dst, q, k, v, &BatchOptions{ALiBi: []float32{0, 1, float32(math.NaN()), 0}})
		},
		"alibi -Inf": func() error {
			return e.Attend(dst, q, k, v, &BatchOptions{ALiBi: []float32{float32(math.Inf(-1)), 1, 1, 0}})
		},
		"lse len": func() error { return e.Attend(BatchOutputs{Out: out, LSE: make([]float32, 23)}, q, k, v, nil) },
	}
	for name, f := range bad {
		err := f()
		if !errors.Is(err, ErrShape) && !errors.Is(err, ErrArgument) {
			t.Errorf("%s: err = %v, want ErrShape or ErrArgument", name, err)
		}
	}
	if _, err := NewTensor(1, 1, 3, 4, make([]float32, 10)); !errors.Is(err, ErrShape) {
		t.Errorf("short tensor data: %v", err)
	}
	if _, err := NewTensorStrided(1, 1, 3, 4, 0, 0, 2, make([]float32, 100)); !errors.Is(err, ErrShape) {
		t.Errorf("row stride below cols: %v", err)
	}
	// A reach past 2^64 must not wrap around to a small one (on 64-bit
	// ints (n−1)·n is about 2^78 here).
	n := math.MaxInt>>24 + 1
	if _, err := NewTensorStrided(n, 1, 1, 1, n, 1, 1, make([]float32, 10)); !errors.Is(err, ErrShape) {
		t.Errorf("batch and batch stride %d: %v", n, err)
	}
	if _, err := NewTensorStrided(2, n, n, 1, 1, n, n, make([]float32, 10)); !errors.Is(err, ErrShape) {
		t.Errorf("heads, rows and strides %d: %v", n, err)
	}
}

// A value row that is not finite must not reach the rows that cannot see
// it: with a causal mask the block path weighs the diagonal's keys 0 for
// the rows above, and 0·Inf would be NaN.
func TestBatchedCausalDiagonalNonFinite(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(28)
		for _, bad := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
			c := batchCase{B: 1, H: 2, Hkv: 1, Tq: 20, Tk: 20, dk: 4, dv: 3, causal: true}
			p := newBatchProblem(t, r, c)
			p.v.Row(0, 0, 19)[1] = bad
			p.k.Row(0, 0, 19)[2] = bad
			p.rows = 19
			e := NewBatched(1)
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatal(err)
			}
			e.Close()
			p.check(t)
		}
	})
}

// Keys masked by Keep are never read on the block path either: a NaN key
// gets a -Inf score there, and a tile whose masked keys have a value row
// that is not finite goes row by row (0·Inf would be NaN). The bad key
// sits in the first tile, in the second (the block runs the first, then
// stops), or is kept by some rows (whose outputs are then NaN, as the
// oracle says).
func TestBatchedKeepNonFinite(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(29)
		for _, bad := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
			for _, key := range []int{5, 200} {
				for _, keptBy := range []int{-1, 3} {
					c := batchCase{B: 1, H: 2, Hkv: 1, Tq: 24, Tk: 300, dk: 4, dv: 3, keep: true}
					p := newBatchProblem(t, r, c)
					for i := range c.Tq {
						p.opt.Keep[i*c.Tk+key] = i == keptBy
					}
					p.v.Row(0, 0, key)[1] = bad
					p.k.Row(0, 0, key)[2] = bad
					e := NewBatched(1)
					if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
						t.Fatal(err)
					}
					e.Close()
					p.check(t)
				}
			}
		}
	})
}

// A task's chunks start at the first one a row has keys in: those before
// every row's window are neither computed nor folded.
func TestFirstChunk(t *testing.T) {
	const B, H, Hkv, Tk, d = 1, 4, 2, 5000, 4
	for _, c := range []struct {
		window, Tq int
		causal     bool
		first      int
	}{
		{0, 1, false, 0},
		{1000, 1, false, (Tk - 1000) / splitKeys},
		{Tk, 1, false, 0},
		// Three causal rows: the first row's window starts two keys
		// before the last row's.
		{2000, 3, true, (Tk - 2 - 2000) / splitKeys},
		{Tk - 2 - 3*splitKeys, 3, true, 3},
		{Tk - 1 - 3*splitKeys, 3, true, 2},
	} {
		q := make([]float32, B*H*c.Tq*d)
		kv := make([]float32, B*Hkv*Tk*d)
		qt, _ := NewTensor(B, H, c.Tq, d, q)
		kt, _ := NewTensor(B, Hkv, Tk, d, kv)
		ot, _ := NewTensor(B, H, c.Tq, d, make([]float32, len(q)))
		p, err := newBatchJob(BatchOutputs{Out: ot}, qt, kt, kt, &BatchOptions{Window: c.window, Causal: c.causal})
		if err != nil {
			t.Fatal(err)
		}
		for task := range p.tasks() {
			var tk batchTask
			p.taskInto(&tk, task)
			p.rowEnds(&tk)
			if got := tk.firstChunk(); got != c.first {
				t.Errorf("window %d, Tq %d: task %d's first chunk %d, want %d", c.window, c.Tq, task, got, c.first)
			}
			if n := tk.chunksOf(); n != (Tk+splitKeys-1)/splitKeys {
				t.Errorf("window %d, Tq %d: task %d's chunks end at %d", c.window, c.Tq, task, n)
			}
		}
	}
}

// TestBatchedWidenedHeadsFollowTheCache checks that a worker's widened
// head (see wideHead) never outlives what it was widened from: an engine
// that attends a 16-bit cache, then the same cache after its rows changed,
// then another cache of the same shape, gives each time the bits of a
// fresh engine.
func TestBatchedWidenedHeadsFollowTheCache(t *testing.T) {
	const Tq, capacity, d = 32, 64, 32
	testutil.ForEachImpl(t, func(t *testing.T) {
		// One entry of one head: each call's first task is the last one's
		// head. Two entries of one: consecutive tasks of the same head
		// index in different entries.
		for _, c := range []struct {
			typ       KVType
			B, H, Hkv int
		}{{F16, 2, 4, 2}, {BF16, 2, 4, 2}, {F16, 2, 2, 1}, {BF16, 1, 1, 1}, {F16, 1, 2, 1}} {
			typ, B, H, Hkv := c.typ, c.B, c.H, c.Hkv
			r := testutil.Rand(31)
			q := tensor(t, r, B, H, Tq, d, false, 1)
			out := tensor(t, r, B, H, Tq, d, false, 1)
			fill := func(c *KVCache, b, rows int) {
				k := testutil.Floats(r, Hkv*rows*d, 2)
				v := testutil.Floats(r, Hkv*rows*d, 3)
				if err := c.Append(b, k, v, rows); err != nil {
					t.Fatal(err)
				}
			}
			newCache := func() *KVCache {
				c, err := NewKVCache(B, Hkv, capacity, d, d, typ)
				if err != nil {
					t.Fatal(err)
				}
				for b := range B {
					fill(c, b, 40+b)
				}
				return c
			}
			for _, workers := range []int{1, 2} {
				e := NewBatched(workers)
				defer e.Close()
				opt := &BatchOptions{Causal: true}
				check := func(what string, c *KVCache) {
					t.Helper()
					if err := e.AttendCache(BatchOutputs{Out: out}, q, c, opt); err != nil {
						t.Fatal(err)
					}
					got := append([]float32(nil), out.data...)
					fresh := NewBatched(1)
					defer fresh.Close()
					if err := fresh.AttendCache(BatchOutputs{Out: out}, q, c, opt); err != nil {
						t.Fatal(err)
					}
					if i := testutil.FirstDiff(got, out.data); i >= 0 {
						t.Fatalf("%v, B %d, H %d/%d, %d workers, %s: output %d is %v, a fresh engine gives %v", typ, B, H, Hkv, workers, what, i, got[i], out.data[i])
					}
				}
				c := newCache()
				check("first call", c)
				if err := c.Truncate(0, 10); err != nil {
					t.Fatal(err)
				}
				fill(c, 0, 30)
				fill(c, B-1, 5)
				check("rows changed", c)
				check("another cache", newCache())
			}
		}
	})
}

// nextTile names tiles a worker will read, and only those: the task's
// next tile, the next task's first (from its window's start) or, with
// several workers, that of the task the worker takes ahead, never the
// keys after a task's last tile, nor past a chunk that is a work item of
// its own.
func TestNextTileStaysInTheRowsKeys(t *testing.T) {
	const B, H, Hkv, Tk, d, tile = 1, 4, 2, 3000, 4, 512
	for _, window := range []int{0, 700} {
		q := make([]float32, B*H*d)
		kv := make([]float32, B*Hkv*Tk*d)
		qt, _ := NewTensor(B, H, 1, d, q)
		kt, _ := NewTensor(B, Hkv, Tk, d, kv)
		ot, _ := NewTensor(B, H, 1, d, make([]float32, len(q)))
		p, err := newBatchJob(BatchOutputs{Out: ot}, qt, kt, kt, &BatchOptions{Window: window})
		if err != nil {
			t.Fatal(err)
		}
		if p.tasks() != 2 {
			t.Fatalf("window %d: %d tasks, want 2", window, p.tasks())
		}
		lo := max(0, Tk-window)
		if window == 0 {
			lo = 0
		}
		var tk batchTask
		p.taskInto(&tk, 0)
		p.rowEnds(&tk)
		if _, nt, j := p.nextTile(&tk, lo, tile, nil); nt != 0 || j != lo+tile {
			t.Errorf("window %d: after the first tile: task %d key %d, want 0, %d", window, nt, j, lo+tile)
		}
		if _, nt, j := p.nextTile(&tk, Tk-tile, tile, nil); nt != 1 || j != lo {
			t.Errorf("window %d: after task 0's last tile: task %d key %d, want 1, %d", window, nt, j, lo)
		}
		var last batchTask
		p.taskInto(&last, 1)
		p.rowEnds(&last)
		if _, nt, _ := p.nextTile(&last, Tk-tile, tile, nil); nt != -1 {
			t.Errorf("window %d: after the call's last tile: task %d, want none", window, nt)
		}
		if _, nt, _ := p.nextTile(&tk, Tk-10, 10, nil); nt != -1 {
			t.Errorf("window %d: after a last tile of 10 keys: task %d, want none", window, nt)
		}
		// With several workers a task is followed by the one its worker
		// takes ahead, whichever the counter gives; past the last, none.
		if !p.claims() {
			t.Errorf("window %d: the workers of a multi-row call take no task ahead", window)
		}
		var tasks atomic.Int64
		tasks.Store(1)
		claim := itemClaim{next: &tasks, item: -1}
		for range 2 {
			if _, nt, j := p.nextTile(&tk, Tk-tile, tile, &claim); nt != 1 || j != lo || claim.item != 1 || tasks.Load() != 2 {
				t.Errorf("window %d: after task 0's last tile, taking task 1: task %d key %d, item %d, counter %d, want 1, %d, 1, 2", window, nt, j, claim.item, tasks.Load(), lo)
			}
		}
		claim.item = -1
		if _, nt, _ := p.nextTile(&last, Tk-tile, tile, &claim); nt != -1 || claim.item != 2 {
			t.Errorf("window %d: after the last task, taking none: task %d, item %d, want none and 2", window, nt, claim.item)
		}
		// A chunk that is a work item of its own ends at its last key.
		p.chunkWork = true
		tk.keys(splitKeys, 2*splitKeys)
		if _, nt, _ := p.nextTile(&tk, 2*splitKeys-tile, tile, nil); nt != -1 {
			t.Errorf("window %d: after a chunk item's last tile: task %d, want none", window, nt)
		}
		// Unless the worker takes its next item there: then it names that
		// item's first tile, and asking again takes no other item.
		var counter atomic.Int64
		counter.Store(4) // item 4: task 1's second chunk
		claim = itemClaim{next: &counter, item: -1}
		want, wantJ := 1, splitKeys
		if window > 0 {
			want = -1 // the window starts past that chunk
		}
		for range 2 {
			if _, nt, j := p.nextTile(&tk, 2*splitKeys-tile, tile, &claim); nt != want || nt >= 0 && j != wantJ {
				t.Errorf("window %d: after a chunk item's last tile, taking item 4: task %d key %d, want %d, %d", window, nt, j, want, wantJ)
			}
			if claim.item != 4 || counter.Load() != 5 {
				t.Errorf("window %d: item taken ahead %d, counter %d, want 4 and 5", window, claim.item, counter.Load())
			}
		}
		claim.item = -1
		counter.Store(int64(2 * p.chunks))
		if _, nt, _ := p.nextTile(&tk, 2*splitKeys-tile, tile, &claim); nt != -1 || claim.item != int64(2*p.chunks) {
			t.Errorf("window %d: after the call's last item: task %d, item %d, want none and %d", window, nt, claim.item, 2*p.chunks)
		}
	}
}
