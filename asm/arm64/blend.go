package main

func init() {
	neon["axpy"] = genAxpy
	neon["blendRows"] = func(a *Asm) { genBlendRows(a, f32Rows) }
}

// genAxpy: y += alpha*x, 16 floats per iteration, then whole vectors, then
// scalars.
func genAxpy(a *Asm) {
	x, y, n, cnt, yw := R(0), R(1), R(2), R(3), R(4)
	a.Op("FMOVS alpha+0(FP), F31")
	a.Op("VDUP %s, %s", V(31).Lane(0), V(30).S4())
	a.Op("MOVD x_base+8(FP), %s", x)
	a.Op("MOVD y_base+32(FP), %s", y)
	a.Op("MOVD x_len+16(FP), %s", n)
	stream(a, n, cnt, 16, func() {
		a.Op("VLD1.P 64(%s), %s", x, list(0, 4))
		a.Op("MOVD %s, %s", y, yw)
		a.Op("VLD1.P 64(%s), %s", y, list(4, 4))
		for i := range 4 {
			a.Op("VFMLA %s, %s, %s", V(30).S4(), V(i).S4(), V(4+i).S4())
		}
		a.Op("VST1 %s, (%s)", list(4, 4), yw)
	}, func() {
		a.Op("VLD1.P 16(%s), [%s]", x, V(0).S4())
		a.Op("VLD1 (%s), [%s]", y, V(4).S4())
		a.Op("VFMLA %s, %s, %s", V(30).S4(), V(0).S4(), V(4).S4())
		a.Op("VST1.P [%s], 16(%s)", V(4).S4(), y)
	}, nil, func() {
		a.Op("FMOVS.P 4(%s), F0", x)
		a.Op("FMOVS (%s), F1", y)
		a.Op("FMADDS F31, F1, F0, F1") // F1 += F0*alpha
		a.Op("FMOVS.P F1, 4(%s)", y)
	})
	a.Op("RET")
}

// genBlendRows: the columns are walked in chunks of 8, 4, 2 or 1 vectors
// held in V0–V7 while every row streams past (w[i] broadcast into V31), so
// acc is loaded and stored once per chunk; the last d%4 columns are done
// one column at a time with scalar FMAs. e says how the rows' elements
// become floats (rows16.go), which changes no sum; 16-bit rows are loaded
// into V24–V27 and widened into V16–V23.
func genBlendRows(a *Asm, e rowElems) {
	acc, d, w, rows, v, stride := R(0), R(1), R(2), R(3), R(4), R(5)
	a.Op("MOVD acc_base+0(FP), %s", acc)
	a.Op("MOVD acc_len+8(FP), %s", d)
	a.Op("MOVD w_base+24(FP), %s", w)
	a.Op("MOVD w_len+32(FP), %s", rows)
	a.Op("MOVD v_base+48(FP), %s", v)
	a.Op("MOVD stride+72(FP), %s", stride)
	a.Op("LSL $%d, %s, %s", e.shift, stride, stride)
	wp, row, r, p := R(6), R(7), R(8), R(9)
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
		a.Op("VLD1R.P 4(%s), [%s]", wp, V(31).S4())
		e.loadAt(a, row, p, 16, C, 24)
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
		a.Op("ADD $%d, %s, %s", 4*C<<e.shift, v, v)
		a.Op("SUB $%d, %s, %s", 4*C, d, d)
		a.Op("B %s", chunk)
		a.Label(next)
	}
	// d < 4 columns left: one column at a time.
	col, colRow, colStore, done := a.NewLabel("col"), a.NewLabel("colrow"), a.NewLabel("colstore"), a.NewLabel("done")
	a.Label(col)
	a.Op("CBZ %s, %s", d, done)
	a.Op("FMOVS (%s), F0", acc)
	a.Op("MOVD %s, %s", w, wp)
	a.Op("MOVD %s, %s", v, row)
	a.Op("MOVD %s, %s", rows, r)
	a.Label(colRow)
	a.Op("CBZ %s, %s", r, colStore)
	a.Op("FMOVS.P 4(%s), F1", wp)
	e.one(a, 2, row)
	a.Op("FMADDS F2, F0, F1, F0") // F0 += F1*F2
	a.Op("ADD %s, %s, %s", stride, row, row)
	a.Op("SUB $1, %s, %s", r, r)
	a.Op("B %s", colRow)
	a.Label(colStore)
	a.Op("FMOVS.P F0, 4(%s)", acc)
	a.Op("ADD $%d, %s, %s", 1<<e.shift, v, v)
	a.Op("SUB $1, %s, %s", d, d)
	a.Op("B %s", col)
	a.Label(done)
	a.Op("RET")
}
