package kernel

import "github.com/glancelab/attention/internal/half"

// The row kernels over 16-bit key and value rows: half precision (IEEE
// binary16) or bfloat16, each element widened to float32 exactly and the
// sums formed in float32, so a row costs half the bytes of a float32 row
// and the arithmetic is that of scoreRows and blendRows.

// scoreRowsF16Generic sets dst[i] = Σ_j f16(k[i*stride+j])*q[j] for
// i < len(dst), j < len(q), as scoreRowsGeneric sums.
func scoreRowsF16Generic(dst []float32, k []uint16, stride int, q []float32) {
	d := len(q)
	for i := range dst {
		var s float32
		for j, x := range k[i*stride : i*stride+d] {
			s += float32(half.F16ToF32(x) * q[j])
		}
		dst[i] = s
	}
}

// scoreRowsBF16Generic is scoreRowsF16Generic for bfloat16 rows.
func scoreRowsBF16Generic(dst []float32, k []uint16, stride int, q []float32) {
	d := len(q)
	for i := range dst {
		var s float32
		for j, x := range k[i*stride : i*stride+d] {
			s += float32(half.BF16ToF32(x) * q[j])
		}
		dst[i] = s
	}
}

// blendRowsF16Generic sets acc[j] += Σ_i w[i]*f16(v[i*stride+j]) for
// i < len(w), j < len(acc), row after row.
func blendRowsF16Generic(acc, w []float32, v []uint16, stride int) {
	d := len(acc)
	for i, wi := range w {
		for j, x := range v[i*stride : i*stride+d] {
			acc[j] += float32(wi * half.F16ToF32(x))
		}
	}
}

// blendRowsBF16Generic is blendRowsF16Generic for bfloat16 rows.
func blendRowsBF16Generic(acc, w []float32, v []uint16, stride int) {
	d := len(acc)
	for i, wi := range w {
		for j, x := range v[i*stride : i*stride+d] {
			acc[j] += float32(wi * half.BF16ToF32(x))
		}
	}
}

// scoreRowsMultiF16Generic is scoreRowsF16 for each of the query rows. It
// calls the scoreRowsF16 front, as scoreRowsMultiGeneric calls scoreRows's,
// so an implementation without a multi-row kernel of its own runs its
// one-row kernel; the generic path runs the generic code throughout.
func scoreRowsMultiF16Generic(dst []float32, k []uint16, stride int, q []float32, rows int) {
	n, d := len(dst)/rows, len(q)/rows
	for r := range rows {
		ScoreRowsF16(dst[r*n:(r+1)*n], k, stride, q[r*d:(r+1)*d])
	}
}

// scoreRowsMultiBF16Generic is scoreRowsMultiF16Generic for bfloat16 rows.
func scoreRowsMultiBF16Generic(dst []float32, k []uint16, stride int, q []float32, rows int) {
	n, d := len(dst)/rows, len(q)/rows
	for r := range rows {
		ScoreRowsBF16(dst[r*n:(r+1)*n], k, stride, q[r*d:(r+1)*d])
	}
}

// scoreRowsMultiPairedBF16Generic is scoreRowsBF16Generic's sums for
// each of the rows, their query elements found in pair order.
func scoreRowsMultiPairedBF16Generic(dst []float32, k []uint16, stride int, q []float32, rows int) {
	n, d := len(dst)/rows, len(q)/rows
	for r := range rows {
		qr := q[r*d : (r+1)*d]
		for i := range n {
			var s float32
			for c, x := range k[i*stride : i*stride+d] {
				s += float32(half.BF16ToF32(x) * qr[pairIndex(c, d)])
			}
			dst[r*n+i] = s
		}
	}
}

// PairOrder sets each row of d elements of dst to the row of q in pair
// order: in each block of sixteen from the row's start, while sixteen
// remain, the even elements, then the odd ones; the rest in order. It is
// the layout scoreRowsMultiPairedBF16 takes, the bfloat16 kernels' split of
// a block of sixteen columns into even and odd lanes.
func PairOrder(dst, q []float32, d int) {
	if d <= 0 {
		return
	}
	for r := 0; r+d <= len(q); r += d {
		row, out := q[r:r+d], dst[r:r+d]
		c := 0
		for ; c+16 <= d; c += 16 {
			for i := range 8 {
				out[c+i], out[c+8+i] = row[c+2*i], row[c+2*i+1]
			}
		}
		copy(out[c:], row[c:])
	}
}

// pairIndex returns where column c of a row of d sits in pair order.
func pairIndex(c, d int) int {
	b := c &^ 15
	if b+16 > d {
		return c
	}
	return b + (c&15)/2 + 8*(c&1)
}

// blendRowsMultiF16Generic is blendRowsF16 for each of the rows, through
// the blendRowsF16 front as scoreRowsMultiF16Generic is; it asks for
// nothing ahead.
func blendRowsMultiF16Generic(acc, w []float32, v []uint16, stride int, rows int, next []uint16) {
	n, d := len(w)/rows, len(acc)/rows
	for r := range rows {
		BlendRowsF16(acc[r*d:(r+1)*d], w[r*n:(r+1)*n], v, stride)
	}
}

// blendRowsMultiBF16Generic is blendRowsMultiF16Generic for bfloat16 rows.
func blendRowsMultiBF16Generic(acc, w []float32, v []uint16, stride int, rows int, next []uint16) {
	n, d := len(w)/rows, len(acc)/rows
	for r := range rows {
		BlendRowsBF16(acc[r*d:(r+1)*d], w[r*n:(r+1)*n], v, stride)
	}
}

// scoreRowsMulti8F16Generic is scoreRowsMultiF16 on the first four rows and
// on the rest, through its front; it asks for nothing ahead.
func scoreRowsMulti8F16Generic(dst []float32, k []uint16, stride int, q []float32, rows int, also []uint16) {
	n, d := len(dst)/rows, len(q)/rows
	ScoreRowsMultiF16(dst[:4*n], k, stride, q[:4*d], 4)
	ScoreRowsMultiF16(dst[4*n:rows*n], k, stride, q[4*d:rows*d], rows-4)
}

// blendRowsMulti8F16Generic is blendRowsMultiF16 on the first four rows and
// on the rest, through its front; it asks for nothing ahead.
func blendRowsMulti8F16Generic(acc, w []float32, v []uint16, stride int, rows int, next []uint16) {
	n, d := len(w)/rows, len(acc)/rows
	BlendRowsMultiF16(acc[:4*d], w[:4*n], v, stride, 4, nil)
	BlendRowsMultiF16(acc[4*d:rows*d], w[4*n:rows*n], v, stride, rows-4, nil)
}

// scoreRowsMulti8BF16Generic is scoreRowsMultiBF16 on the first four rows and
// on the rest, through its front; it asks for nothing ahead.
func scoreRowsMulti8BF16Generic(dst []float32, k []uint16, stride int, q []float32, rows int, also []uint16) {
	n, d := len(dst)/rows, len(q)/rows
	ScoreRowsMultiBF16(dst[:4*n], k, stride, q[:4*d], 4)
	ScoreRowsMultiBF16(dst[4*n:rows*n], k, stride, q[4*d:rows*d], rows-4)
}

// blendRowsMulti8BF16Generic is blendRowsMultiBF16 on the first four rows and
// on the rest, through its front; it asks for nothing ahead.
func blendRowsMulti8BF16Generic(acc, w []float32, v []uint16, stride int, rows int, next []uint16) {
	n, d := len(w)/rows, len(acc)/rows
	BlendRowsMultiBF16(acc[:4*d], w[:4*n], v, stride, 4, nil)
	BlendRowsMultiBF16(acc[4*d:rows*d], w[4*n:rows*n], v, stride, rows-4, nil)
}
