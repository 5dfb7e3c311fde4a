package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/half"
	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/kernels"
	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// The multi-row kernels over 16-bit rows, as the float32 ones are tested
// (kernel_table_test.go, kernels_test.go, rows_stream_test.go): against
// the generic twin within the error bounds, on every size and placement;
// and against the one-row 16-bit kernels bit for bit, which is what lets
// a decode step take some of a group's rows through each.

// format16 is one 16-bit element format: its generator of test values,
// its widening and its kernels.
type format16 struct {
	name       string
	gen        func(*kernelArgs, int) []uint16
	widen      func(uint16) float32
	score      func(dst []float32, k []uint16, stride int, q []float32)
	blend      func(acc, w []float32, v []uint16, stride int)
	scoreMulti func(dst []float32, k []uint16, stride int, q []float32, rows int)
	blendMulti func(acc, w []float32, v []uint16, stride int, rows int, next []uint16)
	score8     func(dst []float32, k []uint16, stride int, q []float32, rows int, also []uint16)
	blend8     func(acc, w []float32, v []uint16, stride int, rows int, next []uint16)
}

var formats16 = []format16{
	{"f16", (*kernelArgs).f16s, half.F16ToF32, ScoreRowsF16, BlendRowsF16, ScoreRowsMultiF16, BlendRowsMultiF16, ScoreRowsMulti8F16, BlendRowsMulti8F16},
	{"bf16", (*kernelArgs).bf16s, half.BF16ToF32, ScoreRowsBF16, BlendRowsBF16, ScoreRowsMultiBF16, BlendRowsMultiBF16, ScoreRowsMulti8BF16, BlendRowsMulti8BF16},
}

// scoreRows is f's multi-row score, its wide kernel for five to eight
// rows (asking for the second half of k when n is odd, which changes no
// bit).
func (f format16) scoreRows(dst []float32, k []uint16, stride int, q []float32, rows int) {
	if rows > 4 {
		var also []uint16
		if len(dst)/rows%2 == 1 {
			also = k[len(k)/2:]
		}
		f.score8(dst, k, stride, q, rows, also)
		return
	}
	f.scoreMulti(dst, k, stride, q, rows)
}

// blendRowsOf is f's multi-row blend, its wide kernel for five to eight
// rows (asking for the second half of v when n is odd).
func (f format16) blendRowsOf(acc, w []float32, v []uint16, stride int, rows int) {
	if rows > 4 {
		var next []uint16
		if len(w)/rows%2 == 1 {
			next = v[len(v)/2:]
		}
		f.blend8(acc, w, v, stride, rows, next)
		return
	}
	var next []uint16
	if len(w)/rows%2 == 1 {
		next = v[len(v)/2:]
	}
	f.blendMulti(acc, w, v, stride, rows, next)
}

// scoreMulti16Case is scoreMultiCase over 16-bit key rows of an odd
// stride, specials among them.
func scoreMulti16Case(f format16, rows, d int) kernelCase {
	return scoreMulti16CaseOf(f, rows, d, func(dst []float32, k []uint16, stride int, q []float32) {
		f.scoreRows(dst, k, stride, q, rows)
	})
}

// scoreMulti16CaseOf is scoreMulti16Case with the kernel called by score.
func scoreMulti16CaseOf(f format16, rows, d int, score func(dst []float32, k []uint16, stride int, q []float32)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		stride := d + 3
		k, q, dst := f.gen(a, rowsLen(n, stride, d)), a.floats(rows*d, 2), a.floats(rows*n, 1)
		score(dst, k, stride, q)
		kf := widen(k, f.widen)
		bound := make([]float64, len(dst))
		for r := range rows {
			for j := range n {
				bound[r*n+j] = reference.DotBound(d, absDot(kf[j*stride:j*stride+d], q[r*d:(r+1)*d]))
			}
		}
		return []result{{"dst", dst, bound}}
	}
}

// blendMulti16Case is blendMultiCase over 16-bit value rows.
func blendMulti16Case(f format16, rows, d int) kernelCase {
	return blendMulti16CaseOf(f, rows, d, func(acc, w []float32, v []uint16, stride, n int) {
		f.blendRowsOf(acc, w, v, stride, rows)
	})
}

// blendMulti16CaseOf is blendMulti16Case with the kernel called by blend.
func blendMulti16CaseOf(f format16, rows, d int, blend func(acc, w []float32, v []uint16, stride, n int)) kernelCase {
	return func(a *kernelArgs, n int) []result {
		stride := d + 1
		acc, w, v := a.floats(rows*d, 2), a.floats(rows*n, 1), f.gen(a, rowsLen(n, stride, d))
		vf := widen(v, f.widen)
		bound := make([]float64, len(acc))
		for r := range rows {
			for c := range d {
				abs := math.Abs(float64(acc[r*d+c]))
				for j := range n {
					abs += math.Abs(float64(w[r*n+j]) * float64(vf[j*stride+c]))
				}
				bound[r*d+c] = reference.Gamma(n+1)*abs + float64(n+1)*0x1p-149
			}
		}
		blend(acc, w, v, stride, n)
		return []result{{"acc", acc, bound}}
	}
}

func init() {
	for _, f := range formats16 {
		kernelCases["scoreRowsMulti"+upper(f.name)] = func(a *kernelArgs, n int) []result {
			return scoreMulti16Case(f, 1+n%4, 13+n%20)(a, n)
		}
		kernelCases["blendRowsMulti"+upper(f.name)] = func(a *kernelArgs, n int) []result {
			return blendMulti16Case(f, 1+n%4, 1+(n*29)%150)(a, n)
		}
		kernelCases["scoreRowsMulti8"+upper(f.name)] = func(a *kernelArgs, n int) []result {
			return scoreMulti16Case(f, 5+n%4, 13+n%20)(a, n)
		}
		kernelCases["blendRowsMulti8"+upper(f.name)] = func(a *kernelArgs, n int) []result {
			return blendMulti16Case(f, 5+n%4, 1+(n*29)%150)(a, n)
		}
	}
}

func upper(name string) string {
	if name == "f16" {
		return "F16"
	}
	return "BF16"
}

// Every row count meets every count of keys up to past two blocks and
// every count of columns up to past one block of columns, then several
// blocks, as TestMultiRowShapes does for the float32 kernels. With
// -short, each count of keys takes one of the placements, turning with
// the count, and a kernel the implementation runs as its generic twin
// (five to eight rows on avx2) is not run: as skipTwin says, it compares
// nothing.
func TestMulti16Shapes(t *testing.T) {
	cols := multi16Cols(96, 127, 128, 131, 200)
	pls := multiPlacements()
	testutil.ForEachImpl(t, func(t *testing.T) {
		skipTwin(t)
		for _, f := range formats16 {
			for _, rows := range multiRowCounts {
				for _, d := range cols {
					t.Run(fmt.Sprintf("%s/rows=%d/d=%d", f.name, rows, d), func(t *testing.T) {
						score, blend := scoreMulti16Case(f, rows, d), blendMulti16Case(f, rows, d)
						doScore, doBlend := true, true
						if testing.Short() {
							doScore = !sharedCode(multi16Name("scoreRowsMulti", f, rows))
							doBlend = !sharedCode(multi16Name("blendRowsMulti", f, rows))
						}
						for n := 0; n <= 19; n++ {
							for i, pl := range pls {
								if testing.Short() && i != n%len(pls) {
									continue
								}
								if doScore {
									checkAgainstGeneric(t, score, n, pl)
								}
								if doBlend {
									checkAgainstGeneric(t, blend, n, pl)
								}
							}
						}
					})
				}
			}
		}
	})
}

// multi16Cols returns the column counts the multi-row 16-bit tests run:
// every count 0..67 and then large ones; with -short, the counts around
// the kernels' 8- and 16-lane chunks and blocks (which took minutes under
// the race detector otherwise).
func multi16Cols(large ...int) []int {
	var cols []int
	for d := range 68 {
		if !testing.Short() || shortCols(d) {
			cols = append(cols, d)
		}
	}
	return append(cols, large...)
}

// shortCols reports whether the short tests of the multi-row kernels run
// d columns: the counts around the kernels' 8- and 16-lane chunks and
// blocks, and every count past 67 (the tests' few large ones).
func shortCols(d int) bool {
	return d >= 68 || d < 4 || d%16 <= 1 || d%16 == 15 || d%8 == 0
}

// multi16Name is the table's name of f's multi-row kernel stem
// ("scoreRowsMulti" or "blendRowsMulti") for rows rows: the wide one for
// five to eight.
func multi16Name(stem string, f format16, rows int) string {
	if rows > 4 {
		stem += "8"
	}
	return stem + upper(f.name)
}

// skipTwin skips a test of the multi-row 16-bit kernels on an
// implementation that runs their generic twin, the one-row kernels row by
// row: the twin against itself, or against the one-row kernels it calls,
// compares nothing (TestKernelTable tests those one-row kernels), and
// under an emulator it took minutes.
func skipTwin(t *testing.T) {
	t.Helper()
	for _, k := range kernels.All {
		if k.Name == "scoreRowsMultiF16" {
			if k.Impls[impl.Active()] == kernels.Generic {
				t.Skipf("%s runs the multi-row 16-bit kernels' generic twin, the one-row kernels row by row", impl.Active())
			}
			return
		}
	}
	t.Fatal("scoreRowsMultiF16 is not in the table")
}

// scoresMatchAnyKeys reports whether the active implementation's 16-bit
// multi-row scores are the one-row kernel's bits for any number of keys,
// beyond the contract's whole groups of eight: on avx512 every block of
// keys, in either kernel, goes through the one sum tree, and the generic
// twin is the one-row kernel.
func scoresMatchAnyKeys() bool {
	a := impl.Active()
	return a == "avx512" || a == "generic" || a == "neon"
}

// The multi-row kernels give each row the bits the one-row 16-bit kernels
// give it: the blend for any number of keys, the scores for keys in whole
// groups of eight (and for any number where scoresMatchAnyKeys says so),
// on every count of columns 0..67 and a few large ones, odd strides,
// inputs off alignment or against a guard page, with signed zeros,
// infinities, NaNs and subnormal halves among the elements. With -short,
// fewer counts of columns (multi16Cols), each count of keys and rows
// takes one of the placements (and its stride), turning with them, and
// five to eight rows are not run where the wide kernels are the generic
// twin (avx2), which calls the one-row kernels: that compares nothing.
func TestMulti16MatchOneRow(t *testing.T) {
	cols := multi16Cols(127, 128, 200)
	keys := []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 33, 40, 64, 67, 200}
	pls := []placement{{off: 0}, {off: 5}}
	if testutil.GuardSupported {
		pls = append(pls, placement{guard: 1}, placement{guard: -1})
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		skipTwin(t)
		anyKeys := scoresMatchAnyKeys()
		for _, f := range formats16 {
			for _, d := range cols {
				t.Run(fmt.Sprintf("%s/d=%d", f.name, d), func(t *testing.T) {
					for ki, n := range keys {
						for _, rows := range multiRowCounts {
							if testing.Short() && sharedCode(multi16Name("blendRowsMulti", f, rows)) && sharedCode(multi16Name("scoreRowsMulti", f, rows)) {
								continue
							}
							for i, pl := range pls {
								if testing.Short() && i != (ki+rows)%len(pls) {
									continue
								}
								a := &kernelArgs{t: t, r: testutil.Rand(uint64(1000*d + 10*n + rows)), pl: pl}
								stride := d + 2*i + 1
								what := fmt.Sprintf("n=%d rows=%d stride=%d %v", n, rows, stride, pl)
								kv := f.gen(a, rowsLen(n, stride, d))
								matchOneRow16(t, a, f, what, kv, n, d, stride, rows, anyKeys || n%8 == 0)
							}
						}
					}
				})
			}
		}
	})
}

// matchOneRow16 runs both multi-row kernels of f over the n rows of kv
// and compares each row with the one-row kernel's (the scores only if
// scores is set).
func matchOneRow16(t *testing.T, a *kernelArgs, f format16, what string, kv []uint16, n, d, stride, rows int, scores bool) {
	t.Helper()
	w := testutil.Floats(a.r, rows*n, 1)
	for i := range w {
		if a.r.IntN(32) == 0 {
			w[i] = testutil.Specials[a.r.IntN(len(testutil.Specials))]
		}
	}
	acc := a.floats(rows*d, 1)
	one := append([]float32(nil), acc...)
	f.blendRowsOf(acc, w, kv, stride, rows)
	for r := range rows {
		f.blend(one[r*d:(r+1)*d], w[r*n:(r+1)*n], kv, stride)
	}
	identicalBlend(t, what+": blendRowsMulti"+upper(f.name), acc, one)
	if !scores {
		return
	}
	q := a.floats(rows*d, 2)
	dst, want := a.floats(rows*n, 1), make([]float32, rows*n)
	f.scoreRows(dst, kv, stride, q, rows)
	for r := range rows {
		f.score(want[r*n:(r+1)*n], kv, stride, q[r*d:(r+1)*d])
	}
	testutil.Identical(t, what+": scoreRowsMulti"+upper(f.name), dst, want)
	for _, check := range a.checks {
		check()
	}
}

// Blocks of a whole call's budget of keys (the kernels' callers keep n·d
// within it), strided and ending at a guard page: within the bounds of
// the generic twin's sums and the one-row kernels' bits, as
// TestRowKernelsLargeBlocks checks the float32 kernels. With -short, half
// the row counts, turning with the shape.
func TestMulti16LargeBlocks(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, f := range formats16 {
			for _, d := range []int{16, 37, 64, 128, 131} {
				for _, extra := range []int{0, 3} {
					stride := d + extra
					n := MaxCall / d
					a := &kernelArgs{t: t, r: testutil.Rand(uint64(d + extra)), pl: placement{guard: 1}}
					if !testutil.GuardSupported {
						a.pl = placement{off: 1}
					}
					kv := f.gen(a, rowsLen(n, stride, d))
					for _, rows := range multiRowCounts {
						if testing.Short() && (rows+d+extra)%2 != 0 {
							continue
						}
						what := fmt.Sprintf("%s d=%d stride=%d n=%d rows=%d", f.name, d, stride, n, rows)
						matchOneRow16(t, a, f, what, kv, n, d, stride, rows, scoresMatchAnyKeys() || n%8 == 0)
						// And the scores within the bounds of the exact ones.
						q := testutil.Floats(a.r, rows*d, 1)
						dst := make([]float32, rows*n)
						f.scoreRows(dst, kv, stride, q, rows)
						kf := widen(kv, f.widen)
						for r := range rows {
							for j := range n {
								row := kf[j*stride : j*stride+d]
								want, abs := reference.Dot(row, q[r*d:(r+1)*d])
								got := dst[r*n+j]
								if math.IsNaN(want) || math.IsInf(want, 0) {
									if math.IsNaN(want) != math.IsNaN(float64(got)) || !math.IsNaN(want) && float64(got) != want {
										t.Fatalf("%s: score %d of row %d = %v, want %v", what, j, r, got, want)
									}
								} else if !testutil.Close(got, want, reference.DotBound(d, abs)) {
									t.Fatalf("%s: score %d of row %d = %v, want %v", what, j, r, got, want)
								}
							}
						}
					}
				}
			}
		}
	})
}

// pairedBF16Case is scoreMulti16Case for scoreRowsMultiPairedBF16: the
// query rows put in pair order for the call, the bounds those of the rows
// in order.
func pairedBF16Case(rows, d int) kernelCase {
	return func(a *kernelArgs, n int) []result {
		stride := d + 3
		k, q, dst := a.bf16s(rowsLen(n, stride, d)), a.floats(rows*d, 2), a.floats(rows*n, 1)
		qp := make([]float32, len(q))
		PairOrder(qp, q, d)
		ScoreRowsMultiPairedBF16(dst, k, stride, qp, rows)
		kf := widen(k, half.BF16ToF32)
		bound := make([]float64, len(dst))
		for r := range rows {
			for j := range n {
				bound[r*n+j] = reference.DotBound(d, absDot(kf[j*stride:j*stride+d], q[r*d:(r+1)*d]))
			}
		}
		return []result{{"dst", dst, bound}}
	}
}

func init() {
	kernelCases["scoreRowsMultiPairedBF16"] = func(a *kernelArgs, n int) []result {
		return pairedBF16Case(1+n%4, 13+n%40)(a, n)
	}
}

// pairOrder is a permutation, pairIndex its map, and the kernel over rows
// in pair order gives the bits scoreRowsMultiBF16 gives the rows in order
// where it is in assembly (avx2) and in the generic sums (both add each
// row's products in column order).
func TestPairedBF16(t *testing.T) {
	PairOrder(nil, nil, 0) // rows of no columns: nothing to do, and done
	for _, d := range []int{1, 15, 16, 17, 31, 32, 33, 64, 128, 131} {
		q := make([]float32, 2*d)
		for i := range q {
			q[i] = float32(i)
		}
		qp := make([]float32, len(q))
		PairOrder(qp, q, d)
		for r := range 2 {
			for c := range d {
				if got := qp[r*d+pairIndex(c, d)]; got != q[r*d+c] {
					t.Fatalf("d=%d: row %d column %d sits at %d, holding %v", d, r, c, pairIndex(c, d), got)
				}
			}
		}
	}
	testutil.ForEachImpl(t, func(t *testing.T) {
		if a := impl.Active(); a != "avx2" && a != "generic" {
			t.Skipf("%s runs the kernel's generic twin, held to the bounds by TestKernelTable", a)
		}
		r := testutil.Rand(71)
		a := &kernelArgs{t: t, r: r}
		for _, rows := range []int{1, 2, 3, 4} {
			for _, d := range []int{16, 37, 64, 128, 131} {
				for _, n := range []int{1, 7, 8, 24, 256} {
					k, q := a.bf16s(rowsLen(n, d+1, d)), testutil.Floats(r, rows*d, 1)
					qp := make([]float32, len(q))
					PairOrder(qp, q, d)
					got, want := make([]float32, rows*n), make([]float32, rows*n)
					ScoreRowsMultiPairedBF16(got, k, d+1, qp, rows)
					ScoreRowsMultiBF16(want, k, d+1, q, rows)
					what := fmt.Sprintf("rows=%d d=%d n=%d", rows, d, n)
					testutil.Identical(t, what, got, want)
				}
			}
		}
	})
}
