package main

func init() {
	neon["dot"] = genDot
	neon["scoreRows"] = func(a *Asm) { genScoreRows(a, f32Rows) }
}

// genDot: eight accumulators V0–V7 over blocks of 32 floats (NEON FMLA has
// a 4-cycle latency and two or more pipes), then whole vectors, then a
// scalar tail into F8.
func genDot(a *Asm) {
	x, y, n, cnt := R(0), R(1), R(2), R(3)
	a.Op("MOVD x_base+0(FP), %s", x)
	a.Op("MOVD y_base+24(FP), %s", y)
	a.Op("MOVD x_len+8(FP), %s", n)
	acc := regs(0, 8)
	zero(a, append(acc, 8)...)
	stream(a, n, cnt, 32, func() {
		a.Op("VLD1.P 64(%s), %s", x, list(16, 4))
		a.Op("VLD1.P 64(%s), %s", x, list(20, 4))
		a.Op("VLD1.P 64(%s), %s", y, list(24, 4))
		a.Op("VLD1.P 64(%s), %s", y, list(28, 4))
		for i := range 8 {
			a.Op("VFMLA %s, %s, %s", V(16+i).S4(), V(24+i).S4(), acc[i].S4())
		}
	}, func() {
		a.Op("VLD1.P 16(%s), [%s]", x, V(16).S4())
		a.Op("VLD1.P 16(%s), [%s]", y, V(24).S4())
		a.Op("VFMLA %s, %s, %s", V(16).S4(), V(24).S4(), acc[0].S4())
	}, nil, func() {
		a.Op("FMOVS.P 4(%s), F16", x)
		a.Op("FMOVS.P 4(%s), F17", y)
		a.Op("FMADDS F17, F8, F16, F8") // F8 += F16*F17
	})
	addTree(a, acc)
	hsum(a, 0)
	a.Op("FADDS F8, F0, F0")
	a.Op("FMOVS F0, ret+48(FP)")
	a.Op("RET")
}

// genScoreRows: blocks of four rows share each 8-float chunk of q, held in
// V16–V17, with two accumulators per row (V0–V7): one q load serves eight
// FMAs. A last partial vector of q (d%4 lanes, zero-padded) is kept in V18
// and each row's tail is loaded lane by lane, so nothing past a row is
// read. Four row sums leave through one pairwise reduction and one store;
// leftover rows go one at a time. e says how the rows' elements become
// floats (rows16.go), which changes no sum; 16-bit rows are loaded into
// V28–V31, one a row, and widened into V20–V27.
func genScoreRows(a *Asm, e rowElems) {
	dst, rows, k, stride, q, d := R(0), R(1), R(2), R(3), R(4), R(5)
	a.Op("MOVD dst_base+0(FP), %s", dst)
	a.Op("MOVD dst_len+8(FP), %s", rows)
	a.Op("MOVD k_base+24(FP), %s", k)
	a.Op("MOVD stride+48(FP), %s", stride)
	a.Op("MOVD q_base+56(FP), %s", q)
	a.Op("MOVD q_len+64(FP), %s", d)
	a.Op("LSL $%d, %s, %s", e.shift, stride, stride)
	rem, tmp, cnt, qp := R(6), R(7), R(8), R(9)
	a.Op("AND $3, %s, %s", d, rem)
	// V18: the last d%4 elements of q, zero-padded.
	zero(a, 18)
	noqt := a.NewLabel("noqt")
	a.Op("CBZ %s, %s", rem, noqt)
	a.Op("SUB %s, %s, %s", rem, d, tmp)
	a.Op("ADD %s<<2, %s, %s", tmp, q, tmp)
	laneLoad(a, 18, tmp, rem, cnt)
	a.Label(noqt)

	rp := []R{10, 11, 12, 13} // row pointers of a block
	for _, R4 := range []int{4, 1} {
		loop, next := a.NewLabel("rows"), a.NewLabel("next")
		a.Label(loop)
		a.Op("CMP $%d, %s", R4, rows)
		a.Op("BLT %s", next)
		a.Op("MOVD %s, %s", k, rp[0])
		for r := 1; r < R4; r++ {
			a.Op("ADD %s, %s, %s", stride, rp[r-1], rp[r])
		}
		acc := regs(0, 2*R4)
		zero(a, acc...)
		a.Op("MOVD %s, %s", q, qp)
		// Chunks of 8.
		c8, c8loop, c4 := a.NewLabel("c8"), a.NewLabel("c8loop"), a.NewLabel("c4")
		a.Label(c8)
		a.Op("LSR $3, %s, %s", d, cnt)
		a.Op("CBZ %s, %s", cnt, c4)
		a.Label(c8loop)
		a.Op("VLD1.P 32(%s), %s", qp, list(16, 2))
		for r := range R4 {
			e.load(a, rp[r], true, 20+2*V(r), 2, 28+V(r))
		}
		for r := range R4 {
			a.Op("VFMLA %s, %s, %s", V(16).S4(), V(20+2*r).S4(), acc[2*r].S4())
			a.Op("VFMLA %s, %s, %s", V(17).S4(), V(21+2*r).S4(), acc[2*r+1].S4())
		}
		a.Op("SUB $1, %s, %s", cnt, cnt)
		a.Op("CBNZ %s, %s", cnt, c8loop)
		// One more whole vector if d%8 >= 4.
		tail := a.NewLabel("tail")
		a.Label(c4)
		a.Op("TBZ $2, %s, %s", d, tail)
		a.Op("VLD1.P 16(%s), [%s]", qp, V(16).S4())
		for r := range R4 {
			e.load(a, rp[r], true, 20+2*V(r), 1, 28+V(r))
			a.Op("VFMLA %s, %s, %s", V(16).S4(), V(20+2*r).S4(), acc[2*r].S4())
		}
		// The d%4 tail of each row, against V18.
		reduce := a.NewLabel("reduce")
		a.Label(tail)
		a.Op("CBZ %s, %s", rem, reduce)
		for r := range R4 {
			e.part(a, 20, rp[r], rem, tmp, 28)
			a.Op("VFMLA %s, %s, %s", V(18).S4(), V(20).S4(), acc[2*r].S4())
		}
		a.Label(reduce)
		for r := range R4 {
			a.W(FADD(acc[2*r], acc[2*r], acc[2*r+1]))
		}
		if R4 == 4 {
			a.W(FADDP(0, 0, 2))
			a.W(FADDP(4, 4, 6))
			a.W(FADDP(0, 0, 4)) // lanes: row 0, 1, 2, 3
			a.Op("VST1.P [%s], 16(%s)", V(0).S4(), dst)
		} else {
			hsum(a, 0)
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
