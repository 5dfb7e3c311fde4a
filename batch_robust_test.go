package attention

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/glancelab/attention/internal/testutil"
)

// Zero-size problems: every dimension 0 alone and together, on one worker
// and several (no task at all must not upset the pool), with strided views
// (whose strides a zero dimension makes irrelevant), weights and logits.
// The answers follow the oracle: no key means a zero output, keys of
// dimension 0 all score 0.
func TestBatchedZeroSizes(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(41)
		engines := []*Batched{NewBatched(1), NewBatched(2), NewBatched(3)}
		defer func() {
			for _, e := range engines {
				e.Close()
			}
		}()
		for _, B := range []int{0, 2} {
			for _, heads := range [][2]int{{0, 0}, {0, 1}, {2, 1}} {
				for _, Tq := range []int{0, 1, 17} {
					for _, Tk := range []int{0, 1, 5} {
						for _, dims := range [][2]int{{0, 0}, {0, 3}, {4, 0}, {4, 3}} {
							for flags := range 8 {
								c := batchCase{B: B, H: heads[0], Hkv: heads[1], Tq: Tq, Tk: Tk, dk: dims[0], dv: dims[1],
									strided: flags&1 != 0, weights: flags&2 != 0, logit: flags&4 != 0, causal: flags == 5,
									lse: flags != 0, sinks: flags&1 != 0, alibi: flags&4 != 0}
								for _, e := range engines {
									p := newBatchProblem(t, r, c)
									if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
										t.Fatalf("%v workers=%d: %v", c, e.Workers(), err)
									}
									p.check(t)
								}
							}
						}
					}
				}
			}
		}
	})
}

// Views with no element may have huge other dimensions; the engine derives
// no work or scratch from them, so these calls return at once.
func TestBatchedHugeEmptyDims(t *testing.T) {
	huge := math.MaxInt/4 + 1 // 2^61 on 64-bit ints, 2^29 on 32-bit
	mk := func(b, h, rows, cols int) Tensor {
		x, err := NewTensor(b, h, rows, cols, nil)
		if err != nil {
			t.Fatalf("NewTensor(%d, %d, %d, %d, nil): %v", b, h, rows, cols, err)
		}
		return x
	}
	cases := []struct {
		name          string
		out, q, k, v  Tensor
		keep, weights bool
	}{
		{"keys", mk(1, 1, 1, 0), mk(1, 1, 1, 0), mk(1, 1, huge, 0), mk(1, 1, huge, 0), false, false},
		{"keys, Tq 64", mk(1, 1, 64, 0), mk(1, 1, 64, 0), mk(1, 1, huge, 0), mk(1, 1, huge, 0), false, false},
		{"queries", mk(1, 1, huge, 0), mk(1, 1, huge, 0), mk(1, 1, 3, 0), mk(1, 1, 3, 0), false, false},
		{"batch and heads", mk(huge, huge, huge, 0), mk(huge, huge, huge, 0), mk(huge, 1, huge, 0), mk(huge, 1, huge, 0), false, false},
		{"no batch", mk(0, 2, huge, huge), mk(0, 2, huge, huge), mk(0, 1, huge, huge), mk(0, 1, huge, huge), false, false},
		{"empty weights", mk(1, 1, 0, 0), mk(1, 1, 0, 0), mk(1, 1, huge, 0), mk(1, 1, huge, 0), false, true},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 2} {
			e := NewBatched(workers)
			opt := &BatchOptions{Causal: true}
			dst := BatchOutputs{Out: c.out}
			if c.weights {
				w := mk(1, 1, 0, huge)
				dst.Weights = &w
			}
			done := make(chan error, 1)
			go func() { done <- e.Attend(dst, c.q, c.k, c.v, opt) }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s, %d workers: Attend did not return", c.name, workers)
			}
			e.Close()
		}
	}
	// Tq·Tk overflows int: no keep-mask can have that length.
	q, k := mk(1, 1, huge, 0), mk(1, 1, huge, 0)
	e := NewBatched(1)
	defer e.Close()
	for _, keep := range [][]bool{{}, make([]bool, 8)} {
		if err := e.Attend(BatchOutputs{Out: q}, q, k, k, &BatchOptions{Keep: keep}); !errors.Is(err, ErrShape) {
			t.Errorf("keep-mask of %d for Tq = Tk = %d: %v, want ErrShape", len(keep), huge, err)
		}
	}
}

// A query row whose every key the bias masks gets zeros on every path,
// even where a value row is not finite (the block blend would compute
// 0·Inf); a partly masked row sees that value row (0·Inf = NaN), also when
// the masked keys fill whole key tiles, as the oracle says.
func TestBatchedFullyMaskedNonFiniteValues(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(42)
		ninf := float32(math.Inf(-1))
		// Tk = 2100 cuts the rows into chunks of keys, the first of them
		// wholly masked for some rows.
		for _, shape := range [][2]int{{3, 700}, {20, 700}, {3, 2100}, {20, 2100}} {
			Tq, Tk := shape[0], shape[1]
			for _, opts := range []batchCase{{}, {weights: true, logit: true}, {keep: true}, {softcap: 2}, {sinks: true, alibi: true, lse: true},
				{weights: true, sinks: true, lse: true}} {
				for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
					c := batchCase{B: 1, H: 2, Hkv: 1, Tq: Tq, Tk: Tk, dk: 4, dv: 3, bias: biasRows,
						weights: opts.weights, logit: opts.logit, keep: opts.keep, softcap: opts.softcap,
						sinks: opts.sinks, alibi: opts.alibi, lse: opts.lse}
					p := newBatchProblem(t, r, c)
					p.v.Row(0, 0, 3)[1] = bad
					for i := range c.Tq {
						row := p.bias.Row(0, 0, i)
						for j := range row {
							row[j] = 0
							if c.keep {
								p.opt.Keep[i*c.Tk+j] = true
							}
						}
						switch i % 3 {
						case 0: // every key masked
							fillWith(row, ninf)
						case 1: // the first keys masked, whole tiles of them
							fillWith(row[:Tk*6/7], ninf)
						}
					}
					e := NewBatched(1)
					if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
						t.Fatal(err)
					}
					e.Close()
					for h := range c.H {
						for i := 0; i < c.Tq; i += 3 {
							for _, x := range p.out.Row(0, h, i) {
								if x != 0 || math.Signbit(float64(x)) {
									t.Fatalf("%v: fully masked row %d gives %v", c, i, p.out.Row(0, h, i))
								}
							}
						}
					}
					p.check(t)
				}
			}
		}
	})
}

// The causal frontier saturates instead of wrapping: a shift of MaxInt
// unmasks every key, MinInt masks every key. The row's position saturates
// alike, and so does its ALiBi distance (the oracle's frontier and
// distance saturate as the documentation says).
func TestBatchedCausalShiftExtremes(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(43)
		for _, Tq := range []int{3, 20} {
			for _, shift := range []int{math.MaxInt, math.MaxInt - 1, math.MinInt, math.MinInt + 1} {
				for flags := range 4 {
					toValid, alibi := flags&1 != 0, flags&2 != 0
					c := batchCase{B: 2, H: 2, Hkv: 1, Tq: Tq, Tk: 30, dk: 4, dv: 3, causal: true, shift: shift, valid: toValid, toValid: toValid,
						alibi: alibi, lse: alibi, sinks: alibi}
					p := newBatchProblem(t, r, c)
					e := NewBatched(2)
					if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
						t.Fatal(err)
					}
					p.check(t)
					// Without the causal mask the position still counts.
					p.opt.Causal, p.c.causal = false, false
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

// A Softcap whose reciprocal overflows float32 is refused: the scores are
// multiplied by it, and 0·Inf would be NaN.
func TestBatchedTinySoftcap(t *testing.T) {
	r := testutil.Rand(44)
	p := newBatchProblem(t, r, batchCase{B: 1, H: 1, Hkv: 1, Tq: 2, Tk: 3, dk: 2, dv: 2})
	e := NewBatched(1)
	defer e.Close()
	for _, c := range []float32{0x1p-128, math.SmallestNonzeroFloat32, 2.9e-39} {
		p.opt.Softcap = c
		if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); !errors.Is(err, ErrArgument) {
			t.Errorf("Softcap %g: %v, want ErrArgument", c, err)
		}
	}
	// The smallest accepted softcap computes c·tanh(s/c) = ±c (0 for a
	// zero score).
	c := float32(0x1p-127)
	p.opt.Softcap = c
	p.c.softcap = c
	clear(p.q.Row(0, 0, 0))
	if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
		t.Fatal(err)
	}
	p.check(t)
}

// The zero Batched is a one-worker engine.
func TestBatchedZeroValue(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(45)
		var e Batched
		if e.Workers() != 1 {
			t.Errorf("zero Batched has %d workers, want 1", e.Workers())
		}
		for _, Tq := range []int{3, 20} {
			p := newBatchProblem(t, r, batchCase{B: 2, H: 2, Hkv: 1, Tq: Tq, Tk: 9, dk: 4, dv: 3, causal: true})
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatal(err)
			}
			p.check(t)
		}
		e.Close()
		if err := e.Attend(BatchOutputs{}, Tensor{}, Tensor{}, Tensor{}, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: %v, want ErrClosed", err)
		}
	})
}

// A closed Batched says so with ErrClosed, for empty problems too, and
// Close may be called again.
func TestBatchedClosed(t *testing.T) {
	r := testutil.Rand(46)
	for _, workers := range []int{1, 2} {
		e := NewBatched(workers)
		e.Close()
		e.Close()
		p := newBatchProblem(t, r, batchCase{B: 1, H: 1, Hkv: 1, Tq: 2, Tk: 3, dk: 2, dv: 2})
		if err := e.Attend(p.outputs(), p.q, p.k, p.v, nil); !errors.Is(err, ErrClosed) || errors.Is(err, ErrArgument) {
			t.Errorf("%d workers: %v, want ErrClosed", workers, err)
		}
		if err := e.Attend(BatchOutputs{}, Tensor{}, Tensor{}, Tensor{}, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("%d workers, empty problem: %v, want ErrClosed", workers, err)
		}
	}
}

// Outputs must not share memory with one another, with themselves or with
// the inputs; inputs may overlap freely.
func TestBatchedAliasing(t *testing.T) {
	r := testutil.Rand(47)
	e := NewBatched(1)
	defer e.Close()
	buf := testutil.Floats(r, 4096, 1)
	view := func(off, B, H, T, d, bs, hs, rs int) Tensor {
		x, err := NewTensorStrided(B, H, T, d, bs, hs, rs, buf[off:])
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	q := view(0, 1, 2, 4, 8, 64, 32, 8)
	k := view(0, 1, 1, 4, 8, 32, 32, 8) // overlaps q: fine
	v := view(16, 1, 1, 4, 8, 32, 32, 8)
	good := view(1000, 1, 2, 4, 8, 64, 32, 8)
	if err := e.Attend(BatchOutputs{Out: good}, q, k, v, nil); err != nil {
		t.Fatalf("inputs overlapping one another: %v", err)
	}
	// The [B][T][H][d] layout interleaves heads without sharing elements.
	if err := e.Attend(BatchOutputs{Out: view(1000, 1, 2, 4, 8, 64, 8, 16)}, q, k, v, nil); err != nil {
		t.Fatalf("interleaved output heads: %v", err)
	}
	w := view(2000, 1, 2, 4, 4, 32, 16, 4)
	for name, f := range map[string]func() error{
		"out over q": func() error { return e.Attend(BatchOutputs{Out: view(40, 1, 2, 4, 8, 64, 32, 8)}, q, k, v, nil) },
		"out over v": func() error {
			return e.Attend(BatchOutputs{Out: view(200, 1, 2, 4, 8, 64, 32, 8)}, q, k, view(210, 1, 1, 4, 8, 32, 32, 8), nil)
		},
		"out heads repeated": func() error { return e.Attend(BatchOutputs{Out: view(1000, 1, 2, 4, 8, 0, 0, 8)}, q, k, v, nil) },
		"out heads overlap":  func() error { return e.Attend(BatchOutputs{Out: view(1000, 1, 2, 4, 8, 64, 16, 8)}, q, k, v, nil) },
		"weights over out": func() error {
			x := view(1010, 1, 2, 4, 4, 32, 16, 4)
			return e.Attend(BatchOutputs{Out: good, Weights: &x}, q, k, v, nil)
		},
		"logits over weights": func() error {
			x := view(2010, 1, 2, 4, 4, 32, 16, 4)
			return e.Attend(BatchOutputs{Out: good, Weights: &w, Logits: &x}, q, k, v, nil)
		},
		"logits over bias": func() error {
			x := view(3000, 1, 2, 4, 4, 32, 16, 4)
			b := view(3000, 1, 1, 4, 4, 16, 16, 4)
			return e.Attend(BatchOutputs{Out: good, Logits: &x}, q, k, v, &BatchOptions{Bias: &b})
		},
	} {
		if err := f(); !errors.Is(err, ErrArgument) {
			t.Errorf("%s: %v, want ErrArgument", name, err)
		}
	}
}

// The errors about the outputs name them as the operands of the call:
// "out", "Weights", "Logits", "LSE", and the per-head options likewise.
func TestBatchedOutputErrorMessages(t *testing.T) {
	r := testutil.Rand(48)
	e := NewBatched(1)
	defer e.Close()
	buf := testutil.Floats(r, 4096, 1)
	view := func(off, B, H, T, d, bs, hs, rs int) Tensor {
		x, err := NewTensorStrided(B, H, T, d, bs, hs, rs, buf[off:])
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	q := view(0, 1, 2, 4, 8, 64, 32, 8)
	k := view(0, 1, 1, 4, 8, 32, 32, 8)
	v := view(16, 1, 1, 4, 8, 32, 32, 8)
	out := view(1000, 1, 2, 4, 8, 64, 32, 8)
	grid := func(off int) *Tensor {
		x := view(off, 1, 2, 4, 4, 32, 16, 4)
		return &x
	}
	short := view(2000, 1, 2, 4, 3, 24, 12, 3)
	repeated := view(2000, 1, 2, 4, 4, 0, 0, 4)
	bias := view(3000, 1, 1, 4, 4, 16, 16, 4)
	for _, c := range []struct {
		dst  BatchOutputs
		opt  *BatchOptions
		want string
	}{
		{BatchOutputs{Out: view(1000, 1, 2, 4, 7, 56, 28, 7)}, nil, "out dim = 7, want 8 (v dim)"},
		{BatchOutputs{Out: out, Weights: &short}, nil, "Weights cols = 3, want 4 (Tk)"},
		{BatchOutputs{Out: out, Logits: &short}, nil, "Logits cols = 3, want 4 (Tk)"},
		{BatchOutputs{Out: out, Weights: ptr(view(2000, 1, 2, 2, 8, 32, 16, 8))}, nil, "Weights rows = 2, want 4 (Tq)"},
		{BatchOutputs{Out: out, Weights: grid(1010)}, nil, "out overlaps Weights in memory"},
		{BatchOutputs{Out: out, Weights: grid(2000), Logits: grid(2010)}, nil, "Weights overlaps Logits in memory"},
		{BatchOutputs{Out: out, Logits: grid(3000)}, &BatchOptions{Bias: &bias}, "Logits overlaps Bias in memory"},
		{BatchOutputs{Out: out, Logits: &repeated}, nil, "Logits has elements that share memory (its strides overlap)"},
		{BatchOutputs{Out: out, Logits: grid(10)}, nil, "Logits overlaps q in memory"},
		{BatchOutputs{Out: out, LSE: make([]float32, 7)}, nil, "len(LSE) = 7, want 8 (batch·heads·Tq)"},
		{BatchOutputs{Out: out, LSE: buf[1004:1012]}, nil, "out overlaps LSE in memory"},
		{BatchOutputs{Out: out, LSE: buf[3000:3008]}, &BatchOptions{Sinks: buf[3006:3008]}, "LSE overlaps Sinks in memory"},
		{BatchOutputs{Out: out, Weights: grid(3000)}, &BatchOptions{ALiBi: buf[3030:3032]}, "Weights overlaps ALiBi in memory"},
		{BatchOutputs{Out: out}, &BatchOptions{Sinks: buf[:3]}, "len(Sinks) = 3, want 2 (query heads)"},
		{BatchOutputs{Out: out}, &BatchOptions{ALiBi: buf[:1]}, "len(ALiBi) = 1, want 2 (query heads)"},
		{BatchOutputs{Out: out}, &BatchOptions{ALiBi: []float32{1, float32(math.Inf(1))}}, "ALiBi[1] = +Inf is not finite"},
	} {
		err := e.Attend(c.dst, q, k, v, c.opt)
		if err == nil || !strings.HasSuffix(err.Error(), ": Batched.Attend: "+c.want) {
			t.Errorf("err = %v, want one ending in %q", err, c.want)
		}
	}
}

// Tensor's accessors report the view as built; a view with no element has
// zero strides.
func TestTensorAccessors(t *testing.T) {
	data := make([]float32, 200)
	for i := range data {
		data[i] = float32(i)
	}
	x, err := NewTensorStrided(2, 3, 4, 5, 90, 30, 7, data)
	if err != nil {
		t.Fatal(err)
	}
	if b, h, r, c := x.Shape(); b != 2 || h != 3 || r != 4 || c != 5 {
		t.Errorf("Shape = %d %d %d %d", b, h, r, c)
	}
	if bs, hs, rs := x.Strides(); bs != 90 || hs != 30 || rs != 7 {
		t.Errorf("Strides = %d %d %d", bs, hs, rs)
	}
	if got := x.At(1, 2, 3, 4); got != 90+60+21+4 {
		t.Errorf("At(1, 2, 3, 4) = %v", got)
	}
	e, err := NewTensorStrided(0, 3, 4, 5, 90, 30, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bs, hs, rs := e.Strides(); bs != 0 || hs != 0 || rs != 0 {
		t.Errorf("empty view: Strides = %d %d %d, want zeros", bs, hs, rs)
	}
	for _, f := range []func(){func() { x.At(0, 0, 0, 5) }, func() { x.At(2, 0, 0, 0) }, func() { e.At(0, 0, 0, 0) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("At out of range did not panic")
				}
			}()
			f()
		}()
	}
}
