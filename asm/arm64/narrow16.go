package main

// The narrowing kernels of the KV cache: float32 rows rounded to binary16
// or bfloat16, bit for bit as f32ToF16 and f32ToBF16 round them.
//
// binary16 is FCVTN and FCVTN2 (see emit.go): under Go's FPCR they round
// to nearest even, overflow to ±Inf, keep binary16 subnormals and quiet a
// NaN keeping the top ten bits of its payload, which is f32ToF16's rule.
//
// bfloat16 is the integer rounding of f32ToBF16, (x + 0x7fff + (x>>16 &
// 1)) >> 16 on the bits, a carry stepping the exponent up to Inf, with a
// NaN lane (FCMEQ of x with itself false) replaced by x with the quiet
// bit of its top half set; UZP2 then takes the top halfword of each lane.
// BFCVTN would need FEAT_BF16, which not every ARMv8 core has.

func init() {
	neon["narrowF16"] = genNarrowF16
	neon["narrowBF16"] = genNarrowBF16
}

// narrowParams loads dst's base and src's base and length.
func narrowParams(a *Asm) (dst, src, n R) {
	dst, src, n = R(0), R(1), R(2)
	a.Op("MOVD dst_base+0(FP), %s", dst)
	a.Op("MOVD src_base+24(FP), %s", src)
	a.Op("MOVD src_len+32(FP), %s", n)
	return dst, src, n
}

// genNarrowF16: 32 elements a step (V0–V7 narrowed into V16–V19), then
// four, then one float at a time, so no byte past either slice is
// touched.
func genNarrowF16(a *Asm) {
	dst, src, n := narrowParams(a)
	cnt := R(3)
	stream(a, n, cnt, 32, func() {
		a.Op("VLD1.P 64(%s), %s", src, list(0, 4))
		a.Op("VLD1.P 64(%s), %s", src, list(4, 4))
		for i := range V(4) {
			a.W(FCVTN(16+i, 2*i))
			a.W(FCVTN2(16+i, 2*i+1))
		}
		a.Op("VST1.P %s, 64(%s)", listH8(16, 4), dst)
	}, func() {
		a.Op("VLD1.P 16(%s), [%s]", src, V(0).S4())
		a.W(FCVTN(16, 0))
		a.Op("VST1.P [%s], 8(%s)", V(16).H4(), dst)
	}, nil, func() {
		a.Op("FMOVS.P 4(%s), F0", src)
		a.W(FCVTN(16, 0))
		a.Op("VST1.P %s, 2(%s)", V(16).HLane(0), dst)
	})
	a.Op("RET")
}

// The constants of the bfloat16 rounding, each in every lane.
const (
	bf16One, bf16Bias, bf16Quiet V = 28, 29, 30
)

// roundBF16 leaves in m the four floats of x rounded to bfloat16, each in
// the top half of its lane; x and t are clobbered.
func roundBF16(a *Asm, m, x, t V) {
	a.Op("VUSHR $16, %s, %s", x.S4(), t.S4())
	a.Op("VAND %s, %s, %s", bf16One.B16(), t.B16(), t.B16())
	a.Op("VADD %s, %s, %s", bf16Bias.S4(), t.S4(), t.S4())
	a.Op("VADD %s, %s, %s", x.S4(), t.S4(), t.S4()) // rounded
	a.W(FCMEQ(m, x, x))                             // all ones but where x is NaN
	a.Op("VORR %s, %s, %s", bf16Quiet.B16(), x.B16(), x.B16())
	a.Op("VBSL %s, %s, %s", x.B16(), t.B16(), m.B16()) // m ? rounded : quieted
}

// genNarrowBF16: 32 elements a step (V0–V7 rounded into V16–V23 through
// V8–V15, packed into V24–V27), then four, then one float at a time, so
// no byte past either slice is touched.
func genNarrowBF16(a *Asm) {
	dst, src, n := narrowParams(a)
	cnt, tmp := R(3), R(4)
	for _, c := range []struct {
		v    V
		bits uint32
	}{{bf16One, 1}, {bf16Bias, 0x7fff}, {bf16Quiet, 0x00400000}} {
		a.Op("MOVD $0x%x, %s", c.bits, tmp)
		a.Op("VDUP %s, %s", tmp, c.v.S4())
	}
	stream(a, n, cnt, 32, func() {
		a.Op("VLD1.P 64(%s), %s", src, list(0, 4))
		a.Op("VLD1.P 64(%s), %s", src, list(4, 4))
		for i := range V(8) {
			roundBF16(a, 16+i, i, 8+i)
		}
		for i := range V(4) {
			a.Op("VUZP2 %s, %s, %s", V(17+2*i).H8(), V(16+2*i).H8(), V(24+i).H8())
		}
		a.Op("VST1.P %s, 64(%s)", listH8(24, 4), dst)
	}, func() {
		a.Op("VLD1.P 16(%s), [%s]", src, V(0).S4())
		roundBF16(a, 16, 0, 8)
		a.Op("VUZP2 %s, %s, %s", V(16).H8(), V(16).H8(), V(24).H8())
		a.Op("VST1.P [%s], 8(%s)", V(24).H4(), dst)
	}, nil, func() {
		a.Op("FMOVS.P 4(%s), F0", src)
		roundBF16(a, 16, 0, 8)
		a.Op("VST1.P %s, 2(%s)", V(16).HLane(1), dst) // the top half of lane 0
	})
	a.Op("RET")
}
