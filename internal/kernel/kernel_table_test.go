package kernel

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/kernels"
	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// Every kernel of the table, on every implementation, agrees with its
// generic twin on every size 0..67 and two large ones, with every input
// starting off alignment or against an inaccessible page on either side
// (with -short, fewer placements: see tablePlacements).
// A kernel of the table without a case here fails the test.
func TestKernelTable(t *testing.T) {
	for name := range kernelCases {
		if !inTable(name) {
			t.Errorf("kernelCases has %s, which is no kernel of the table", name)
		}
	}
	for _, k := range kernels.All {
		c, ok := kernelCases[k.Name]
		if !ok {
			t.Errorf("kernel %s of the table has no case in kernelCases", k.Name)
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			testutil.ForEachImpl(t, func(t *testing.T) {
				for _, n := range tableSizes {
					for _, pl := range tablePlacements(n, k.Name) {
						checkAgainstGeneric(t, c, n, pl)
					}
				}
			})
		})
	}
}

func inTable(name string) bool {
	for _, k := range kernels.All {
		if k.Name == name {
			return true
		}
	}
	return false
}

// tableSizes are the sizes each case is run on: every tail up to well past
// one unrolled block of every kernel, and two large sizes.
var tableSizes = func() []int {
	var n []int
	for i := 0; i <= 67; i++ {
		n = append(n, i)
	}
	return append(n, 1000, 4099)
}()

// placement says where a case's slices live: off elements past an aligned
// start (guarded by sentinels), or against an inaccessible page.
type placement struct {
	off   int
	guard int // 0: none, 1: the slice ends at a guard page, -1: starts after one
}

func (p placement) String() string {
	switch p.guard {
	case 1:
		return "guard-after"
	case -1:
		return "guard-before"
	}
	return fmt.Sprintf("offset=%d", p.off)
}

func placementsFor(n int) []placement {
	var p []placement
	for off := range 8 {
		if n <= 67 || off%5 == 0 {
			p = append(p, placement{off: off})
		}
	}
	if testutil.GuardSupported {
		p = append(p, placement{guard: 1}, placement{guard: -1})
	}
	return p
}

// tablePlacements are the placements TestKernelTable runs the kernel
// called name on at size n: all of placementsFor(n), but with -short
// fewer. Where the active implementation runs its own assembly for the
// kernel, one offset, turning with n (so that the sizes 0..67 meet each
// one eight times), and one guard page, turning every sixteen sizes (so
// that every tail of 8- and 16-lane loops meets both). Where it runs
// code another check covers (see sharedCode), one placement, turning
// with n: the generic twin is Go, which bounds checks keep inside its
// slices, and which the check compares with itself; reused functions get
// every placement under their own implementation.
func tablePlacements(n int, name string) []placement {
	all := placementsFor(n)
	if !testing.Short() {
		return all
	}
	if sharedCode(name) {
		return []placement{all[n%len(all)]}
	}
	offsets := 0
	for _, pl := range all {
		if pl.guard == 0 {
			offsets++
		}
	}
	p := []placement{all[n%offsets]}
	if guards := all[offsets:]; len(guards) > 0 {
		p = append(p, guards[n/16%len(guards)])
	}
	return p
}

// sharedCode reports whether the active implementation runs, for the
// kernel called name, code that a check of another implementation
// covers: the generic twin (on the generic implementation, or where the
// table says Generic), another implementation's functions (Reuse), or
// nothing (NoOp). The short tests run such pairs smaller.
func sharedCode(name string) bool {
	a := impl.Active()
	if a == impl.Generic {
		return true
	}
	for _, k := range kernels.All {
		if k.Name == name {
			u := k.Use(a)
			return u == kernels.Generic || u == kernels.Reuse || u == kernels.NoOp
		}
	}
	panic("sharedCode: " + name + " is no kernel of the table")
}

// checkAgainstGeneric runs c at size n with its slices placed by pl on the
// selected implementation, and again with the same values on the generic
// one, and compares what the two wrote.
func checkAgainstGeneric(t *testing.T, c kernelCase, n int, pl placement) {
	t.Helper()
	name := impl.Active()
	a := &kernelArgs{t: t, r: testutil.Rand(uint64(n)), pl: pl}
	got := c(a, n)
	for _, check := range a.checks {
		check()
	}
	impl.Select(impl.Generic)
	want := c(&kernelArgs{t: t, r: testutil.Rand(uint64(n))}, n)
	impl.Select(name)
	for i, w := range want {
		g := got[i]
		for j := range w.got {
			if !agree(g.got[j], w.got[j], w.bound, j) {
				t.Fatalf("n=%d %v: %s[%d] = %v (%#x), generic %v (%#x), bound %v", n, pl, w.name, j,
					g.got[j], math.Float32bits(g.got[j]), w.got[j], math.Float32bits(w.got[j]), boundAt(w.bound, j))
			}
		}
	}
}

// agree reports whether two results agree: bit for bit (any NaN matching
// any NaN) without a bound, else within twice the bound each is within of
// the exact value.
func agree(got, want float32, bound []float64, j int) bool {
	if got != got || want != want {
		return got != got && want != want
	}
	if bound == nil || math.IsInf(float64(want), 0) {
		return math.Float32bits(got) == math.Float32bits(want)
	}
	return math.Abs(float64(got)-float64(want)) <= 2*bound[j]
}

func boundAt(b []float64, j int) any {
	if b == nil {
		return "exact"
	}
	return b[j]
}

// A kernelCase builds a kernel's inputs for size n from a, calls the
// kernel's front, and returns what it wrote.
type kernelCase func(a *kernelArgs, n int) []result

// result is one output of a case, with the bound on each element's error
// (nil: the implementations must agree bit for bit).
type result struct {
	name  string
	got   []float32
	bound []float64
}

// kernelArgs makes a case's slices: placed as pl says, filled from r, so
// that the run under test and the generic run see the same values.
type kernelArgs struct {
	t      *testing.T
	r      *rand.Rand
	pl     placement
	slices int
	checks []func()
}

// place returns a slice of n floats where the placement says.
func (a *kernelArgs) place(n int) []float32 {
	a.slices++
	switch a.pl.guard {
	case 1, -1:
		return testutil.Guarded(a.t, n, a.pl.guard == 1)
	}
	off := (a.pl.off + 3*a.slices) % 8
	x, whole := testutil.Offset(n, off)
	a.checks = append(a.checks, func() { testutil.CheckGuards(a.t, whole, off, n) })
	return x
}

// floats returns n values uniform in ±scale.
func (a *kernelArgs) floats(n int, scale float32) []float32 {
	x := a.place(n)
	copy(x, testutil.Floats(a.r, n, scale))
	return x
}

// salted returns floats with about one in eight replaced by a special
// value that keep accepts.
func (a *kernelArgs) salted(n int, scale float32, keep func(float32) bool) []float32 {
	x := a.floats(n, scale)
	for i := range x {
		if s := testutil.Specials[a.r.IntN(len(testutil.Specials))]; a.r.IntN(8) == 0 && keep(s) {
			x[i] = s
		}
	}
	return x
}

// flags returns n keep flags, one in three 0.
func (a *kernelArgs) flags(n int) []byte {
	var b []byte
	switch a.pl.guard {
	case 1, -1:
		b = guardedBytes(a.t, n, a.pl.guard == 1)
	default:
		b = make([]byte, n)
	}
	for i := range b {
		b[i] = byte(min(1, a.r.IntN(3)))
	}
	return b
}

func any32(float32) bool { return true }

// finiteOrNegInf keeps what a softmax's input may hold once its maximum is
// finite: no NaN, no +Inf.
func finiteOrNegInf(x float32) bool { return x == x && !math.IsInf(float64(x), 1) }

// rowsLen is the length of rows rows of d floats, stride apart.
func rowsLen(rows, stride, d int) int {
	if rows == 0 {
		return 0
	}
	return (rows-1)*stride + d
}

// absDot returns Σ|x[i]·y[i]|, the scale of a dot product's error.
func absDot(x, y []float32) float64 {
	var s float64
	for i := range x {
		s += math.Abs(float64(x[i]) * float64(y[i]))
	}
	return s
}

// scoreMultiCase is scoreRowsMulti's case for rows query rows of d
// columns against n keys.
func scoreMultiCase(rows, d int) kernelCase {
	return scoreMultiCaseOf(rows, d, func(dst, k []float32, stride int, q []float32) {
		scoreMultiOf(dst, k, stride, q, rows)
	})
}

// scoreMultiCaseOf is scoreMultiCase with the kernel called by score.
func scoreMultiCaseOf(rows, d int, score func(dst, k []float32, stride int, q []float32)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		stride := d + 3
		k, q, dst := a.floats(rowsLen(n, stride, d), 2), a.floats(rows*d, 2), a.floats(rows*n, 1)
		score(dst, k, stride, q)
		bound := make([]float64, len(dst))
		for r := range rows {
			for j := range n {
				bound[r*n+j] = reference.DotBound(d, absDot(k[j*stride:j*stride+d], q[r*d:(r+1)*d]))
			}
		}
		return []result{{"dst", dst, bound}}
	}
}

// scoreMultiOf is scoreRowsMulti, or scoreRowsMulti8 for five to eight
// rows, asking for the second half of k when the count of keys is odd
// (which changes no bit).
func scoreMultiOf(dst, k []float32, stride int, q []float32, rows int) {
	if rows > 4 {
		var also []float32
		if len(dst)/rows%2 == 1 {
			also = k[len(k)/2:]
		}
		ScoreRowsMulti8(dst, k, stride, q, rows, also)
		return
	}
	ScoreRowsMulti(dst, k, stride, q, rows)
}

// blendMultiOf is blendRowsMulti, or blendRowsMulti8 for five to eight rows, with
// next (which changes no result: it only asks for its lines).
func blendMultiOf(acc, w, v []float32, stride int, rows int, next []float32) {
	if rows > 4 {
		BlendRowsMulti8(acc, w, v, stride, rows, next)
		return
	}
	BlendRowsMulti(acc, w, v, stride, rows, next)
}

// multiRowCounts are the row counts the multi-row kernels take.
var multiRowCounts = []int{1, 2, 3, 4, 5, 6, 7, 8}

// blendMultiCase is blendRowsMulti's case for rows rows of d columns over n
// keys.
func blendMultiCase(rows, d int) kernelCase {
	return blendMultiCaseOf(rows, d, func(acc, w, v []float32, stride, n int) {
		// The next call's rows asked for: v's own second half, or none.
		var next []float32
		if n%2 == 1 {
			next = v[len(v)/2:]
		}
		blendMultiOf(acc, w, v, stride, rows, next)
	})
}

// blendMultiCaseOf is blendMultiCase with the kernel called by blend.
func blendMultiCaseOf(rows, d int, blend func(acc, w, v []float32, stride, n int)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		stride := d + 2
		acc, w, v := a.floats(rows*d, 2), a.floats(rows*n, 1), a.floats(rowsLen(n, stride, d), 3)
		bound := make([]float64, len(acc))
		for r := range rows {
			for c := range d {
				abs := math.Abs(float64(acc[r*d+c]))
				for j := range n {
					abs += math.Abs(float64(w[r*n+j]) * float64(v[j*stride+c]))
				}
				bound[r*d+c] = reference.Gamma(n+1)*abs + float64(n+1)*0x1p-149
			}
		}
		blend(acc, w, v, stride, n)
		return []result{{"acc", acc, bound}}
	}
}

// The table's cases for the multi-row kernels tie the row count to the
// size; here every row count meets every count of keys up to past two
// blocks of keys and every count of columns up to past one block of
// columns, and a few counts of several blocks. With -short, only the
// column counts around the kernels' chunks and blocks (shortCols; the
// table's cases, kernelCases, still meet every row count with other
// column counts), and each count of keys takes one of the placements,
// turning with the count.
func TestMultiRowShapes(t *testing.T) {
	var cols []int
	for d := range 68 {
		cols = append(cols, d)
	}
	cols = append(cols, 96, 127, 128, 131, 200)
	pls := multiPlacements()
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, rows := range multiRowCounts {
			for _, d := range cols {
				if testing.Short() && !shortCols(d) {
					continue
				}
				// A subtest each, so that the guard pages are unmapped as
				// it ends.
				t.Run(fmt.Sprintf("rows=%d/d=%d", rows, d), func(t *testing.T) {
					score, blend := scoreMultiCase(rows, d), blendMultiCase(rows, d)
					for n := 0; n <= 19; n++ {
						for i, pl := range pls {
							if testing.Short() && i != n%len(pls) {
								continue
							}
							checkAgainstGeneric(t, score, n, pl)
							checkAgainstGeneric(t, blend, n, pl)
						}
					}
				})
			}
		}
	})
}

// multiPlacements are TestMultiRowShapes's placements: off alignment, and
// against a guard page after the slices where that is supported; aligned
// and against a guard page before them too unless the tests are short.
func multiPlacements() []placement {
	p := []placement{{off: 3}}
	if testutil.GuardSupported {
		p = append(p, placement{guard: 1})
	}
	if testing.Short() {
		return p
	}
	p = append(p, placement{off: 0})
	if testutil.GuardSupported {
		p = append(p, placement{guard: -1})
	}
	return p
}

// Block kernels run on n keys, a head size of blockD (a few vectors and a
// tail) and rows blockStride apart.
const blockD, blockStride = 13, 16

var kernelCases = map[string]kernelCase{
	"dot": func(a *kernelArgs, n int) []result {
		x, y := a.floats(n, 4), a.floats(n, 4)
		return []result{{"dot", []float32{Dot(x, y)}, []float64{reference.DotBound(n, absDot(x, y))}}}
	},
	"scoreRows": func(a *kernelArgs, n int) []result {
		rows, stride := 5, n+3
		k, q, dst := a.floats(rowsLen(rows, stride, n), 2), a.floats(n, 2), a.floats(rows, 1)
		ScoreRows(dst, k, stride, q)
		bound := make([]float64, rows)
		for i := range bound {
			bound[i] = reference.DotBound(n, absDot(k[i*stride:i*stride+n], q))
		}
		return []result{{"dst", dst, bound}}
	},
	"axpy": func(a *kernelArgs, n int) []result {
		x, y := a.floats(n, 8), a.floats(n, 8)
		bound := make([]float64, n)
		for i := range bound {
			bound[i] = 2*reference.U*(math.Abs(0.75*float64(x[i]))+math.Abs(float64(y[i]))) + 0x1p-149
		}
		Axpy(0.75, x, y)
		return []result{{"y", y, bound}}
	},
	"blendRows": func(a *kernelArgs, n int) []result {
		rows, stride := 5, n+2
		acc, w, v := a.floats(n, 2), a.floats(rows, 1), a.floats(rowsLen(rows, stride, n), 3)
		bound := make([]float64, n)
		for j := range bound {
			abs := math.Abs(float64(acc[j]))
			for i := range rows {
				abs += math.Abs(float64(w[i]) * float64(v[i*stride+j]))
			}
			bound[j] = reference.Gamma(rows+1)*abs + float64(rows+1)*0x1p-149
		}
		BlendRows(acc, w, v, stride)
		return []result{{"acc", acc, bound}}
	},
	"scoreRowsMulti": func(a *kernelArgs, n int) []result {
		return scoreMultiCase(1+n%4, 13+n%20)(a, n)
	},
	"scoreRowsMulti8": func(a *kernelArgs, n int) []result {
		return scoreMultiCase(5+n%4, 13+n%20)(a, n)
	},
	"scoreRowsMultiNear": func(a *kernelArgs, n int) []result {
		return scoreMultiCaseOf(4, 13+n%20, func(dst, k []float32, stride int, q []float32) {
			ScoreRowsMultiNear(dst, k, stride, q, 4)
		})(a, n)
	},
	"blendRowsMulti8": func(a *kernelArgs, n int) []result {
		return blendMultiCase(5+n%4, 1+(n*29)%150)(a, n)
	},
	"blendRowsMulti": func(a *kernelArgs, n int) []result {
		// Column counts across every block of every row count (64 columns
		// a block for one row on AVX2) and their tails.
		return blendMultiCase(1+n%4, 1+(n*29)%150)(a, n)
	},
	"maxf": func(a *kernelArgs, n int) []result {
		return []result{{"max", []float32{Maxf(a.salted(n, 50, any32))}, nil}}
	},
	"scale": func(a *kernelArgs, n int) []result {
		x := a.salted(n, 50, any32)
		Scale(-1.5, x)
		return []result{{"x", x, nil}}
	},
	"expv": func(a *kernelArgs, n int) []result {
		x, dst := a.salted(n, 90, any32), a.floats(n, 1)
		Expv(dst, x)
		return []result{{"dst", dst, nil}}
	},
	"expSum": func(a *kernelArgs, n int) []result {
		x, dst := a.salted(n, 90, finiteOrNegInf), a.floats(n, 1)
		m := float32(0)
		if mx := maxGeneric(x); !math.IsInf(float64(mx), -1) {
			m = mx
		}
		sum := ExpSum(dst, x, m)
		var exact float64
		for _, e := range dst {
			exact += float64(e)
		}
		return []result{{"dst", dst, nil}, {"sum", []float32{sum}, []float64{reference.Gamma(n) * exact}}}
	},
	"blockScores": func(a *kernelArgs, n int) []result {
		qt, k, st := a.floats(BlockRows*blockD, 2), a.floats(rowsLen(n, blockStride, blockD), 2), a.floats(BlockRows*n, 1)
		BlockScores(st, qt, k, blockStride)
		return []result{{"st", st, blockScoresBound(qt, k, n, blockD, blockStride)}}
	},
	"blockScores2": func(a *kernelArgs, n int) []result {
		qt, k, st := a.floats(2*BlockRows*blockD, 2), a.floats(rowsLen(n, blockStride, blockD), 2), a.floats(2*BlockRows*n, 1)
		h, hq := BlockRows*n, BlockRows*blockD
		BlockScores2(st[:h], st[h:], qt[:hq], qt[hq:], k, blockStride)
		bound, _ := blockScores2Bounds(qt, k, n)
		return []result{{"st", st, bound}}
	},
	"blockMax": func(a *kernelArgs, n int) []result {
		st, ml := softmaxTile(a, n), a.salted(4*BlockRows, 30, finiteOrNegInf)
		for r := range BlockRows {
			ml[BlockRows+r] = float32(math.Abs(float64(ml[BlockRows+r])))
		}
		BlockMax(st, ml)
		return []result{{"ml", ml, nil}}
	},
	"blockExpSum": func(a *kernelArgs, n int) []result {
		st, ml := softmaxTile(a, n), a.floats(4*BlockRows, 30)
		mu := ml[3*BlockRows:]
		for r := range BlockRows {
			ml[BlockRows+r] = float32(math.Abs(float64(ml[BlockRows+r])))
			mu[r] = 0
			for j := range n {
				if s := st[j*BlockRows+r]; s > mu[r] {
					mu[r] = s
				}
			}
		}
		BlockExpSum(st, ml)
		return []result{{"st", st, nil}, {"ml", ml, nil}}
	},
	"blockBlend": func(a *kernelArgs, n int) []result {
		dv := 11
		ot, st, v := a.floats(BlockRows*dv, 2), a.floats(BlockRows*n, 1), a.floats(rowsLen(n, blockStride, dv), 3)
		c := a.floats(BlockRows*(n%2), 1) // odd n rescale, even n do not
		bound := blockBlendBound(ot, st, v, c, n, blockStride)
		BlockBlend(ot, st, v, blockStride, c)
		return []result{{"ot", ot, bound}}
	},
	"blockBlend2": func(a *kernelArgs, n int) []result {
		dv, stride := 27, 29 // two groups of 12 and a tail
		ot, st, v := a.floats(2*BlockRows*dv, 2), a.floats(2*BlockRows*n, 1), a.floats(rowsLen(n, stride, dv), 3)
		c := a.floats(2*BlockRows*(n%2), 1) // odd n rescale, even n do not
		bound := make([]float64, len(ot))
		for b := range 2 {
			for i := range dv {
				for r := range BlockRows {
					o := ot[(b*dv+i)*BlockRows+r]
					if len(c) > 0 {
						o *= c[b*BlockRows+r]
					}
					abs := math.Abs(float64(o))
					for j := range n {
						abs += math.Abs(float64(st[(b*n+j)*BlockRows+r]) * float64(v[j*stride+i]))
					}
					bound[(b*dv+i)*BlockRows+r] = reference.Gamma(n+1)*abs + float64(n+1)*0x1p-149
				}
			}
		}
		h, hs := BlockRows*dv, BlockRows*n
		c0, c1 := c, c
		if len(c) > 0 {
			c0, c1 = c[:BlockRows], c[BlockRows:]
		}
		BlockBlend2(ot[:h], ot[h:], st[:hs], st[hs:], v, stride, c0, c1)
		return []result{{"ot", ot, bound}}
	},
	"blockIn": func(a *kernelArgs, n int) []result {
		rows, stride := 16-5*(n%2), n+1
		qt, q := a.floats(BlockRows*n, 1), a.salted(rowsLen(rows, stride, n), 3, any32)
		BlockIn(qt, q, stride, rows)
		return []result{{"qt", qt, nil}}
	},
	"blockOut": func(a *kernelArgs, n int) []result {
		rows, stride := 16-5*(n%2), n+2
		o, ot := a.floats(rowsLen(rows, stride, n), 1), a.salted(BlockRows*n, 3, any32)
		BlockOut(o, stride, rows, ot)
		return []result{{"o", o, nil}}
	},
	"blockKeep16": func(a *kernelArgs, n int) []result {
		stride := n + 3
		st, keep := a.floats(BlockRows*n, 5), a.flags(rowsLen(BlockRows, stride, n))
		BlockKeep16(st, keep, stride)
		return []result{{"st", st, nil}}
	},
	"prefetch": func(a *kernelArgs, n int) []result {
		rows, stride := 5, n+3
		x := a.floats(rowsLen(rows, stride, n), 1)
		if n > 0 {
			Prefetch(x, stride, rows, n)
		}
		return []result{{"x", x, nil}}
	},
	"softcapPrep": func(a *kernelArgs, n int) []result {
		x, z := a.salted(n, 50, any32), a.floats(n, 1)
		SoftcapPrep(x, z, 0.25)
		return []result{{"x", x, nil}, {"z", z, nil}}
	},
	"softcapFinish": func(a *kernelArgs, n int) []result {
		x, e := a.salted(n, 20, any32), a.floats(n, 1)
		expGeneric(e, e)
		SoftcapFinish(x, e, 3)
		return []result{{"x", x, nil}}
	},
	"additivePrep": func(a *kernelArgs, n int) []result {
		rows, stride := 3, n+4
		x, z := a.floats(rows*n, 1), a.floats(rows*n, 1)
		u, s := a.salted(rowsLen(rows, stride, n), 4, any32), a.floats(n, 4)
		AdditivePrep(x, z, u, stride, s)
		return []result{{"x", x, nil}, {"z", z, nil}}
	},
}

// softmaxTile returns a tile of n keys' scores for the softmax kernels:
// ordinary values, masked (-Inf) keys, wide spreads that take the special
// exp code, but no NaN or +Inf (in whose lanes only the NaN matters).
func softmaxTile(a *kernelArgs, n int) []float32 {
	st := a.salted(BlockRows*n, 20, finiteOrNegInf)
	for i := range st {
		if a.r.IntN(5) == 0 {
			st[i] = -200 + 150*a.r.Float32()
		}
	}
	return st
}

// blockScoresBound returns the error bound of each of blockScores' scores
// of n keys of d dimensions, stride apart in k, against the lanes qt.
func blockScoresBound(qt, k []float32, n, d, stride int) []float64 {
	bound := make([]float64, BlockRows*n)
	q := make([]float32, d)
	for j := range n {
		for r := range BlockRows {
			for c := range q {
				q[c] = qt[c*BlockRows+r]
			}
			bound[j*BlockRows+r] = reference.DotBound(d, absDot(q, k[j*stride:j*stride+d]))
		}
	}
	return bound
}

// blockBlendBound returns the error bound of each output lane of
// blockBlend(ot, st, v, stride, c) over n keys, computed before the call.
func blockBlendBound(ot, st, v, c []float32, n, stride int) []float64 {
	bound := make([]float64, len(ot))
	for i := range len(ot) / BlockRows {
		for r := range BlockRows {
			o := ot[i*BlockRows+r]
			if len(c) > 0 {
				o *= c[r]
			}
			abs := math.Abs(float64(o))
			for j := range n {
				abs += math.Abs(float64(st[j*BlockRows+r]) * float64(v[j*stride+i]))
			}
			bound[i*BlockRows+r] = reference.Gamma(n+1)*abs + float64(n+1)*0x1p-149
		}
	}
	return bound
}

// blockScores2Bounds returns the error bounds of blockScores2's scores of
// the two blocks of qt against n keys of k, and of each lane's maximum of
// them: a lane's max moves by at most its scores' largest bound.
func blockScores2Bounds(qt, k []float32, n int) (scores, maxima []float64) {
	scores, maxima = make([]float64, 2*BlockRows*n), make([]float64, 2*BlockRows)
	q := make([]float32, blockD)
	for b := range 2 {
		for j := range n {
			for r := range BlockRows {
				for c := range q {
					q[c] = qt[(b*blockD+c)*BlockRows+r]
				}
				e := reference.DotBound(blockD, absDot(q, k[j*blockStride:j*blockStride+blockD]))
				scores[(b*n+j)*BlockRows+r] = e
				maxima[b*BlockRows+r] = max(maxima[b*BlockRows+r], e)
			}
		}
	}
	return scores, maxima
}
