package main

// The widening kernels: a run of 16-bit elements to float32, for the
// block kernels, which take float32 rows. Each element widens as the row
// kernels widen it (rows16.go): FCVTL for binary16, exact and with a NaN
// quieted as f16to32 quiets it; SHLL #16 for bfloat16, a plain shift
// that leaves every bit where bf16to32 puts it, a signalling NaN
// included.

func init() {
	neon["widenF16"] = func(a *Asm) { genWiden(a, f16Rows) }
	neon["widenBF16"] = func(a *Asm) { genWiden(a, bf16Rows) }
}

// genWiden: dst[i] = widen(src[i]) for i < len(dst), 32 elements a step
// (four registers of halfwords from V16 widened into V0–V7), then four,
// then one halfword at a time, so no byte past either slice is touched.
func genWiden(a *Asm, e rowElems) {
	dst, n, src, cnt := R(0), R(1), R(2), R(3)
	a.Op("MOVD dst_base+0(FP), %s", dst)
	a.Op("MOVD dst_len+8(FP), %s", n)
	a.Op("MOVD src_base+24(FP), %s", src)
	stream(a, n, cnt, 32, func() {
		e.load(a, src, true, 0, 8, 16)
		a.Op("VST1.P %s, 64(%s)", list(0, 4), dst)
		a.Op("VST1.P %s, 64(%s)", list(4, 4), dst)
	}, func() {
		e.load(a, src, true, 0, 1, 16)
		a.Op("VST1.P [%s], 16(%s)", V(0).S4(), dst)
	}, nil, func() {
		a.Op("VLD1.P 2(%s), %s", src, V(16).HLane(0))
		a.W(e.lo(0, 16))
		a.Op("FMOVS.P F0, 4(%s)", dst)
	})
	a.Op("RET")
}
