package attention

import (
	"os"
	"testing"
	"unsafe"

	"github.com/glancelab/attention/internal/testutil"
)

// unreadable returns a slice of n+tail floats (n > 0) whose last tail
// floats lie on an inaccessible page: reading any of them crashes the test
// binary.
func unreadable(t *testing.T, n, tail int) []float32 {
	t.Helper()
	if n <= 0 || 4*tail > os.Getpagesize() {
		t.Fatalf("unreadable(%d, %d): want n > 0 and a tail that fits one page", n, tail)
	}
	x := testutil.Guarded(t, n, true)
	return unsafe.Slice(&x[0], n+tail)
}

// Keys at or past the valid length, or past every query row's causal
// frontier, are never read, on the row path and the block path, with every
// score-stage option: those rows of the last key/value head sit on an
// inaccessible page.
func TestBatchedNeverReadsMaskedKeys(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(48)
		const B, Hkv, Tk, valid, dk, dv = 2, 2, 40, 23, 16, 8
		for _, Tq := range []int{3, 20, 40} {
			for _, causal := range []bool{false, true} {
				for flags := range 16 {
					c := batchCase{B: B, H: 2 * Hkv, Hkv: Hkv, Tq: Tq, Tk: Tk, dk: dk, dv: dv,
						keep: flags&1 != 0, weights: flags&2 != 0, logit: flags&4 != 0, causal: causal}
					if flags&8 != 0 {
						c.softcap, c.bias = 5, biasFull
						c.sinks, c.alibi, c.lse = true, true, true
					}
					if causal {
						// The last query row sees keys j <= Tk−1+shift.
						c.shift = valid - Tk
					} else {
						c.valid = true
					}
					p := newBatchProblem(t, r, c)
					if c.valid {
						p.opt.ValidLen = []int{Tk, valid}
					}
					// The same data, moved so that the rows past the valid
					// length of the last head end on the guard page.
					guard := func(x Tensor, d int) Tensor {
						n := (B*Hkv*Tk - (Tk - valid)) * d
						data := unreadable(t, n, (Tk-valid)*d)
						copy(data[:n], x.data)
						y, err := NewTensor(B, Hkv, Tk, d, data)
						if err != nil {
							t.Fatal(err)
						}
						return y
					}
					p.k, p.v = guard(p.k, dk), guard(p.v, dv)
					for i := range Tq * Tk {
						if p.opt.Keep != nil && i%Tk >= valid {
							p.opt.Keep[i] = true // no help from the keep-mask
						}
					}
					e := NewBatched(2)
					if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
						t.Fatal(err)
					}
					e.Close()
					// The oracle reads every key: give it copies.
					p.k, p.v = copyTensor(p.k, valid), copyTensor(p.v, valid)
					p.check(t)
				}
			}
		}
	})
}

// copyTensor returns a packed copy of x, whose rows at or past valid in
// the last head of the last batch entry are zeros (they are unreadable).
func copyTensor(x Tensor, valid int) Tensor {
	B, H, T, d := x.Shape()
	n := (B*H*T - (T - valid)) * d
	data := make([]float32, B*H*T*d)
	copy(data, x.data[:n])
	y, _ := NewTensor(B, H, T, d, data)
	return y
}

// Keys before every row's sliding window are never read, on the row path
// and the block path, cut into chunks or not: those rows of K and V sit on
// inaccessible pages.
func TestBatchedWindowNeverReadsEarlierKeys(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(49)
		const dk, dv, window = 16, 8, 10
		for _, s := range [][3]int{{8, 1, 60}, {2, 4, 60}, {1, 20, 60}, {8, 1, 1500}, {1, 20, 1500}} {
			H, Tq, Tk := s[0], s[1], s[2]
			for _, causal := range []bool{false, true} {
				for _, weights := range []bool{false, true} {
					c := batchCase{B: 1, H: H, Hkv: 1, Tq: Tq, Tk: Tk, dk: dk, dv: dv, window: window,
						causal: causal, weights: weights, logit: weights}
					p := newBatchProblem(t, r, c)
					// Row 0's window is the earliest.
					first := p.rowEnd(0, 0, Tk) - window
					hidden := func(x Tensor, d int) Tensor {
						data, stride := testutil.GuardedRows(t, Tk, d, func(j int) bool { return j < first })
						for j := first; j < Tk; j++ {
							copy(data[j*stride:j*stride+d], x.Row(0, 0, j))
						}
						y, err := NewTensorStrided(1, 1, Tk, d, Tk*stride, Tk*stride, stride, data)
						if err != nil {
							t.Fatal(err)
						}
						return y
					}
					k, v := p.k, p.v
					p.k, p.v = hidden(k, dk), hidden(v, dv)
					e := NewBatched(2)
					if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
						t.Fatal(err)
					}
					e.Close()
					p.k, p.v = k, v // the oracle reads every key
					p.check(t)
				}
			}
		}
	})
}
