package kernel

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/impl"
	"github.com/glancelab/attention/internal/kernels"
	"github.com/glancelab/attention/internal/testutil"
)

// Every generated function of a kernel with a function per row count runs,
// through the kernel's front, on every implementation, against the generic
// twin: each variant of the table (a row count, or its asking copy) on
// counts of keys around the blocks and of columns around the chunks, the
// d = 64 and 128 code paths among them. The front chooses the function by
// the row count and by whether the ask slice is empty, so a case for each
// (rows, asks) reaches each function, whatever tier the table gives it.
// A kernel of the table with functions per row count and no case here
// fails the test.
func TestKernelVariants(t *testing.T) {
	for name := range variantCases {
		if k, ok := kernelNamed(name); !ok || k.Rows == nil {
			t.Errorf("variantCases has %s, which is no kernel of the table with a function per row count", name)
		}
	}
	keys := []int{1, 2, 7, 17, 33}
	cols := []int{1, 13, 64, 128, 131}
	pls := multiPlacements()
	for _, k := range kernels.All {
		if k.Rows == nil {
			continue
		}
		mk, ok := variantCases[k.Name]
		if !ok {
			t.Errorf("kernel %s of the table has functions per row count and no case in variantCases", k.Name)
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			testutil.ForEachImpl(t, func(t *testing.T) {
				if testing.Short() && sharedCode(k.Name) {
					t.Skipf("%s runs the generic twin of %s: it compares nothing", impl.Active(), k.Name)
				}
				for _, v := range k.Rows.Variants {
					for _, d := range cols {
						c := mk(v.Rows, d, v.Asks)
						for i, n := range keys {
							pl := pls[(i+d)%len(pls)]
							t.Run(fmt.Sprintf("%s/d=%d/n=%d/%v", v.Suffix(), d, n, pl), func(t *testing.T) {
								checkAgainstGeneric(t, c, n, pl)
							})
						}
					}
				}
			})
		})
	}
}

func kernelNamed(name string) (kernels.Kernel, bool) {
	for _, k := range kernels.All {
		if k.Name == name {
			return k, true
		}
	}
	return kernels.Kernel{}, false
}

// variantCases build, by kernel, the case of rows rows of d columns that
// calls its front with a non-empty ask slice (next or also) if ask is set,
// an empty one otherwise.
var variantCases = map[string]func(rows, d int, ask bool) kernelCase{
	"scoreRowsMulti": func(rows, d int, ask bool) kernelCase {
		return scoreMultiCaseOf(rows, d, func(dst, k []float32, stride int, q []float32) {
			ScoreRowsMulti(dst, k, stride, q, rows)
		})
	},
	"scoreRowsMultiNear": func(rows, d int, ask bool) kernelCase {
		return scoreMultiCaseOf(rows, d, func(dst, k []float32, stride int, q []float32) {
			ScoreRowsMultiNear(dst, k, stride, q, rows)
		})
	},
	"scoreRowsMulti8": func(rows, d int, ask bool) kernelCase {
		return scoreMultiCaseOf(rows, d, func(dst, k []float32, stride int, q []float32) {
			ScoreRowsMulti8(dst, k, stride, q, rows, asked(k, len(k), ask))
		})
	},
	"blendRowsMulti": func(rows, d int, ask bool) kernelCase {
		return blendMultiCaseOf(rows, d, func(acc, w, v []float32, stride, n int) {
			BlendRowsMulti(acc, w, v, stride, rows, asked(v, nextLen(n, d), ask))
		})
	},
	"blendRowsMulti8": func(rows, d int, ask bool) kernelCase {
		return blendMultiCaseOf(rows, d, func(acc, w, v []float32, stride, n int) {
			BlendRowsMulti8(acc, w, v, stride, rows, asked(v, nextLen(n, d), ask))
		})
	},
	"scoreRowsMultiPairedBF16": func(rows, d int, ask bool) kernelCase { return pairedBF16Case(rows, d) },
}

func init() {
	for _, f := range formats16 {
		u := upper(f.name)
		variantCases["scoreRowsMulti"+u] = func(rows, d int, ask bool) kernelCase {
			return scoreMulti16CaseOf(f, rows, d, func(dst []float32, k []uint16, stride int, q []float32) {
				f.scoreMulti(dst, k, stride, q, rows)
			})
		}
		variantCases["scoreRowsMulti8"+u] = func(rows, d int, ask bool) kernelCase {
			return scoreMulti16CaseOf(f, rows, d, func(dst []float32, k []uint16, stride int, q []float32) {
				f.score8(dst, k, stride, q, rows, asked(k, len(k), ask))
			})
		}
		variantCases["blendRowsMulti"+u] = func(rows, d int, ask bool) kernelCase {
			return blendMulti16CaseOf(f, rows, d, func(acc, w []float32, v []uint16, stride, n int) {
				f.blendMulti(acc, w, v, stride, rows, asked(v, nextLen(n, d), ask))
			})
		}
		variantCases["blendRowsMulti8"+u] = func(rows, d int, ask bool) kernelCase {
			return blendMulti16CaseOf(f, rows, d, func(acc, w []float32, v []uint16, stride, n int) {
				f.blend8(acc, w, v, stride, rows, asked(v, nextLen(n, d), ask))
			})
		}
	}
}

// asked returns, if ask is set, a slice of n elements to ask for, of the
// same type as like (never read: the kernels only ask for its lines), and
// nil otherwise.
func asked[E float32 | uint16](like []E, n int, ask bool) []E {
	if !ask {
		return nil
	}
	return make([]E, max(n, 1))
}

// nextLen is what a blend's next must hold: n·d', d' = d rounded up to a
// multiple of 16.
func nextLen(n, d int) int { return n * ((d + 15) &^ 15) }

// TestScoreRowsMultiNearBits checks that the four-row score that asks for
// no K ahead gives scoreRowsMulti's bits, on every implementation, over
// key counts with and without blocks' remainders and widths with and
// without the width sections and tails.
func TestScoreRowsMultiNearBits(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(41)
		for _, d := range []int{1, 15, 16, 63, 64, 65, 127, 128, 129, 200} {
			for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 33, 256, 301} {
				stride := d + n%3
				k := testutil.Floats(r, max(0, (n-1)*stride+d), 2)
				for i := range k {
					if i%97 == 5 {
						k[i] = testutil.Specials[i%len(testutil.Specials)]
					}
				}
				q := testutil.Floats(r, 4*d, 2)
				want, got := make([]float32, 4*n), make([]float32, 4*n)
				ScoreRowsMulti(want, k, stride, q, 4)
				ScoreRowsMultiNear(got, k, stride, q, 4)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("d %d, n %d: score %d is %v (%#x), scoreRowsMulti gives %v (%#x)", d, n, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
			}
		}
	})
}
