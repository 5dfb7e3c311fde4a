package kernel

import "math"

// The row kernels over int8 key and value rows: each row is its float32
// scale (four little-endian bytes) followed by its elements, which widen
// to float32 exactly; the scale multiplies a row's sum once (scores) or
// its weight once (blends), so the arithmetic is otherwise scoreRows's
// and blendRows's.

// RowScaleI8 returns the scale a row of an int8 cache starts with.
func RowScaleI8(row []int8) float32 {
	_ = row[3]
	return math.Float32frombits(uint32(uint8(row[0])) | uint32(uint8(row[1]))<<8 | uint32(uint8(row[2]))<<16 | uint32(uint8(row[3]))<<24)
}

// scoreRowsI8Generic sets dst[i] = s_i·Σ_j k[i*stride+4+j]*q[j], as
// scoreRowsGeneric sums.
func scoreRowsI8Generic(dst []float32, k []int8, stride int, q []float32) {
	d := len(q)
	for i := range dst {
		row := k[i*stride : i*stride+4+d]
		var s float32
		for j, x := range row[4:] {
			s += float32(float32(x) * q[j])
		}
		dst[i] = RowScaleI8(row) * s
	}
}

// blendRowsI8Generic sets acc[j] += Σ_i (w[i]·s_i)*v[i*stride+4+j], row
// after row.
func blendRowsI8Generic(acc, w []float32, v []int8, stride int) {
	d := len(acc)
	for i, wi := range w {
		row := v[i*stride : i*stride+4+d]
		ws := wi * RowScaleI8(row)
		for j, x := range row[4:] {
			acc[j] += float32(ws * float32(x))
		}
	}
}

// scoreRowsMultiI8Generic is scoreRowsI8 for each of the query rows,
// through its front, as scoreRowsMultiF16Generic.
func scoreRowsMultiI8Generic(dst []float32, k []int8, stride int, q []float32, rows int) {
	n, d := len(dst)/rows, len(q)/rows
	for r := range rows {
		ScoreRowsI8(dst[r*n:(r+1)*n], k, stride, q[r*d:(r+1)*d])
	}
}

// blendRowsMultiI8Generic is blendRowsI8 for each of the rows, through
// its front.
func blendRowsMultiI8Generic(acc, w []float32, v []int8, stride int, rows int, _ []int8) {
	n, d := len(w)/rows, len(acc)/rows
	for r := range rows {
		BlendRowsI8(acc[r*d:(r+1)*d], w[r*n:(r+1)*n], v, stride)
	}
}

// widenRowsI8Generic dequantises len(dst)/d rows of src into dst, packed.
func widenRowsI8Generic(dst []float32, src []int8, stride int, d int) {
	if d == 0 {
		return
	}
	for i := range len(dst) / d {
		row := src[i*stride : i*stride+4+d]
		s := RowScaleI8(row)
		for j, x := range row[4:] {
			dst[i*d+j] = s * float32(x)
		}
	}
}

// narrowI8Generic stores src as one int8 row: its scale, then its
// elements rounded against it.
func narrowI8Generic(dst []int8, src []float32) {
	row := dst[:4+len(src)]
	var m float32
	finite := true
	for _, x := range src {
		a := float32(math.Abs(float64(x)))
		if !(a <= math.MaxFloat32) {
			finite = false
			break
		}
		m = max(m, a)
	}
	var s float32
	switch {
	case !finite:
		s = float32(math.NaN())
		clear(row[4:])
	case m == 0:
		clear(row[4:])
	default:
		// x·(127/m) in float32, each product rounded once; below
		// m = 2⁻⁶⁴, where 127/m would overflow, x and m scaled by 2⁶⁴
		// first (exactly), which leaves the same real products.
		s = m / 127
		sc := float32(1)
		if m < 0x1p-64 {
			sc = 0x1p64
		}
		inv := 127 / (m * sc)
		for j, x := range src {
			row[4+j] = int8(math.RoundToEven(float64(x * sc * inv)))
		}
	}
	PutScaleI8(row, s)
}

// quantRowsI8Generic stores each row of d floats of src as an int8 row of
// dst, row r at r·stride: rotated first in tmp (HadamardRows with f)
// unless f is 0, then quantised by NarrowI8. It calls the dispatched
// kernels, whose bits are their twins': an implementation without the
// fused kernel runs its own two.
func quantRowsI8Generic(dst []int8, stride int, src []float32, d int, f float32, tmp []float32) {
	for r := range len(src) / d {
		row := src[r*d : (r+1)*d]
		if f != 0 {
			t := tmp[:d]
			copy(t, row)
			HadamardRows(t, d, f)
			row = t
		}
		NarrowI8(dst[r*stride:], row)
	}
}

// NarrowI8Static stores src as one int8 row quantised with static scales,
// ONNX Runtime's rule: element j is x/s_j rounded to nearest even and
// clamped to [−128, 127], with s_j = channels[j] if channels is not nil
// (the row's own scale is then 1: the caller applies them), else s (the
// row's scale). A row with a NaN or an infinity is stored as NaN, as by
// NarrowI8. Scalar: it stores rows imported from elsewhere, not a decode
// step's.
func NarrowI8Static(dst []int8, src []float32, s float32, channels []float32) {
	row := dst[:4+len(src)]
	for j, x := range src {
		if x-x != 0 { // NaN or ±Inf
			clear(row[4:])
			PutScaleI8(row, float32(math.NaN()))
			return
		}
		sj := s
		if channels != nil {
			sj = channels[j]
		}
		y := math.RoundToEven(float64(x / sj))
		row[4+j] = int8(max(-128, min(127, y)))
	}
	if channels != nil {
		s = 1
	}
	PutScaleI8(row, s)
}

// PutScaleI8 stores s as the scale a row of an int8 cache starts with.
func PutScaleI8(row []int8, s float32) {
	b := math.Float32bits(s)
	row[0], row[1], row[2], row[3] = int8(uint8(b)), int8(uint8(b>>8)), int8(uint8(b>>16)), int8(uint8(b>>24))
}

// hadamardGeneric rotates each d×lanes matrix of x along its rows, in
// blocks of d&-d rows.
func hadamardGeneric(x []float32, d, lanes int) {
	b := d & -d
	if b < 2 {
		return
	}
	hadamardOf(x, d, lanes, float32(1/math.Sqrt(float64(b))))
}

// hadamardRowsGeneric is hadamardGeneric over rows, f given.
func hadamardRowsGeneric(x []float32, d int, f float32) { hadamardOf(x, d, 1, f) }

// RotateRows rotates each whole row of d floats of x as hadamard does,
// through hadamardRows where the block is 16 floats or more.
func RotateRows(x []float32, d int) {
	b := d & -d
	switch {
	case b < 2:
	case b >= 16:
		HadamardRows(x[:len(x)/d*d], d, float32(1/math.Sqrt(float64(b))))
	default:
		Hadamard(x, d, 1)
	}
}

// hadamardOf is hadamardGeneric with the factor f.
func hadamardOf(x []float32, d, lanes int, f float32) {
	b := d & -d
	if lanes == 1 {
		// Rows: each block's butterflies over its own slice, without a
		// slice per pair: 32 rows of 128 took a third of the general loop's
		// time (12 µs against 38, Zen 5).
		for blk := 0; blk+b <= len(x)/d*d; blk += b {
			y := x[blk : blk+b : blk+b]
			for span := 1; span < b; span *= 2 {
				for i := 0; i < b; i += 2 * span {
					lo, hi := y[i:i+span:i+span], y[i+span:i+2*span:i+2*span]
					for r, a := range lo {
						c := hi[r]
						lo[r], hi[r] = a+c, a-c
					}
				}
			}
			for i := range y {
				y[i] *= f
			}
		}
		return
	}
	for m := 0; m+d*lanes <= len(x); m += d * lanes {
		for blk := m; blk < m+d*lanes; blk += b * lanes {
			for span := 1; span < b; span *= 2 {
				for i := 0; i < b; i += 2 * span {
					for r := i; r < i+span; r++ {
						lo, hi := x[blk+r*lanes:blk+(r+1)*lanes], x[blk+(r+span)*lanes:blk+(r+span+1)*lanes]
						for l, a := range lo {
							c := hi[l]
							lo[l], hi[l] = a+c, a-c
						}
					}
				}
			}
			for i := range x[blk : blk+b*lanes] {
				x[blk+i] *= f
			}
		}
	}
}
