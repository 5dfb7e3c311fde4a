package main

import "fmt"

// The row kernels over int8 key and value rows: each row its float32
// scale and then its elements, widened in registers (SXTL to halfwords,
// SXTL and SXTL2 to words, SCVTF to floats: exact) with float32 FMAs; the
// scale multiplies a score's sum, or a blend's weight, once a row, as the
// generic twins do. The last elements of a row are loaded byte by byte, so
// nothing past a row is read.

func init() {
	neon["scoreRowsI8"] = genScoreRowsI8
	neon["blendRowsI8"] = genBlendRowsI8
}

func (v V) B8() string     { return fmt.Sprintf("V%d.B8", v) }
func (v V) gnu8b() string  { return fmt.Sprintf("v%d.8b", v) }
func (v V) gnu16b() string { return fmt.Sprintf("v%d.16b", v) }

// The sign-extensions and the conversion ("shift by immediate" class,
// SSHLL with a shift of 0, and "two-register miscellaneous").
func SXTL8H(d, n V) Word {
	return Word{0x0f08a400 | uint32(n)<<5 | uint32(d), fmt.Sprintf("sxtl %s, %s", d.gnu8h(), n.gnu8b())}
}

func SXTL28H(d, n V) Word {
	return Word{0x4f08a400 | uint32(n)<<5 | uint32(d), fmt.Sprintf("sxtl2 %s, %s", d.gnu8h(), n.gnu16b())}
}

func SXTL4S(d, n V) Word {
	return Word{0x0f10a400 | uint32(n)<<5 | uint32(d), fmt.Sprintf("sxtl %s, %s", d.gnu4s(), n.gnu4h())}
}

func SXTL24S(d, n V) Word {
	return Word{0x4f10a400 | uint32(n)<<5 | uint32(d), fmt.Sprintf("sxtl2 %s, %s", d.gnu4s(), n.gnu8h())}
}

func SCVTF4S(d, n V) Word { return vec2(0x4e21d800, "scvtf", d, n) }

func init() {
	wordOps["sxtl8h"] = func(d, n, _ V) Word { return SXTL8H(d, n) }
	wordOps["sxtl28h"] = func(d, n, _ V) Word { return SXTL28H(d, n) }
	wordOps["sxtl4s"] = func(d, n, _ V) Word { return SXTL4S(d, n) }
	wordOps["sxtl24s"] = func(d, n, _ V) Word { return SXTL24S(d, n) }
	wordOps["scvtf"] = func(d, n, _ V) Word { return SCVTF4S(d, n) }
}

// widen8 emits the floats of the 8 int8 elements in the low half of raw
// into dst and dst+1 (raw clobbered).
func widen8(a *Asm, dst, raw V) {
	a.W(SXTL8H(raw, raw))
	a.W(SXTL4S(dst, raw))
	a.W(SXTL24S(dst+1, raw))
	a.W(SCVTF4S(dst, dst))
	a.W(SCVTF4S(dst+1, dst+1))
}

// widen16 emits the floats of the 16 int8 elements of raw into dst to
// dst+3; mid and mid+1 are clobbered.
func widen16(a *Asm, dst, raw, mid V) {
	a.W(SXTL8H(mid, raw))
	a.W(SXTL28H(mid+1, raw))
	for i := range V(2) {
		a.W(SXTL4S(dst+2*i, mid+i))
		a.W(SXTL24S(dst+2*i+1, mid+i))
	}
	for i := range V(4) {
		a.W(SCVTF4S(dst+i, dst+i))
	}
}

// partI8 sets dst and dst+1 to the floats of the cnt (1–7) int8 elements
// at p, the other lanes zero, reading no other byte; raw and tmp are
// clobbered.
func partI8(a *Asm, dst, raw V, p, cnt, tmp R) {
	done := a.NewLabel("p8")
	zero(a, raw)
	a.Op("VLD1 (%s), %s", p, fmt.Sprintf("V%d.B[0]", raw))
	for i := 1; i < 7; i++ {
		a.Op("CMP $%d, %s", i+1, cnt)
		a.Op("BLT %s", done)
		a.Op("ADD $%d, %s, %s", i, p, tmp)
		a.Op("VLD1 (%s), %s", tmp, fmt.Sprintf("V%d.B[%d]", raw, i))
	}
	a.Label(done)
	widen8(a, dst, raw)
}

// genScoreRowsI8: blocks of four rows share each 8-float chunk of q (V16,
// V17), two accumulators a row (V0–V7), each row's 8 elements loaded into
// V24+r and widened into V8+2r, V9+2r; the last d%8 elements of q are held
// zero-padded in V18, V19 and each row's loaded byte by byte. The sums
// leave through one pairwise reduction, multiplied by the rows' scales
// (V20, one a lane); single rows after.
func genScoreRowsI8(a *Asm) {
	dst, rows, k, stride, q, d := R(0), R(1), R(2), R(3), R(4), R(5)
	a.Op("MOVD dst_base+0(FP), %s", dst)
	a.Op("MOVD dst_len+8(FP), %s", rows)
	a.Op("MOVD k_base+24(FP), %s", k)
	a.Op("MOVD stride+48(FP), %s", stride)
	a.Op("MOVD q_base+56(FP), %s", q)
	a.Op("MOVD q_len+64(FP), %s", d)
	rem, tmp, cnt, qp := R(6), R(7), R(8), R(9)
	a.Op("AND $7, %s, %s", d, rem)
	// V18, V19: the last d%8 elements of q, zero-padded.
	zero(a, 18, 19)
	noqt := a.NewLabel("noqt")
	a.Op("CBZ %s, %s", rem, noqt)
	a.Op("SUB %s, %s, %s", rem, d, tmp)
	a.Op("ADD %s<<2, %s, %s", tmp, q, qp)
	for i := range 7 {
		if i > 0 {
			a.Op("CMP $%d, %s", i+1, rem)
			a.Op("BLT %s", noqt)
		}
		a.Op("VLD1 (%s), %s", qp, V(18+i/4).Lane(i%4))
		a.Op("ADD $4, %s, %s", qp, qp)
	}
	a.Label(noqt)

	rp := []R{10, 11, 12, 13} // row pointers of a block (the elements)
	for _, R4 := range []int{4, 1} {
		loop, next := a.NewLabel("rows"), a.NewLabel("next")
		a.Label(loop)
		a.Op("CMP $%d, %s", R4, rows)
		a.Op("BLT %s", next)
		a.Op("ADD $4, %s, %s", k, rp[0])
		for r := 1; r < R4; r++ {
			a.Op("ADD %s, %s, %s", stride, rp[r-1], rp[r])
		}
		acc := regs(0, 2*R4)
		zero(a, acc...)
		a.Op("MOVD %s, %s", q, qp)
		c8, c8loop, tail := a.NewLabel("c8"), a.NewLabel("c8loop"), a.NewLabel("tail")
		a.Label(c8)
		a.Op("LSR $3, %s, %s", d, cnt)
		a.Op("CBZ %s, %s", cnt, tail)
		a.Label(c8loop)
		a.Op("VLD1.P 32(%s), %s", qp, list(16, 2))
		for r := range R4 {
			a.Op("VLD1.P 8(%s), [%s]", rp[r], V(24+r).B8())
		}
		for r := range R4 {
			widen8(a, 8+2*V(r), 24+V(r))
		}
		for r := range R4 {
			a.Op("VFMLA %s, %s, %s", V(16).S4(), V(8+2*r).S4(), acc[2*r].S4())
			a.Op("VFMLA %s, %s, %s", V(17).S4(), V(9+2*r).S4(), acc[2*r+1].S4())
		}
		a.Op("SUB $1, %s, %s", cnt, cnt)
		a.Op("CBNZ %s, %s", cnt, c8loop)
		reduce := a.NewLabel("reduce")
		a.Label(tail)
		a.Op("CBZ %s, %s", rem, reduce)
		for r := range R4 {
			partI8(a, 8, 24, rp[r], rem, tmp)
			a.Op("VFMLA %s, %s, %s", V(18).S4(), V(8).S4(), acc[2*r].S4())
			a.Op("VFMLA %s, %s, %s", V(19).S4(), V(9).S4(), acc[2*r+1].S4())
		}
		a.Label(reduce)
		for r := range R4 {
			a.W(FADD(acc[2*r], acc[2*r], acc[2*r+1]))
		}
		if R4 == 4 {
			a.W(FADDP(0, 0, 2))
			a.W(FADDP(4, 4, 6))
			a.W(FADDP(0, 0, 4)) // lanes: row 0, 1, 2, 3
			a.Op("MOVD %s, %s", k, tmp)
			for r := range 4 {
				a.Op("VLD1 (%s), %s", tmp, V(20).Lane(r))
				a.Op("ADD %s, %s, %s", stride, tmp, tmp)
			}
			a.W(FMUL(0, 0, 20))
			a.Op("VST1.P [%s], 16(%s)", V(0).S4(), dst)
		} else {
			hsum(a, 0)
			a.Op("FMOVS (%s), F20", k)
			a.Op("FMULS F20, F0, F0")
			a.Op("FMOVS.P F0, 4(%s)", dst)
		}
		a.Op("MOVD $%d, %s", R4, tmp)
		a.Op("MUL %s, %s, %s", stride, tmp, tmp)
		a.Op("ADD %s, %s, %s", tmp, k, k)
		a.Op("SUB $%d, %s, %s", R4, rows, rows)
		a.Op("B %s", loop)
		a.Label(next)
	}
	a.Op("RET")
}

// genBlendRowsI8: the columns in chunks of 32, 16, 8 or 4 held in V0–V7
// while every row streams past (its weight times its scale broadcast into
// V31), the chunk's bytes loaded into V24, V25 and widened through V26,
// V27 into V16–V23; the last d%4 columns one at a time with scalar FMAs.
func genBlendRowsI8(a *Asm) {
	acc, d, w, rows, v, stride := R(0), R(1), R(2), R(3), R(4), R(5)
	a.Op("MOVD acc_base+0(FP), %s", acc)
	a.Op("MOVD acc_len+8(FP), %s", d)
	a.Op("MOVD w_base+24(FP), %s", w)
	a.Op("MOVD w_len+32(FP), %s", rows)
	a.Op("MOVD v_base+48(FP), %s", v)
	a.Op("MOVD stride+72(FP), %s", stride)
	wp, row, r, p, col := R(6), R(7), R(8), R(9), R(10)
	a.Op("MOVD $4, %s", col) // the byte of each row the chunk starts at
	weight := func() {
		a.Op("FMOVS.P 4(%s), F30", wp)
		a.Op("FMOVS (%s), F29", row)
		a.Op("FMULS F29, F30, F30")
		a.Op("VDUP %s, %s", V(30).Lane(0), V(31).S4())
	}
	for _, C := range []int{8, 4, 2, 1} {
		chunk, next := a.NewLabel("chunk"), a.NewLabel("next")
		a.Label(chunk)
		a.Op("CMP $%d, %s", 4*C, d)
		a.Op("BLT %s", next)
		a.Op("VLD1 (%s), %s", acc, list(0, min(4, C)))
		if C > 4 {
			a.Op("ADD $64, %s, %s", acc, p)
			a.Op("VLD1 (%s), %s", p, list(4, C-4))
		}
		a.Op("MOVD %s, %s", w, wp)
		a.Op("MOVD %s, %s", v, row)
		a.Op("MOVD %s, %s", rows, r)
		rowLoop, store := a.NewLabel("row"), a.NewLabel("store")
		a.Label(rowLoop)
		a.Op("CBZ %s, %s", r, store)
		weight()
		a.Op("ADD %s, %s, %s", col, row, p)
		switch C {
		case 8:
			a.Op("VLD1 (%s), [%s, %s]", p, V(24).B16(), V(25).B16())
			widen16(a, 16, 24, 26)
			widen16(a, 20, 25, 26)
		case 4:
			a.Op("VLD1 (%s), [%s]", p, V(24).B16())
			widen16(a, 16, 24, 26)
		case 2:
			a.Op("VLD1 (%s), [%s]", p, V(24).B8())
			widen8(a, 16, 24)
		case 1:
			a.Op("VLD1 (%s), %s", p, V(24).Lane(0))
			a.W(SXTL8H(24, 24))
			a.W(SXTL4S(16, 24))
			a.W(SCVTF4S(16, 16))
		}
		for i := range C {
			a.Op("VFMLA %s, %s, %s", V(31).S4(), V(16+i).S4(), V(i).S4())
		}
		a.Op("ADD %s, %s, %s", stride, row, row)
		a.Op("SUB $1, %s, %s", r, r)
		a.Op("B %s", rowLoop)
		a.Label(store)
		a.Op("VST1.P %s, %d(%s)", list(0, min(4, C)), 16*min(4, C), acc)
		if C > 4 {
			a.Op("VST1.P %s, %d(%s)", list(4, C-4), 16*(C-4), acc)
		}
		a.Op("ADD $%d, %s, %s", 4*C, col, col)
		a.Op("SUB $%d, %s, %s", 4*C, d, d)
		a.Op("B %s", chunk)
		a.Label(next)
	}
	// d < 4 columns left: one column at a time.
	colLoop, colRow, colStore, done := a.NewLabel("col"), a.NewLabel("colrow"), a.NewLabel("colstore"), a.NewLabel("done")
	a.Label(colLoop)
	a.Op("CBZ %s, %s", d, done)
	a.Op("FMOVS (%s), F0", acc)
	a.Op("MOVD %s, %s", w, wp)
	a.Op("MOVD %s, %s", v, row)
	a.Op("MOVD %s, %s", rows, r)
	a.Label(colRow)
	a.Op("CBZ %s, %s", r, colStore)
	a.Op("FMOVS.P 4(%s), F1", wp)
	a.Op("FMOVS (%s), F3", row)
	a.Op("FMULS F3, F1, F1")
	a.Op("MOVB (%s)(%s), %s", row, col, p)
	a.Op("SCVTFWS %s, F2", p)
	a.Op("FMADDS F2, F0, F1, F0") // F0 += F1*F2
	a.Op("ADD %s, %s, %s", stride, row, row)
	a.Op("SUB $1, %s, %s", r, r)
	a.Op("B %s", colRow)
	a.Label(colStore)
	a.Op("FMOVS.P F0, 4(%s)", acc)
	a.Op("ADD $1, %s, %s", col, col)
	a.Op("SUB $1, %s, %s", d, d)
	a.Op("B %s", colLoop)
	a.Label(done)
	a.Op("RET")
}

func init() { neon["hadamardRows"] = genHadamardRows }

// genHadamardRows rotates each row of d floats of x (d a multiple of 16, its
// block b = d&-d at least 16) by H_b/√b in blocks of b, f being 1/√b, in the
// twin's order of spans: spans 1 and 2 inside each vector (REV64 and EXT #8,
// then an FMA with the signs ±1 of neonHadamardSigns, which rounds as the
// twin's sum or difference does), spans of 4 floats to b/2 between vectors
// (FADD, FSUB), then the product with f.
func genHadamardRows(a *Asm) {
	x, n, d, rowBytes, blk := R(0), R(1), R(2), R(3), R(4)
	p, end, span, i, r, rend, q := R(5), R(6), R(7), R(8), R(9), R(10), R(11)
	a.Op("MOVD x_base+0(FP), %s", x)
	a.Op("MOVD x_len+8(FP), %s", n)
	a.Op("MOVD d+24(FP), %s", d)
	a.Op("FMOVS f+32(FP), F31")
	a.Op("VDUP %s, %s", V(31).Lane(0), V(31).S4())
	a.Op("MOVD $·neonHadamardSigns<>(SB), %s", p)
	a.Op("VLD1 (%s), %s", p, list(28, 2)) // V28: span 1's signs, V29: span 2's
	a.Op("LSL $2, %s, %s", d, rowBytes)
	a.Op("NEG %s, %s", d, blk)
	a.Op("AND %s, %s, %s", d, blk, blk)
	a.Op("LSL $2, %s, %s", blk, blk)
	row, done := a.NewLabel("row"), a.NewLabel("done")
	a.Label(row)
	a.Op("CMP %s, %s", d, n)
	a.Op("BLT %s", done)
	// Spans 1 and 2, inside each vector.
	a.Op("MOVD %s, %s", x, p)
	a.Op("ADD %s, %s, %s", rowBytes, x, end)
	inner := a.NewLabel("inner")
	a.Label(inner)
	a.Op("VLD1 (%s), [%s]", p, V(0).S4())
	a.Op("VREV64 %s, %s", V(0).S4(), V(1).S4())
	a.Op("VFMLA %s, %s, %s", V(28).S4(), V(0).S4(), V(1).S4()) // V1 += V0·signs
	a.Op("VEXT $8, %s, %s, %s", V(1).B16(), V(1).B16(), V(2).B16())
	a.Op("VFMLA %s, %s, %s", V(29).S4(), V(1).S4(), V(2).S4())
	a.Op("VST1.P [%s], 16(%s)", V(2).S4(), p)
	a.Op("CMP %s, %s", end, p)
	a.Op("BLT %s", inner)
	// Spans of 4 floats and up to b/2, between vectors.
	spanLoop, pairs, pair, scale := a.NewLabel("span"), a.NewLabel("pairs"), a.NewLabel("pair"), a.NewLabel("scale")
	a.Op("MOVD $16, %s", span)
	a.Label(spanLoop)
	a.Op("CMP %s, %s", blk, span)
	a.Op("BGE %s", scale)
	a.Op("MOVD ZR, %s", i)
	a.Label(pairs)
	a.Op("ADD %s, %s, %s", i, x, r)
	a.Op("ADD %s, %s, %s", span, r, rend)
	a.Label(pair)
	a.Op("ADD %s, %s, %s", span, r, q)
	a.Op("VLD1 (%s), [%s]", r, V(0).S4())
	a.Op("VLD1 (%s), [%s]", q, V(1).S4())
	a.W(FADD(2, 0, 1))
	a.W(FSUB(3, 0, 1))
	a.Op("VST1.P [%s], 16(%s)", V(2).S4(), r)
	a.Op("VST1 [%s], (%s)", V(3).S4(), q)
	a.Op("CMP %s, %s", rend, r)
	a.Op("BLT %s", pair)
	a.Op("ADD %s<<1, %s, %s", span, i, i)
	a.Op("CMP %s, %s", rowBytes, i)
	a.Op("BLT %s", pairs)
	a.Op("LSL $1, %s, %s", span, span)
	a.Op("B %s", spanLoop)
	// The product with f.
	a.Label(scale)
	a.Op("MOVD %s, %s", x, p)
	mul := a.NewLabel("mul")
	a.Label(mul)
	a.Op("VLD1 (%s), [%s]", p, V(0).S4())
	a.W(FMUL(0, 0, 31))
	a.Op("VST1.P [%s], 16(%s)", V(0).S4(), p)
	a.Op("CMP %s, %s", end, p)
	a.Op("BLT %s", mul)
	a.Op("ADD %s, %s, %s", rowBytes, x, x)
	a.Op("SUB %s, %s, %s", d, n, n)
	a.Op("B %s", row)
	a.Label(done)
	a.Op("RET")
}

func init() { neon["widenRowsI8"] = genWidenRowsI8 }

// genWidenRowsI8 dequantises len(dst)/d int8 rows of src into dst, packed:
// each row's scale broadcast into V31, its elements sixteen at a time (into
// V24, widened through V26, V27 into V16–V19), then four at a time, then
// one at a time, each element times the scale (the twin's one rounding).
func genWidenRowsI8(a *Asm) {
	dst, n, src, stride, d := R(0), R(1), R(2), R(3), R(4)
	p, o, c, t := R(5), R(6), R(7), R(8)
	a.Op("MOVD dst_base+0(FP), %s", dst)
	a.Op("MOVD dst_len+8(FP), %s", n)
	a.Op("MOVD src_base+24(FP), %s", src)
	a.Op("MOVD stride+48(FP), %s", stride)
	a.Op("MOVD d+56(FP), %s", d)
	row, loop16, loop4, scalar, next, done := a.NewLabel("row"), a.NewLabel("l16"), a.NewLabel("l4"), a.NewLabel("one"), a.NewLabel("next"), a.NewLabel("done")
	a.Op("CBZ %s, %s", d, done)
	a.Label(row)
	a.Op("CMP %s, %s", d, n)
	a.Op("BLT %s", done)
	a.Op("FMOVS (%s), F31", src)
	a.Op("VDUP %s, %s", V(31).Lane(0), V(31).S4())
	a.Op("ADD $4, %s, %s", src, p)
	a.Op("MOVD %s, %s", dst, o)
	a.Op("MOVD %s, %s", d, c)
	a.Label(loop16)
	a.Op("CMP $16, %s", c)
	a.Op("BLT %s", loop4)
	a.Op("VLD1.P 16(%s), [%s]", p, V(24).B16())
	widen16(a, 16, 24, 26)
	for i := range V(4) {
		a.W(FMUL(16+i, 16+i, 31))
	}
	a.Op("VST1.P %s, 64(%s)", list(16, 4), o)
	a.Op("SUB $16, %s, %s", c, c)
	a.Op("B %s", loop16)
	a.Label(loop4)
	a.Op("CMP $4, %s", c)
	a.Op("BLT %s", scalar)
	a.Op("VLD1 (%s), %s", p, V(24).Lane(0))
	a.Op("ADD $4, %s, %s", p, p)
	a.W(SXTL8H(24, 24))
	a.W(SXTL4S(16, 24))
	a.W(SCVTF4S(16, 16))
	a.W(FMUL(16, 16, 31))
	a.Op("VST1.P [%s], 16(%s)", V(16).S4(), o)
	a.Op("SUB $4, %s, %s", c, c)
	a.Op("B %s", loop4)
	a.Label(scalar)
	a.Op("CBZ %s, %s", c, next)
	a.Op("MOVB.P 1(%s), %s", p, t)
	a.Op("SCVTFWS %s, F0", t)
	a.Op("FMULS F31, F0, F0")
	a.Op("FMOVS.P F0, 4(%s)", o)
	a.Op("SUB $1, %s, %s", c, c)
	a.Op("B %s", scalar)
	a.Label(next)
	a.Op("ADD %s, %s, %s", stride, src, src)
	a.Op("ADD %s<<2, %s, %s", d, dst, dst)
	a.Op("SUB %s, %s, %s", d, n, n)
	a.Op("B %s", row)
	a.Label(done)
	a.Op("RET")
}
