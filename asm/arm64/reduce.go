package main

func init() {
	neon["max"] = genMax
	neon["scale"] = genScale
}

// genMax: four FMAX accumulators from -Inf. FMAX returns NaN when either
// operand is NaN (unlike FMAXNM), so NaN propagates with no extra work.
func genMax(a *Asm) {
	x, n, cnt, tmp := R(0), R(1), R(2), R(3)
	a.Op("MOVD x_base+0(FP), %s", x)
	a.Op("MOVD x_len+8(FP), %s", n)
	a.Op("MOVW $0xff800000, %s", tmp)
	for i := range 4 {
		a.Op("VDUP %s, %s", tmp, V(i).S4())
	}
	stream(a, n, cnt, 16, func() {
		a.Op("VLD1.P 64(%s), %s", x, list(16, 4))
		for i := range 4 {
			a.W(FMAX(V(i), V(i), V(16+i)))
		}
	}, func() {
		a.Op("VLD1.P 16(%s), [%s]", x, V(16).S4())
		a.W(FMAX(0, 0, 16))
	}, func() {
		a.W(FMAX(0, 0, 1))
		a.W(FMAX(2, 2, 3))
		a.W(FMAX(0, 0, 2))
		a.W(FMAXP(0, 0, 0))
		a.W(FMAXPS(0, 0))
	}, func() {
		a.Op("FMOVS.P 4(%s), F1", x)
		a.Op("FMAXS F1, F0, F0")
	})
	a.Op("FMOVS F0, ret+24(FP)")
	a.Op("RET")
}

// genScale: x *= s.
func genScale(a *Asm) {
	x, n, cnt, xw := R(0), R(1), R(2), R(3)
	a.Op("FMOVS s+0(FP), F31")
	a.Op("VDUP %s, %s", V(31).Lane(0), V(30).S4())
	a.Op("MOVD x_base+8(FP), %s", x)
	a.Op("MOVD x_len+16(FP), %s", n)
	stream(a, n, cnt, 16, func() {
		a.Op("MOVD %s, %s", x, xw)
		a.Op("VLD1.P 64(%s), %s", x, list(0, 4))
		for i := range 4 {
			a.W(FMUL(V(i), V(i), 30))
		}
		a.Op("VST1 %s, (%s)", list(0, 4), xw)
	}, func() {
		a.Op("VLD1 (%s), [%s]", x, V(0).S4())
		a.W(FMUL(0, 0, 30))
		a.Op("VST1.P [%s], 16(%s)", V(0).S4(), x)
	}, nil, func() {
		a.Op("FMOVS (%s), F0", x)
		a.Op("FMULS F31, F0, F0")
		a.Op("FMOVS.P F0, 4(%s)", x)
	})
	a.Op("RET")
}
