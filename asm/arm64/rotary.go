package main

import "fmt"

// The rotary-embedding kernels on NEON: each product (FMUL) and each sum
// (FADD, FSUB) its own instruction, no fused multiply-add, so that each
// rounds once as the generic twin's and ONNX's float32 arithmetic do. A
// chunk's cosines and sines are loaded once for every row; the last
// elements (fewer than four, or one pair) go one at a time.

func init() {
	neon["rotaryHalf"] = genRotaryHalf
	neon["rotaryPairs"] = genRotaryPairs
}

// scalarTurn turns the one pair at memory operands ma and mb by the cosine
// in F6 and the sine in F7, through F0–F5.
func scalarTurn(a *Asm, ma, mb string) {
	a.Op("FMOVS %s, F0", ma)
	a.Op("FMOVS %s, F1", mb)
	a.Op("FMULS F6, F0, F2")
	a.Op("FMULS F7, F1, F3")
	a.Op("FMULS F7, F0, F4")
	a.Op("FMULS F6, F1, F5")
	a.Op("FSUBS F3, F2, F0")
	a.Op("FADDS F5, F4, F1")
	a.Op("FMOVS F0, %s", ma)
	a.Op("FMOVS F1, %s", mb)
}

// rowLoop emits the loop over the rows at label l: r counts down from
// rows, body turns the row at the pointers ptrs, which then move on stride
// bytes; the loop leaves for end when no row is left.
func rowLoop(a *Asm, l, end string, rows, r, stride R, ptrs []R, body func()) {
	a.Op("MOVD %s, %s", rows, r)
	a.Label(l)
	a.Op("CBZ %s, %s", r, end)
	body()
	for _, p := range ptrs {
		a.Op("ADD %s, %s, %s", stride, p, p)
	}
	a.Op("SUB $1, %s, %s", r, r)
	a.Op("B %s", l)
}

// rotaryArgs loads x, the row stride in bytes, the row count, cos, sin and
// n = len(cos) into R0–R5.
func rotaryArgs(a *Asm) (x, stride, rows, cos, sin, n R) {
	x, stride, rows, cos, sin, n = R(0), R(1), R(2), R(3), R(4), R(5)
	a.Op("MOVD x_base+0(FP), %s", x)
	a.Op("MOVD stride+24(FP), %s", stride)
	a.Op("LSL $2, %s, %s", stride, stride)
	a.Op("MOVD rows+32(FP), %s", rows)
	a.Op("MOVD cos_base+40(FP), %s", cos)
	a.Op("MOVD cos_len+48(FP), %s", n)
	a.Op("MOVD sin_base+64(FP), %s", sin)
	return
}

// genRotaryHalf turns pairs (i, i+n) of each row: four at a time in V0–V5
// (cosines in V6, sines in V7), the rest one at a time in F0–F7.
func genRotaryHalf(a *Asm) {
	x, stride, rows, cos, sin, n := rotaryArgs(a)
	nB, i, full, xr, x2, r, t := R(6), R(7), R(8), R(9), R(10), R(11), R(12)
	a.Op("LSL $2, %s, %s", n, nB)
	a.Op("AND $~3, %s, %s", n, full)
	a.Op("LSL $2, %s, %s", full, full)
	a.Op("MOVD ZR, %s", i)
	chunk, rowsL, next, tail, tailRows, tailNext, done := a.NewLabel("chunk"), a.NewLabel("rows"), a.NewLabel("next"),
		a.NewLabel("tail"), a.NewLabel("trows"), a.NewLabel("tnext"), a.NewLabel("done")
	a.Label(chunk)
	a.Op("CMP %s, %s", full, i)
	a.Op("BGE %s", tail)
	a.Op("ADD %s, %s, %s", i, cos, t)
	a.Op("VLD1 (%s), [%s]", t, V(6).S4())
	a.Op("ADD %s, %s, %s", i, sin, t)
	a.Op("VLD1 (%s), [%s]", t, V(7).S4())
	a.Op("ADD %s, %s, %s", i, x, xr)
	a.Op("ADD %s, %s, %s", nB, xr, x2)
	rowLoop(a, rowsL, next, rows, r, stride, []R{xr, x2}, func() {
		a.Op("VLD1 (%s), [%s]", xr, V(0).S4())
		a.Op("VLD1 (%s), [%s]", x2, V(1).S4())
		a.W(FMUL(2, 0, 6)) // c·a
		a.W(FMUL(3, 1, 7)) // s·b
		a.W(FMUL(4, 0, 7)) // s·a
		a.W(FMUL(5, 1, 6)) // c·b
		a.W(FSUB(0, 2, 3))
		a.W(FADD(1, 4, 5))
		a.Op("VST1 [%s], (%s)", V(0).S4(), xr)
		a.Op("VST1 [%s], (%s)", V(1).S4(), x2)
	})
	a.Label(next)
	a.Op("ADD $16, %s, %s", i, i)
	a.Op("B %s", chunk)
	a.Label(tail)
	a.Op("CMP %s, %s", nB, i)
	a.Op("BGE %s", done)
	a.Op("FMOVS (%s)(%s), F6", cos, i)
	a.Op("FMOVS (%s)(%s), F7", sin, i)
	a.Op("ADD %s, %s, %s", i, x, xr)
	a.Op("ADD %s, %s, %s", nB, xr, x2)
	rowLoop(a, tailRows, tailNext, rows, r, stride, []R{xr, x2}, func() {
		scalarTurn(a, fmt.Sprintf("(%s)", xr), fmt.Sprintf("(%s)", x2))
	})
	a.Label(tailNext)
	a.Op("ADD $4, %s, %s", i, i)
	a.Op("B %s", tail)
	a.Label(done)
	a.Op("RET")
}

// genRotaryPairs turns pairs (2i, 2i+1) of each row, two pairs a vector:
// the two cosines and sines repeated by ZIP1 ([c0 c0 c1 c1]), the sines
// times neonHadamardSigns' [1 −1 1 −1] (exact), the row's pairs swapped by
// REV64, so that x·c − swapped·s·signs is c·x_2i − s·x_(2i+1) and
// c·x_(2i+1) + s·x_2i with the twin's roundings. An odd last pair goes one
// at a time in F0–F7.
func genRotaryPairs(a *Asm) {
	x, stride, rows, cos, sin, n := rotaryArgs(a)
	j, full, xr, r, t, nB := R(7), R(8), R(9), R(11), R(12), R(6)
	a.Op("MOVD $·neonHadamardSigns<>(SB), %s", t)
	a.Op("VLD1 (%s), [%s]", t, V(16).S4())
	a.Op("LSL $2, %s, %s", n, nB) // bytes of cos
	a.Op("AND $~1, %s, %s", n, full)
	a.Op("LSL $2, %s, %s", full, full) // bytes of cos in whole vectors
	a.Op("MOVD ZR, %s", j)
	chunk, rowsL, next, tail, tailRows, done := a.NewLabel("chunk"), a.NewLabel("rows"), a.NewLabel("next"),
		a.NewLabel("tail"), a.NewLabel("trows"), a.NewLabel("done")
	a.Label(chunk)
	a.Op("CMP %s, %s", full, j)
	a.Op("BGE %s", tail)
	a.Op("FMOVD (%s)(%s), F6", cos, j)
	a.Op("FMOVD (%s)(%s), F7", sin, j)
	a.Op("VZIP1 %s, %s, %s", V(6).S4(), V(6).S4(), V(6).S4())
	a.Op("VZIP1 %s, %s, %s", V(7).S4(), V(7).S4(), V(7).S4())
	a.W(FMUL(7, 7, 16))
	a.Op("ADD %s<<1, %s, %s", j, x, xr) // x's bytes are twice cos's
	rowLoop(a, rowsL, next, rows, r, stride, []R{xr}, func() {
		a.Op("VLD1 (%s), [%s]", xr, V(0).S4())
		a.Op("VREV64 %s, %s", V(0).S4(), V(1).S4())
		a.W(FMUL(2, 0, 6))
		a.W(FMUL(3, 1, 7))
		a.W(FSUB(0, 2, 3))
		a.Op("VST1 [%s], (%s)", V(0).S4(), xr)
	})
	a.Label(next)
	a.Op("ADD $8, %s, %s", j, j)
	a.Op("B %s", chunk)
	a.Label(tail)
	a.Op("CMP %s, %s", nB, j)
	a.Op("BGE %s", done)
	a.Op("FMOVS (%s)(%s), F6", cos, j)
	a.Op("FMOVS (%s)(%s), F7", sin, j)
	a.Op("ADD %s<<1, %s, %s", j, x, xr)
	rowLoop(a, tailRows, done, rows, r, stride, []R{xr}, func() {
		scalarTurn(a, fmt.Sprintf("(%s)", xr), fmt.Sprintf("4(%s)", xr))
	})
	a.Label(done)
	a.Op("RET")
}
