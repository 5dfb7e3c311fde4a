package attention

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glancelab/attention/internal/testutil"
)

// cacheCase is a call of AttendCache: a batchCase (its Tk is the cache's
// capacity; its valid and toValid are implied) over a cache of one type,
// ring or not, whose entries hold random numbers of rows.
type cacheCase struct {
	batchCase
	typ  KVType
	ring bool
}

func (c cacheCase) String() string {
	return fmt.Sprintf("%v ring=%v %v", c.typ, c.ring, c.batchCase)
}

// cacheProblem is a batchProblem whose keys and values are those a cache
// holds, widened: the oracle's, and those Attend over tensors reads.
type cacheProblem struct {
	*batchProblem
	cache *KVCache
	opt   BatchOptions // p.opt without ValidLen, for AttendCache
}

// newCacheProblem fills a cache: each entry gets a random number of rows
// appended (in a ring, up to three times its capacity, so that its rows
// wrap), some of them truncated again, the rows random but for a few
// special values.
func newCacheProblem(t testing.TB, r *rand.Rand, c cacheCase) *cacheProblem {
	capacity := c.Tk
	var opts []KVCacheOption
	if c.ring {
		opts = append(opts, WithRing())
	}
	cache, err := NewKVCache(c.B, c.Hkv, capacity, c.dk, c.dv, c.typ, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for b := range c.B {
		n := r.IntN(capacity + 1)
		if c.ring {
			n = r.IntN(3*capacity + 1)
		}
		for n > 0 {
			rows := min(n, 1+r.IntN(40))
			k := testutil.Floats(r, c.Hkv*rows*c.dk, 2)
			v := testutil.Floats(r, c.Hkv*rows*c.dv, 3)
			if err := cache.Append(b, k, v, rows); err != nil {
				t.Fatal(err)
			}
			n -= rows
		}
		if cache.Len(b) > 0 && r.IntN(4) == 0 {
			if err := cache.Truncate(b, cache.Pos(b)-r.IntN(cache.Len(b)+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	k, _ := cache.shapes()
	bc := c.batchCase
	bc.Tk, bc.valid, bc.toValid = k.rows, true, true
	p := newBatchProblem(t, r, bc)
	// The oracle's keys and values: the held rows, widened, and NaN past
	// an entry's length, which nothing may read.
	p.k = tensor(t, r, bc.B, bc.Hkv, bc.Tk, bc.dk, false, 1)
	p.v = tensor(t, r, bc.B, bc.Hkv, bc.Tk, bc.dv, false, 1)
	for b := range bc.B {
		p.opt.ValidLen[b] = cache.Len(b)
		for h := range bc.Hkv {
			for j := range bc.Tk {
				kr, vr := p.k.Row(b, h, j), p.v.Row(b, h, j)
				if j >= cache.Len(b) {
					fillNaN(kr)
					fillNaN(vr)
					continue
				}
				cache.Key(kr, b, h, j)
				cache.Value(vr, b, h, j)
			}
		}
	}
	cp := &cacheProblem{batchProblem: p, cache: cache, opt: p.opt}
	cp.opt.ValidLen = nil
	return cp
}

func cacheCases(short bool) []cacheCase {
	var cs []cacheCase
	for _, typ := range kvTypes {
		for _, ring := range []bool{false, true} {
			add := func(c batchCase) { cs = append(cs, cacheCase{c, typ, ring}) }
			// Decode steps of grouped heads (the row path, multi-row),
			// a verify of four rows (the block path), chunked long rows.
			add(batchCase{B: 2, H: 8, Hkv: 2, Tq: 1, Tk: 300, dk: 64, dv: 48})
			add(batchCase{B: 1, H: 8, Hkv: 2, Tq: 4, Tk: 300, dk: 64, dv: 64, causal: true})
			add(batchCase{B: 1, H: 4, Hkv: 1, Tq: 1, Tk: 2500, dk: 32, dv: 16, lse: true})
			// A verify over heads too long to widen whole (see
			// wideHeadBytes): 16-bit rows widened a few at a time, the
			// kernels asking for the next ones (see askStep).
			add(batchCase{B: 1, H: 4, Hkv: 1, Tq: 4, Tk: 1100, dk: 64, dv: 64, causal: true})
			// Two blocks of one head's queries: the paired kernels where
			// there are some.
			add(batchCase{B: 1, H: 2, Hkv: 1, Tq: 32, Tk: 1100, dk: 64, dv: 76, causal: true})
			// Eight heads a group: the eight-row kernels where there are
			// some, columns past a multiple of 16.
			add(batchCase{B: 1, H: 16, Hkv: 2, Tq: 1, Tk: 600, dk: 48, dv: 40})
			// Seven heads a group: the wide kernels' odd row counts.
			add(batchCase{B: 1, H: 14, Hkv: 2, Tq: 1, Tk: 600, dk: 48, dv: 40})
			add(batchCase{B: 2, H: 2, Hkv: 1, Tq: 9, Tk: 200, dk: 16, dv: 24, causal: true, window: 50, alibi: true, sinks: true, lse: true})
			add(batchCase{B: 1, H: 2, Hkv: 2, Tq: 3, Tk: 100, dk: 8, dv: 8, causal: true, weights: true, logit: true, keep: true})
			add(batchCase{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 150, dk: 40, dv: 8, causal: true, softcap: 5, bias: biasRows, keep: true})
			if !short {
				add(batchCase{B: 1, H: 32, Hkv: 8, Tq: 1, Tk: 1100, dk: 128, dv: 128})
				add(batchCase{B: 1, H: 4, Hkv: 2, Tq: 64, Tk: 700, dk: 64, dv: 64, causal: true, shift: -3})
			}
		}
	}
	return cs
}

func TestAttendCacheMatchesReference(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(61)
		// One worker or two give the same bits (TestAttendCacheBits); two
		// share a call's chunks.
		for _, workers := range []int{2} {
			e := NewBatched(workers)
			for _, c := range cacheCases(testing.Short()) {
				p := newCacheProblem(t, r, c)
				if err := e.AttendCache(p.outputs(), p.q, p.cache, &p.opt); err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				p.c = c.batchCase
				p.c.Tk, p.c.valid, p.c.toValid = p.k.rows, true, true
				p.check(t)
			}
			e.Close()
		}
	})
}

// Random shapes, every option, every type, ring or not.
func TestAttendCacheRandomShapes(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 15
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(62)
		e := NewBatched(2)
		defer e.Close()
		for range n {
			hkv := []int{1, 2, 4}[r.IntN(3)]
			c := cacheCase{batchCase{
				B: 1 + r.IntN(3), H: hkv * (1 + r.IntN(4)), Hkv: hkv,
				Tq: 1 + r.IntN(24), Tk: 1 + r.IntN(300), dk: []int{1, 7, 64, 80, 128}[r.IntN(5)], dv: 1 + r.IntN(70),
				causal: r.IntN(2) == 0, shift: r.IntN(5) - 2, keep: r.IntN(4) == 0, window: []int{0, 0, 5, 40}[r.IntN(4)],
				weights: r.IntN(4) == 0, softcap: []float32{0, 0, 1, 30}[r.IntN(4)], bias: biasKind(r.IntN(5)), logit: r.IntN(4) == 0,
				sinks: r.IntN(3) == 0, alibi: r.IntN(3) == 0, lse: r.IntN(2) == 0,
			}, kvTypes[r.IntN(len(kvTypes))], r.IntN(2) == 0}
			p := newCacheProblem(t, r, c)
			if err := e.AttendCache(p.outputs(), p.q, p.cache, &p.opt); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			p.check(t)
		}
	})
}

// A float32 cache whose rows do not wrap gives the bits of Attend over
// tensors of the same rows; every cache gives the same bits for any number
// of workers.
func TestAttendCacheBits(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(63)
		for _, c := range cacheCases(true) {
			p := newCacheProblem(t, r, c)
			var first []float32
			for _, workers := range []int{1, 2, 3, 8} {
				e := NewBatched(workers)
				if err := e.AttendCache(p.outputs(), p.q, p.cache, &p.opt); err != nil {
					t.Fatal(err)
				}
				got := p.results()
				if first == nil {
					first = got
				} else if i := testutil.FirstDiff(got, first); i >= 0 {
					t.Fatalf("%v workers=%d: element %d = %v, with one worker %v", c, workers, i, got[i], first[i])
				}
				if c.typ == F32 && !c.ring {
					if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.batchProblem.opt); err != nil {
						t.Fatal(err)
					}
					if i := testutil.FirstDiff(p.results(), got); i >= 0 {
						t.Fatalf("%v workers=%d: element %d = %v from the cache, %v from tensors", c, workers, i, got[i], p.results()[i])
					}
				}
				e.Close()
			}
		}
	})
}

// results returns every output element of the problem, in order.
func (p *batchProblem) results() []float32 {
	c := p.c
	var got []float32
	for b := range c.B {
		for h := range c.H {
			for i := range c.Tq {
				got = append(got, p.out.Row(b, h, i)...)
				if c.weights {
					got = append(got, p.w.Row(b, h, i)...)
				}
				if c.logit {
					got = append(got, p.logits.Row(b, h, i)...)
				}
			}
		}
	}
	return append(got, p.lse...)
}

func TestAttendCacheAllocatesNothing(t *testing.T) {
	r := testutil.Rand(64)
	for _, typ := range kvTypes {
		for _, workers := range []int{1, 2} {
			for _, c := range []batchCase{
				{B: 1, H: 8, Hkv: 2, Tq: 1, Tk: 3000, dk: 32, dv: 32},
				{B: 2, H: 4, Hkv: 2, Tq: 20, Tk: 100, dk: 32, dv: 32, causal: true, keep: true, sinks: true, alibi: true, lse: true},
			} {
				p := newCacheProblem(t, r, cacheCase{c, typ, true})
				e := NewBatched(workers)
				e.AttendCache(p.outputs(), p.q, p.cache, &p.opt)
				if n := testing.AllocsPerRun(5, func() { e.AttendCache(p.outputs(), p.q, p.cache, &p.opt) }); n != 0 {
					t.Errorf("%v workers=%d %v: %v allocations per AttendCache, want 0", typ, workers, c, n)
				}
				if c.Tq == 1 {
					// A decode loop with no options passes nil.
					if n := testing.AllocsPerRun(5, func() { e.AttendCache(p.outputs(), p.q, p.cache, nil) }); n != 0 {
						t.Errorf("%v workers=%d %v: %v allocations per AttendCache(nil options), want 0", typ, workers, c, n)
					}
				}
				e.Close()
			}
		}
	}
}

func TestAttendCacheErrors(t *testing.T) {
	cache, err := NewKVCache(2, 2, 10, 8, 4, F16)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		if err := cache.Append(b, make([]float32, 2*3*8), make([]float32, 2*3*4), 3); err != nil {
			t.Fatal(err)
		}
	}
	q := func(B, H, Tq, d int) Tensor {
		x, err := NewTensor(B, H, Tq, d, make([]float32, B*H*Tq*d))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	e := NewBatched(1)
	defer e.Close()
	for _, tc := range []struct {
		name  string
		dst   BatchOutputs
		q     Tensor
		cache *KVCache
		opt   *BatchOptions
		want  error
		what  string // the operand a *ShapeError names: q or an output, never the cache's k or v
	}{
		{"nil cache", BatchOutputs{Out: q(2, 4, 1, 4)}, q(2, 4, 1, 8), nil, nil, ErrArgument, ""},
		{"ValidLen", BatchOutputs{Out: q(2, 4, 1, 4)}, q(2, 4, 1, 8), cache, &BatchOptions{ValidLen: []int{1, 1}}, ErrArgument, ""},
		{"batch", BatchOutputs{Out: q(1, 4, 1, 4)}, q(1, 4, 1, 8), cache, nil, ErrShape, "q batch"},
		{"dk", BatchOutputs{Out: q(2, 4, 1, 4)}, q(2, 4, 1, 6), cache, nil, ErrShape, "q dim"},
		{"dv", BatchOutputs{Out: q(2, 4, 1, 5)}, q(2, 4, 1, 8), cache, nil, ErrShape, "out dim"},
		{"heads", BatchOutputs{Out: q(2, 3, 1, 4)}, q(2, 3, 1, 8), cache, nil, ErrShape, "q heads"},
		{"out batch", BatchOutputs{Out: q(1, 4, 1, 4)}, q(2, 4, 1, 8), cache, nil, ErrShape, "out batch"},
		{"keep", BatchOutputs{Out: q(2, 4, 1, 4)}, q(2, 4, 1, 8), cache, &BatchOptions{Keep: make([]bool, 10)}, ErrShape, "len(Keep)"},
		{"weights", BatchOutputs{Out: q(2, 4, 1, 4), Weights: ptr(q(2, 4, 1, 10))}, q(2, 4, 1, 8), cache, nil, ErrShape, "Weights cols"},
	} {
		err := e.AttendCache(tc.dst, tc.q, tc.cache, tc.opt)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		var se *ShapeError
		if tc.what != "" && (!errors.As(err, &se) || se.What != tc.what) {
			t.Errorf("%s: %v, want a *ShapeError naming %s", tc.name, err, tc.what)
		}
	}
	// The message of the review: a query one column too wide names q.
	err = e.AttendCache(BatchOutputs{Out: q(2, 4, 1, 4)}, q(2, 4, 1, 9), cache, nil)
	if want := "attention: Batched.AttendCache: q dim = 9, want 8 (cache key dimension)"; err == nil || err.Error() != want {
		t.Errorf("wide query: %v, want %q", err, want)
	}
	// Tk is the longest length: 3.
	if err := e.AttendCache(BatchOutputs{Out: q(2, 4, 1, 4), Weights: ptr(q(2, 4, 1, 3))}, q(2, 4, 1, 8), cache, nil); err != nil {
		t.Error(err)
	}
}

func ptr[T any](x T) *T { return &x }

// The rounding to 16 bits moves each score s_j by at most
// δ_j = u·|scale|·Σ_c |q_c·k_jc| (u = 2⁻¹¹ for f16, 2⁻⁸ for bf16, the
// keys in the normal range), so each weight by a factor within e^{±2δ},
// δ = max δ_j, and the output by at most (e^{2δ}(1+u) − 1)·Σ_j w_j|v_j|:
// the README's statement, checked here between a float32 cache and a
// 16-bit one of the same rows, with both results' own error bounds added.
func TestAttendCacheRoundingBound(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(65)
		e := NewBatched(1)
		defer e.Close()
		for _, typ := range []KVType{F16, BF16} {
			u := 0x1p-11
			if typ == BF16 {
				u = 0x1p-8
			}
			for _, bc := range []batchCase{
				{B: 1, H: 8, Hkv: 2, Tq: 1, Tk: 700, dk: 128, dv: 64},
				{B: 1, H: 4, Hkv: 2, Tq: 8, Tk: 300, dk: 64, dv: 64, causal: true},
			} {
				exact, err := NewKVCache(1, bc.Hkv, bc.Tk, bc.dk, bc.dv, F32)
				if err != nil {
					t.Fatal(err)
				}
				rounded, err := NewKVCache(1, bc.Hkv, bc.Tk, bc.dk, bc.dv, typ)
				if err != nil {
					t.Fatal(err)
				}
				// Keys and values away from the subnormal range, where the
				// relative bound holds.
				k, v := testutil.Floats(r, bc.Hkv*bc.Tk*bc.dk, 2), testutil.Floats(r, bc.Hkv*bc.Tk*bc.dv, 3)
				for _, x := range [][]float32{k, v} {
					for i := range x {
						if math.Abs(float64(x[i])) < 1e-3 {
							x[i] = 1e-3
						}
					}
				}
				for _, c := range []*KVCache{exact, rounded} {
					if err := c.Append(0, k, v, bc.Tk); err != nil {
						t.Fatal(err)
					}
				}
				bc.valid, bc.toValid = true, true
				p32 := &cacheProblem{batchProblem: newBatchProblem(t, r, bc), cache: exact}
				p32.batchProblem.opt.ValidLen[0] = bc.Tk
				p32.opt = p32.batchProblem.opt
				p32.opt.ValidLen = nil
				p16 := *p32.batchProblem
				p16.out = tensor(t, r, bc.B, bc.H, bc.Tq, bc.dv, false, 1)
				for _, run := range []struct {
					c   *KVCache
					out Tensor
				}{{exact, p32.out}, {rounded, p16.out}} {
					if err := e.AttendCache(BatchOutputs{Out: run.out}, p32.q, run.c, &p32.opt); err != nil {
						t.Fatal(err)
					}
				}
				checkRounding(t, p32, rounded, p16.out, u, typ)
			}
		}
	})
}

// checkRounding compares out, from the 16-bit cache rounded, with the
// float32 cache's p.out, row by row, against the bound of
// TestAttendCacheRoundingBound.
func checkRounding(t *testing.T, p *cacheProblem, rounded *KVCache, out Tensor, u float64, typ KVType) {
	c := p.c
	exact := p.cache
	scale := 1 / math.Sqrt(float64(c.dk))
	for h := range c.H {
		kh := h / (c.H / c.Hkv)
		for i := range c.Tq {
			// The float32 rows' oracle and the 16-bit rows' oracle give
			// each result's own bound; the rounding bound joins them.
			p.k, p.v = cacheTensors(t, exact, kh, c)
			rp32, want32 := p.want(0, h, i)
			p.k, p.v = cacheTensors(t, rounded, kh, c)
			_, want16 := p.want(0, h, i)
			delta := 0.0
			for j := range c.Tk {
				if !rp32.Attended(j) {
					continue
				}
				var s float64
				for col, x := range rp32.Keys[j] {
					s += math.Abs(float64(rp32.Query[col]) * float64(x))
				}
				delta = max(delta, u*scale*s)
			}
			grow := math.Exp(2*delta)*(1+u) - 1
			o32, o16 := p.out.Row(0, h, i), out.Row(0, h, i)
			for col := range c.dv {
				var wv float64
				for j, w := range want32.Weights {
					wv += w * math.Abs(float64(rp32.Values[j][col]))
				}
				bound := grow*wv + want32.CtxBound[col] + want16.CtxBound[col]
				if d := math.Abs(float64(o16[col]) - float64(o32[col])); !(d <= bound) {
					t.Fatalf("%v %v: out[0][%d][%d][%d] = %v, float32 cache %v: |Δ| = %g > %g (δ = %g)", typ, c, h, i, col, o16[col], o32[col], d, bound, delta)
				}
			}
		}
	}
}

// cacheTensors returns entry 0's held rows of the cache as K and V
// tensors of every head (only head kh filled; the others read nothing
// here).
func cacheTensors(t *testing.T, cache *KVCache, kh int, c batchCase) (Tensor, Tensor) {
	k := tensor(t, testutil.Rand(1), 1, c.Hkv, c.Tk, c.dk, false, 1)
	v := tensor(t, testutil.Rand(1), 1, c.Hkv, c.Tk, c.dv, false, 1)
	for j := range cache.Len(0) {
		cache.Key(k.Row(0, kh, j), 0, kh, j)
		cache.Value(v.Row(0, kh, j), 0, kh, j)
	}
	return k, v
}
