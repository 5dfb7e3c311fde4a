package kernel

import (
	"math"
	"math/bits"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// The int8 row kernels' cases: rows of a scale and d elements, stride
// apart, with scales across magnitudes and some rows scaled 0 or NaN.

// i8s returns n int8 elements where the placement says.
func (a *kernelArgs) i8s(n int) []int8 {
	a.slices++
	var b []byte
	switch a.pl.guard {
	case 1, -1:
		b = guardedBytes(a.t, n, a.pl.guard == 1)
	default:
		off := (a.pl.off + 3*a.slices) % 16
		b = make([]byte, off+n+16)[off : off+n : off+n]
	}
	return unsafeInt8s(b)
}

// i8Rows returns rows int8 rows of d elements, stride apart (stride >=
// d+4), each its scale and its elements, the scales between 2^-12 and 4
// and about one row in sixteen scaled 0 or NaN.
func (a *kernelArgs) i8Rows(rows, stride, d int) []int8 {
	x := a.i8s(rowsLen(rows, stride, d+4))
	for i := range rows {
		row := x[i*stride : i*stride+4+d]
		s := float32(math.Ldexp(1+a.r.Float64(), -12+a.r.IntN(14)))
		switch a.r.IntN(32) {
		case 0:
			s = 0
		case 1:
			s = float32(math.NaN())
		}
		PutScaleI8(row, s)
		for j := range d {
			row[4+j] = int8(a.r.IntN(255) - 127)
		}
	}
	return x
}

// dequant returns row i's elements as float32, scaled.
func dequant(k []int8, stride, i, d int) []float32 {
	row := k[i*stride : i*stride+4+d]
	s := RowScaleI8(row)
	x := make([]float32, d)
	for j := range x {
		x[j] = s * float32(row[4+j])
	}
	return x
}

// absDotI8 is Σ|s·k_j·q_j| of row i, the scale of its score's error.
func absDotI8(k []int8, stride, i int, q []float32) float64 {
	row := k[i*stride:]
	s := math.Abs(float64(RowScaleI8(row)))
	var t float64
	for j, v := range q {
		t += math.Abs(float64(row[4+j]) * float64(v))
	}
	return s * t
}

// aheadRows is a row count past the 32 rows on (and the block of eight
// after them) for which the one-row kernels ask as they go: their cases
// take it at one size in eight, so that the asks are not all clamped.
const aheadRows = 48

func scoreI8Case(a *kernelArgs, n int) []result {
	rows, stride := 1+n%20, n+4+n%3
	if n%8 == 3 {
		rows = aheadRows
	}
	k, q, dst := a.i8Rows(rows, stride, n), a.floats(n, 2), a.floats(rows, 1)
	ScoreRowsI8(dst, k, stride, q)
	bound := make([]float64, rows)
	for i := range bound {
		bound[i] = reference.Gamma(n+1)*absDotI8(k, stride, i, q) + float64(n+1)*0x1p-149
	}
	return []result{{"dst", dst, bound}}
}

func blendI8Case(a *kernelArgs, n int) []result {
	rows, stride := 5, n+4+n%5
	if n%8 == 3 {
		rows = aheadRows
	}
	acc, w, v := a.floats(n, 2), a.floats(rows, 1), a.i8Rows(rows, stride, n)
	bound := make([]float64, n)
	for j := range bound {
		bound[j] = math.Abs(float64(acc[j]))
	}
	for i := range rows {
		for j, x := range dequant(v, stride, i, n) {
			bound[j] += math.Abs(float64(w[i]) * float64(x))
		}
	}
	for j := range bound {
		bound[j] = reference.Gamma(rows+2)*bound[j] + float64(rows+2)*0x1p-149
	}
	BlendRowsI8(acc, w, v, stride)
	return []result{{"acc", acc, bound}}
}

// scoreMultiI8Case is scoreRowsMultiI8's case for rows query rows of d
// columns against n keys.
func scoreMultiI8Case(rows, d int) kernelCase {
	return func(a *kernelArgs, n int) []result {
		stride := d + 4 + 3
		k, q, dst := a.i8Rows(n, stride, d), a.floats(rows*d, 2), a.floats(rows*n, 1)
		ScoreRowsMultiI8(dst, k, stride, q, rows)
		bound := make([]float64, len(dst))
		for r := range rows {
			for j := range n {
				bound[r*n+j] = reference.Gamma(d+1)*absDotI8(k, stride, j, q[r*d:(r+1)*d]) + float64(d+1)*0x1p-149
			}
		}
		return []result{{"dst", dst, bound}}
	}
}

// blendMultiI8Case is blendRowsMultiI8's case for rows rows of d columns
// over n keys.
func blendMultiI8Case(rows, d int) kernelCase {
	return func(a *kernelArgs, n int) []result {
		stride := d + 4 + 1
		acc, w, v := a.floats(rows*d, 2), a.floats(rows*n, 1), a.i8Rows(n, stride, d)
		bound := make([]float64, len(acc))
		for r := range rows {
			for c := range d {
				abs := math.Abs(float64(acc[r*d+c]))
				for j := range n {
					abs += math.Abs(float64(w[r*n+j]) * float64(dequant(v, stride, j, d)[c]))
				}
				bound[r*d+c] = reference.Gamma(n+2)*abs + float64(n+2)*0x1p-149
			}
		}
		BlendRowsMultiI8(acc, w, v, stride, rows, v)
		return []result{{"acc", acc, bound}}
	}
}

func widenI8Case(a *kernelArgs, n int) []result {
	rows, d := 3, n
	stride := d + 4 + n%4
	if n%8 == 5 {
		// Rows past 4 KiB, which the avx2 kernel asks for as it goes.
		rows = 4200/stride + 3
	}
	src, dst := a.i8Rows(rows, stride, d), a.floats(rows*d, 1)
	WidenRowsI8(dst, src, stride, d)
	return []result{{"dst", dst, nil}}
}

func narrowI8Case(a *kernelArgs, n int) []result {
	// Half the sizes hold a special value or two (a NaN or an infinity
	// makes the row NaN), the others none; the magnitudes span the
	// floats, subnormals among them.
	src := a.floats(n, float32(math.Ldexp(1, a.r.IntN(200)-130)))
	if n%2 == 1 {
		src = a.salted(n, 1e3, func(x float32) bool { return a.r.IntN(16) == 0 })
	}
	dst := a.i8s(4 + n)
	NarrowI8(dst, src)
	out := make([]float32, len(dst))
	for i, v := range dst {
		out[i] = float32(v)
	}
	return []result{{"dst", out, nil}}
}

// hadamardCase rotates two matrices of n rows of three lanes.
func hadamardCase(a *kernelArgs, n int) []result {
	const lanes = 3
	if n == 0 {
		return nil
	}
	x := a.floats(2*n*lanes, 4)
	b := n & -n
	f := 1 / math.Sqrt(float64(b))
	bound := make([]float64, len(x))
	for i := range bound {
		m, r, l := i/(n*lanes), i/lanes%n, i%lanes
		blk := m*n*lanes + r/b*b*lanes
		var abs float64
		for k := range b {
			abs += math.Abs(float64(x[blk+k*lanes+l]))
		}
		bound[i] = reference.Gamma(bits.Len(uint(b))+1) * f * abs
	}
	Hadamard(x, n, lanes)
	return []result{{"x", x, bound}}
}

func init() {
	kernelCases["scoreRowsI8"] = scoreI8Case
	kernelCases["blendRowsI8"] = blendI8Case
	kernelCases["scoreRowsMultiI8"] = func(a *kernelArgs, n int) []result {
		return scoreMultiI8Case(1+n%4, 1+n%37)(a, n)
	}
	kernelCases["blendRowsMultiI8"] = func(a *kernelArgs, n int) []result {
		return blendMultiI8Case(1+n%4, 1+n%37)(a, n%50)
	}
	kernelCases["widenRowsI8"] = widenI8Case
	kernelCases["narrowI8"] = narrowI8Case
	kernelCases["hadamard"] = hadamardCase
}

// TestRows8Oracle checks the generic int8 kernels against float64: the
// scores and blends within their bounds, the quantisation within half a
// step of each element, and the rotation orthonormal (applied twice, the
// rows come back) and exact on a vector whose rotation is known.
func TestRows8Oracle(t *testing.T) {
	r := testutil.Rand(8)
	for _, d := range []int{1, 3, 16, 80, 96, 128} {
		x := testutil.Floats(r, d, 5)
		x[r.IntN(d)] = 60 // an outlier channel
		row := make([]int8, 4+d)
		NarrowI8(row, x)
		s := RowScaleI8(row)
		var m float64
		for _, v := range x {
			m = max(m, math.Abs(float64(v)))
		}
		if want := float32(m) / 127; s != want {
			t.Fatalf("d=%d: scale %v, want %v", d, s, want)
		}
		for j, v := range x {
			if e := math.Abs(float64(s)*float64(row[4+j]) - float64(v)); e > float64(s)*(0.5+0x1p-16) {
				t.Fatalf("d=%d: element %d: %v stored as %d·%v, error %v over half a step", d, j, v, row[4+j], s, e)
			}
		}
		y := append([]float32(nil), x...)
		Hadamard(y, d, 1)
		var nx, ny float64
		for j := range x {
			nx += float64(x[j]) * float64(x[j])
			ny += float64(y[j]) * float64(y[j])
		}
		if math.Abs(nx-ny) > 1e-5*nx {
			t.Fatalf("d=%d: rotation changed the norm: %v to %v", d, nx, ny)
		}
		Hadamard(y, d, 1)
		for j := range x {
			if math.Abs(float64(y[j]-x[j])) > 1e-5*math.Sqrt(nx) {
				t.Fatalf("d=%d: rotated twice, element %d is %v, was %v", d, j, y[j], x[j])
			}
		}
	}
	// H_4/2 of (1, 0, 0, 0) is (½, ½, ½, ½); of (0, 1, 0, 0), (½, -½, ½, -½).
	e := []float32{1, 0, 0, 0, 0, 1, 0, 0}
	Hadamard(e, 4, 1)
	want := []float32{0.5, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, -0.5}
	for j := range e {
		if e[j] != want[j] {
			t.Fatalf("H_4/2 of the unit rows: %v, want %v", e, want)
		}
	}
	// A row of zeros and one with a NaN or an infinity.
	row := make([]int8, 8)
	NarrowI8(row, []float32{0, 0, 0, 0})
	if s := RowScaleI8(row); s != 0 {
		t.Fatalf("zeros: scale %v", s)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		NarrowI8(row, []float32{1, bad, 2, 3})
		if s := RowScaleI8(row); s == s || row[4] != 0 || row[7] != 0 {
			t.Fatalf("%v: scale %v, elements %v", bad, s, row[4:])
		}
	}
	// Scores and blends against float64.
	for _, d := range []int{1, 7, 64, 128} {
		a := &kernelArgs{t: t, r: r}
		const n = 9
		k, q := a.i8Rows(n, d+4, d), testutil.Floats(r, d, 1)
		dst := make([]float32, n)
		ScoreRowsI8(dst, k, d+4, q)
		for i := range n {
			var want float64
			for j, v := range dequant(k, d+4, i, d) {
				want += float64(v) * float64(q[j])
			}
			b := reference.Gamma(d+1)*absDotI8(k, d+4, i, q) + 1e-40
			if !(math.Abs(float64(dst[i])-want) <= b) && !(want != want && dst[i] != dst[i]) {
				t.Fatalf("d=%d: score %d = %v, want %v ± %v", d, i, dst[i], want, b)
			}
		}
	}
}

func init() {
	variantCases["scoreRowsMultiI8"] = func(rows, d int, ask bool) kernelCase { return scoreMultiI8Case(rows, d) }
	variantCases["blendRowsMultiI8"] = func(rows, d int, ask bool) kernelCase { return blendMultiI8Case(rows, d) }
}

// TestRowsMultiI8Bits checks that the int8 multi-row kernels give each row
// the bits the one-row kernels give it: the scores while the keys are a
// multiple of eight, the blends always.
func TestRowsMultiI8Bits(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, d := range []int{1, 13, 64, 128, 131} {
			for _, n := range []int{8, 16, 17, 24, 64} {
				for rows := 1; rows <= 4; rows++ {
					a := &kernelArgs{t: t, r: testutil.Rand(uint64(n*d + rows))}
					stride := d + 4 + 2
					k, q := a.i8Rows(n, stride, d), a.floats(rows*d, 2)
					multi, one := make([]float32, rows*n), make([]float32, rows*n)
					ScoreRowsMultiI8(multi, k, stride, q, rows)
					for r := range rows {
						ScoreRowsI8(one[r*n:(r+1)*n], k, stride, q[r*d:(r+1)*d])
					}
					if n%8 == 0 && !sameRows(multi, one) {
						t.Fatalf("d=%d n=%d rows=%d: multi-row scores %v, one-row %v", d, n, rows, multi, one)
					}
					w, acc := a.floats(rows*n, 1), a.floats(rows*d, 1)
					acc1 := append([]float32(nil), acc...)
					BlendRowsMultiI8(acc, w, k, stride, rows, nil)
					for r := range rows {
						BlendRowsI8(acc1[r*d:(r+1)*d], w[r*n:(r+1)*n], k, stride)
					}
					if !sameRows(acc, acc1) {
						t.Fatalf("d=%d n=%d rows=%d: multi-row blend %v, one-row %v", d, n, rows, acc, acc1)
					}
				}
			}
		}
	})
}

func sameRows(a, b []float32) bool {
	for i := range a {
		if !sameBits(a[i], b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// hadamardRowsCase rotates one to three rows of a width that is a multiple
// of 16, whose block is 16 floats or more.
func hadamardRowsCase(a *kernelArgs, n int) []result {
	d, rows := 16*(1+n%9), 1+n%3
	x := a.floats(rows*d, 4)
	b := d & -d
	f := float32(1 / math.Sqrt(float64(b)))
	HadamardRows(x, d, f)
	return []result{{"x", x, nil}}
}

func init() { kernelCases["hadamardRows"] = hadamardRowsCase }

// quantRowsI8Case quantises one to three rows of 128 floats, rotated or
// not, at a stride of the row's bytes and up to seven more: some rows
// zero, some with special values, some near the largest float32 (whose
// rotation overflows), the others of magnitudes across the floats.
func quantRowsI8Case(a *kernelArgs, n int) []result {
	d, rows := 128, 1+n%3
	stride := d + 4 + n%8
	src := a.floats(rows*d, float32(math.Ldexp(1, a.r.IntN(200)-130)))
	for r := range rows {
		row := src[r*d : (r+1)*d]
		switch a.r.IntN(8) {
		case 0:
			clear(row)
		case 1:
			row[a.r.IntN(d)] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[a.r.IntN(3)]
		case 2:
			for j := range row {
				row[j] = math.MaxFloat32 * (1 - float32(a.r.IntN(4))/8)
			}
		}
	}
	f := float32(0)
	if n%4 < 2 {
		f = float32(1 / math.Sqrt(float64(d)))
	}
	dst := a.i8s(rowsLen(rows, stride, d+4))
	QuantRowsI8(dst, stride, src, d, f, make([]float32, 2*d))
	out := make([]float32, len(dst))
	for i, v := range dst {
		out[i] = float32(v)
	}
	return []result{{"dst", out, nil}}
}

func init() { kernelCases["quantRowsI8"] = quantRowsI8Case }

// The block path turns its queries as rows (RotateRows) before they go
// into the lanes, where it turned the lanes (Hadamard over BlockRows
// lanes): the two agree bit for bit on every implementation, at widths
// whose block takes the rows kernel (16 and up) and those that do not.
func TestRotateRowsMatchesLanes(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(21)
		for _, d := range []int{1, 2, 6, 8, 12, 16, 24, 48, 64, 80, 96, 128, 256} {
			for _, R := range []int{1, 5, BlockRows} {
				rows := testutil.Floats(r, R*d, 4)
				lanes := make([]float32, BlockRows*d)
				BlockIn(lanes, rows, d, R)
				Hadamard(lanes, d, BlockRows)
				RotateRows(rows, d)
				got := make([]float32, BlockRows*d)
				BlockIn(got, rows, d, R)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(lanes[i]) {
						t.Fatalf("d %d, %d rows: lane %d of column %d is %v as rows, %v as lanes", d, R, i%BlockRows, i/BlockRows, got[i], lanes[i])
					}
				}
			}
		}
	})
}
