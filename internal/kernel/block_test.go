package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// Key counts around the kernels' groups of 6 keys and unroll of 4, and
// dimensions around the same.
var blockNs = []int{0, 1, 2, 4, 5, 6, 7, 11, 12, 13, 67}
var blockDs = []int{0, 1, 3, 4, 5, 6, 7, 8, 17, 64, 67}

func TestBlockScores(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range blockNs {
			for _, d := range blockDs {
				for _, pad := range []int{0, 3} {
					for _, sp := range []bool{false, true} {
						stride, off := d+pad, (n+d)%8
						seed := uint64(n*1000 + d*10 + pad)
						k, kw := testutil.Fill(seed, max(0, (n-1)*stride+d), off, 2, sp)
						qt, qw := testutil.Fill(seed+1, BlockRows*d, (off+3)%8, 2, sp)
						st, sw := testutil.Offset(BlockRows*n, 5)
						BlockScores(st, qt, k, stride)
						testutil.CheckGuards(t, sw, 5, len(st))
						testutil.CheckGuards(t, kw, off, len(k))
						testutil.CheckGuards(t, qw, (off+3)%8, len(qt))
						for j := range n {
							for r := range BlockRows {
								q := make([]float32, d)
								for c := range q {
									q[c] = qt[c*BlockRows+r]
								}
								want, abs := reference.Dot(q, k[j*stride:j*stride+d])
								if !testutil.Close(st[j*BlockRows+r], want, reference.DotBound(d, abs)) && !(sp && testutil.Overflowed(want, abs)) {
									t.Fatalf("n=%d d=%d stride=%d: score[%d][%d] = %v, want %v", n, d, stride, j, r, st[j*BlockRows+r], want)
								}
							}
						}
					}
				}
			}
		}
	})
}

func TestBlockBlend(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range blockNs {
			for _, dv := range blockDs {
				for _, pad := range []int{0, 3} {
					stride, off := dv+pad, (n+dv)%8
					seed := uint64(n*1000 + dv*10 + pad)
					v, vw := testutil.Fill(seed, max(0, (n-1)*stride+dv), off, 3, false)
					st, _ := testutil.Fill(seed+1, BlockRows*n, 1, 1, false)
					c, _ := testutil.Fill(seed+2, BlockRows, 2, 1, false)
					if pad == 3 {
						c = nil // no rescale
					}
					ot, ow := testutil.Fill(seed+3, BlockRows*dv, 6, 2, false)
					ot0 := append([]float32(nil), ot...)
					BlockBlend(ot, st, v, stride, c)
					testutil.CheckGuards(t, ow, 6, len(ot))
					testutil.CheckGuards(t, vw, off, len(v))
					for i := range dv {
						for r := range BlockRows {
							oc := float64(ot0[i*BlockRows+r])
							if c != nil {
								oc = float64(ot0[i*BlockRows+r] * c[r])
							}
							want, abs := oc, math.Abs(oc)
							for j := range n {
								pv := float64(st[j*BlockRows+r]) * float64(v[j*stride+i])
								want += pv
								abs += math.Abs(pv)
							}
							bound := reference.Gamma(n+1)*abs + float64(n+1)*0x1p-149
							if !testutil.Close(ot[i*BlockRows+r], want, bound) {
								t.Fatalf("n=%d dv=%d stride=%d: out[%d][%d] = %v, want %v ± %g", n, dv, stride, i, r, ot[i*BlockRows+r], want, bound)
							}
						}
					}
				}
			}
		}
	})
}

// blockScoreSets are score tiles for the softmax kernels: ordinary values,
// masked (-Inf) keys and lanes, large spreads that need the special exp
// code, +Inf and NaN.
func blockScoreSets() [][]float32 {
	r := testutil.Rand(31)
	var sets [][]float32
	for _, n := range []int{0, 1, 2, 3, 7, 40} {
		for kind := range 6 {
			s := testutil.Floats(r, BlockRows*n, 20)
			for i := range s {
				switch {
				case kind == 1 && r.IntN(3) == 0, kind == 2 && i%BlockRows < 5:
					s[i] = float32(math.Inf(-1))
				case kind == 3 && r.IntN(4) == 0:
					s[i] = -200 + 150*r.Float32()
				case kind == 4 && r.IntN(8) == 0:
					s[i] = testutil.Specials[r.IntN(len(testutil.Specials))]
				case kind == 5:
					s[i] *= 1e3
				}
			}
			sets = append(sets, s)
		}
	}
	return sets
}

// The softmax kernels compute what the generic ones do, bit for bit (the
// exp scheme is exact to its scalar form and the sums run in the same
// order), except in lanes holding a NaN, where only the NaN sum matters.
func TestBlockSoftmaxMatchesGeneric(t *testing.T) {
	sets := blockScoreSets()
	testutil.ForEachImpl(t, func(t *testing.T) {
		for si, first := range sets {
			for _, second := range sets[len(sets)-7:] {
				ml, want := make([]float32, 4*BlockRows), make([]float32, 4*BlockRows)
				for r := range BlockRows {
					ml[r], ml[BlockRows+r] = float32(math.Inf(-1)), 0
				}
				copy(want, ml)
				nan := make([]bool, BlockRows)
				for _, s := range [][]float32{first, second} {
					got, ref := append([]float32(nil), s...), append([]float32(nil), s...)
					BlockSoftmax(got, ml)
					blockMaxGeneric(ref, want)
					blockExpSumGeneric(ref, want)
					for i, x := range s {
						if x != x {
							nan[i%BlockRows] = true
						}
					}
					for i := range got {
						if !nan[i%BlockRows] && math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
							t.Fatalf("set %d: weight[%d] = %v, generic %v", si, i, got[i], ref[i])
						}
					}
					for i := range ml {
						r := i % BlockRows
						if nan[r] {
							if i/BlockRows == 1 && ml[i] == ml[i] {
								t.Fatalf("set %d: lane %d holds a NaN score but l = %v", si, r, ml[i])
							}
							continue
						}
						if math.Float32bits(ml[i]) != math.Float32bits(want[i]) {
							t.Fatalf("set %d: state[%d][%d] = %v, generic %v", si, i/BlockRows, r, ml[i], want[i])
						}
					}
				}
			}
		}
	})
}

// The generic block softmax against float64: weights e^(s-mu) within the
// exp scheme's ulp bound, sums within γ_n.
func TestBlockSoftmaxGeneric(t *testing.T) {
	for si, s := range blockScoreSets() {
		ml := make([]float32, 4*BlockRows)
		for r := range BlockRows {
			ml[r], ml[BlockRows+r] = float32(math.Inf(-1)), 0
		}
		w := append([]float32(nil), s...)
		blockMaxGeneric(w, ml)
		blockExpSumGeneric(w, ml)
		n := len(s) / BlockRows
		for r := range BlockRows {
			m, sum, bad := math.Inf(-1), 0.0, false
			for j := range n {
				x := float64(s[j*BlockRows+r])
				bad = bad || x != x || math.IsInf(x, 1)
				m = math.Max(m, x)
			}
			if bad {
				if l := ml[BlockRows+r]; l == l {
					t.Fatalf("set %d lane %d: l = %v, want NaN", si, r, l)
				}
				continue
			}
			mu := m
			if math.IsInf(m, -1) {
				mu = 0
			}
			if float64(ml[r]) != m || float64(ml[3*BlockRows+r]) != mu {
				t.Fatalf("set %d lane %d: m, mu = %v, %v, want %v, %v", si, r, ml[r], ml[3*BlockRows+r], m, mu)
			}
			// s - mu rounds before the exp: a relative error of |s - mu|·u
			// on top of the scheme's 2u.
			errs := 0.0
			for j := range n {
				x := float64(s[j*BlockRows+r]) - mu
				want := math.Exp(x)
				e := want*(math.Abs(x)+2)*reference.U + 0x1p-126
				if got := float64(w[j*BlockRows+r]); math.Abs(got-want) > e {
					t.Fatalf("set %d: weight[%d][%d] = %v, want %v", si, j, r, got, want)
				}
				sum += want
				errs += e
			}
			if l := float64(ml[BlockRows+r]); math.Abs(l-sum) > reference.Gamma(n)*sum+errs {
				t.Fatalf("set %d lane %d: l = %v, want %v", si, r, l, sum)
			}
		}
	}
}

// The block kernels stay inside their slices, which end at (after) or
// start after an inaccessible page, on every head size 0..67, two
// strides and several counts of keys. With -short each shape takes one
// side, turning with it, and the generic kernels (Go, which bounds checks
// keep inside their slices) only the head sizes of shortCols.
func TestBlockKernelsStayInBounds(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, after := range []bool{true, false} {
			for d := 0; d <= 67; d++ {
				if testing.Short() && impl.Active() == impl.Generic && !shortCols(d) {
					continue
				}
				for _, pad := range []int{0, 3} {
					for _, n := range []int{1, 3, 4, 6, 7, 13, 16, 35} {
						if testing.Short() && after != ((d+pad+n)%2 == 0) {
							continue
						}
						t.Run(fmt.Sprintf("after=%v/d=%d/pad=%d/n=%d", after, d, pad, n), func(t *testing.T) {
							stride := d + pad
							k := testutil.Guarded(t, (n-1)*stride+d, after)
							qt := testutil.Guarded(t, BlockRows*d, after)
							st := testutil.Guarded(t, BlockRows*n, after)
							ot := testutil.Guarded(t, BlockRows*d, after)
							ml := testutil.Guarded(t, 4*BlockRows, after)
							c := testutil.Guarded(t, BlockRows, after)
							BlockScores(st, qt, k, stride)
							BlockSoftmax(st, ml)
							BlockBlend(ot, st, k, stride, c)
							for _, rows := range []int{1, 8, 16} {
								q := testutil.Guarded(t, (rows-1)*stride+d, after)
								BlockIn(qt, q, stride, rows)
								BlockOut(q, stride, rows, qt)
							}
						})
					}
				}
			}
		}
	})
}

// The transposes move values exactly: every implementation gives the
// generic result bit for bit.
func TestBlockTransposes(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, d := range blockDs {
			for _, rows := range []int{1, 3, 7, 8, 9, 15, 16} {
				for _, pad := range []int{0, 3} {
					stride := d + pad
					seed := uint64(d*100 + rows*10 + pad)
					q, qw := testutil.Fill(seed, max(0, (rows-1)*stride+d), 3, 4, true)
					qt, tw := testutil.Offset(BlockRows*d, 1)
					want := make([]float32, BlockRows*d)
					BlockIn(qt, q, stride, rows)
					blockInGeneric(want, q, stride, rows)
					testutil.CheckGuards(t, tw, 1, len(qt))
					testutil.CheckGuards(t, qw, 3, len(q))
					for i := range qt {
						if math.Float32bits(qt[i]) != math.Float32bits(want[i]) && !(qt[i] != qt[i] && want[i] != want[i]) {
							t.Fatalf("in d=%d rows=%d stride=%d: qt[%d] = %v, want %v", d, rows, stride, i, qt[i], want[i])
						}
					}
					o, ow := testutil.Fill(seed+1, max(0, (rows-1)*stride+d), 5, 1, false)
					o2 := append([]float32(nil), o...)
					BlockOut(o, stride, rows, qt)
					blockOutGeneric(o2, stride, rows, qt)
					testutil.CheckGuards(t, ow, 5, len(o))
					for i := range o {
						if math.Float32bits(o[i]) != math.Float32bits(o2[i]) && !(o[i] != o[i] && o2[i] != o2[i]) {
							t.Fatalf("out d=%d rows=%d stride=%d: o[%d] = %v, want %v", d, rows, stride, i, o[i], o2[i])
						}
					}
				}
			}
		}
	})
}

// prefetchRows is only a hint: whatever the shape, even rows that do not
// fit in x, it must leave x as it was and not fault.
func TestPrefetchRows(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 15, 16, 17, 100, 1000} {
			x, xw := testutil.Fill(uint64(n), n, 3, 2, true)
			want := append([]float32(nil), x...)
			for _, stride := range []int{0, 1, 16, 19, 64} {
				for _, rows := range []int{0, 1, 2, 16, 100} {
					for _, cols := range []int{-1, 0, 1, 15, 16, 17, 64, n} {
						PrefetchRows(x, stride, rows, cols)
					}
				}
			}
			testutil.CheckGuards(t, xw, 3, len(x))
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d: x[%d] = %v, want %v", n, i, x[i], want[i])
				}
			}
		}
	})
}
