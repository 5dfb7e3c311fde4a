package main

import (
	"fmt"
	"math"
	"slices"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// What an int8 cache's Append runs on avx512: the row quantiser and the
// rotation of rows, both the bits of their generic twins.

func init() {
	avx512["narrowI8"] = genNarrowI8
	avx512["quantRowsI8"] = genQuantRowsI8
	avx512["hadamardRows"] = func() { genHadamardRows(16, "hrows") }
	avx2["hadamardRows"] = func() { genHadamardRows(8, "hry") }
}

// signsZ returns a vector of sixteen floats, +1 where lane&span is 0 and
// -1 where it is not.
func signsZ(span int) Mem {
	name := fmt.Sprintf("hsign%d", span)
	if m, ok := consts[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	for i := range 16 {
		v := float32(1)
		if i&span != 0 {
			v = -1
		}
		DATA(4*i, U32(math.Float32bits(v)))
	}
	consts[name] = m
	return m
}

// genHadamardRows rotates each row of d floats of x (d a multiple of 16,
// b = d&-d at least 16) by H_b/√b in blocks of b, f being 1/√b: the
// butterflies of spans up to a vector's lanes/2 inside each vector (a
// permutation and an FMA with ±1, which rounds as the twin's sum or
// difference does), then those of a vector's width to b/2 between
// vectors, in the twin's order of spans, then the product with f. lanes
// is 16 (avx512) or 8 (avx2); prefix names the labels.
func genHadamardRows(lanes int, prefix string) {
	vec, vb := ZMM, 64
	if lanes == 8 {
		vec, vb = YMM, 32
	}
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	d := Load(Param("d"), GP64())
	fz := vec()
	VBROADCASTSS(argAddr(Param("f")), fz)
	rowBytes, blk := GP64(), GP64() // blk: b·4 bytes
	MOVQ(d, rowBytes)
	SHLQ(U8(2), rowBytes)
	MOVQ(d, blk)
	NEGQ(blk)
	ANDQ(d, blk)
	SHLQ(U8(2), blk)

	Label(prefix + "_row")
	CMPQ(n, d)
	JB(LabelRef(prefix + "_done"))
	p, end := GP64(), GP64()
	MOVQ(x, p)
	LEAQ(Mem{Base: x, Index: rowBytes, Scale: 1}, end)
	Label(prefix + "_inner")
	z := vec()
	VMOVUPS(Mem{Base: p}, z)
	inVector(z, lanes, vec)
	VMOVUPS(z, Mem{Base: p})
	ADDQ(U8(vb), p)
	CMPQ(p, end)
	JB(LabelRef(prefix + "_inner"))

	// Spans of a vector's width and up to b/2, between vectors.
	span := GP64()
	MOVQ(U32(vb), span)
	Label(prefix + "_span")
	CMPQ(span, blk)
	JAE(LabelRef(prefix + "_scale"))
	i := GP64()
	XORQ(i, i)
	Label(prefix + "_pairs")
	r, rend := GP64(), GP64()
	LEAQ(Mem{Base: x, Index: i, Scale: 1}, r)
	LEAQ(Mem{Base: r, Index: span, Scale: 1}, rend)
	Label(prefix + "_pair")
	a, c, s := vec(), vec(), vec()
	VMOVUPS(Mem{Base: r}, a)
	VMOVUPS(Mem{Base: r, Index: span, Scale: 1}, c)
	VADDPS(c, a, s)
	VSUBPS(c, a, a)
	VMOVUPS(s, Mem{Base: r})
	VMOVUPS(a, Mem{Base: r, Index: span, Scale: 1})
	ADDQ(U8(vb), r)
	CMPQ(r, rend)
	JB(LabelRef(prefix + "_pair"))
	LEAQ(Mem{Base: i, Index: span, Scale: 2}, i)
	CMPQ(i, rowBytes)
	JB(LabelRef(prefix + "_pairs"))
	SHLQ(U8(1), span)
	JMP(LabelRef(prefix + "_span"))

	Label(prefix + "_scale")
	MOVQ(x, p)
	Label(prefix + "_mul")
	z2 := vec()
	VMULPS(Mem{Base: p}, fz, z2)
	VMOVUPS(z2, Mem{Base: p})
	ADDQ(U8(vb), p)
	CMPQ(p, end)
	JB(LabelRef(prefix + "_mul"))
	ADDQ(rowBytes, x)
	SUBQ(d, n)
	JMP(LabelRef(prefix + "_row"))
	Label(prefix + "_done")
	VZEROUPPER()
	RET()
}

// genNarrowI8 stores src as one int8 row at dst: the largest magnitude m
// and whether every element is finite (a sum of x−x, NaN otherwise) in one
// pass, then the scale m/127 and, in a second pass, each element times sc
// and 127/(m·sc) in float32 (see rowScaleInv) rounded to the nearest
// integer, ties to even (VCVTPS2DQ under the default rounding mode) and
// narrowed (VPMOVDB): the twin's bits. A row of zeros, or one that is not
// finite, goes through the same pass with 0 for 127/m, which makes every
// element 0 (a NaN's integer 0x80000000 narrows to 0).
func genNarrowI8() {
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	abs, mx, nz := ZMM(), ZMM(), ZMM()
	VBROADCASTSS(vec32("absmask", 0x7fffffff), abs)
	VBROADCASTSS(vec32("zero", 0), mx)
	VPXORD(mx, mx, nz)
	i := GP64()
	XORQ(i, i)
	acc := func(mask Op) {
		v := loadZ(Mem{Base: src, Index: i, Scale: 4}, mask)
		t := ZMM()
		VSUBPS(v, v, t)
		VADDPS(t, nz, nz)
		VANDPS(abs, v, v)
		VMAXPS(v, mx, mx)
	}
	Label("nq_max")
	rest := GP64()
	MOVQ(n, rest)
	SUBQ(i, rest)
	CMPQ(rest, U8(16))
	JB(LabelRef("nq_max_tail"))
	acc(nil)
	ADDQ(U8(16), i)
	JMP(LabelRef("nq_max"))
	Label("nq_max_tail")
	TESTQ(rest, rest)
	JZ(LabelRef("nq_reduce"))
	acc(tailK(rest))
	Label("nq_reduce")
	// Horizontal max and sum: m and the finiteness test.
	maxAndSum(mx, nz, true)
	s, sc, inv := rowScaleInv("nq", mx.AsX(), nz.AsX())
	VMOVSS(s, Mem{Base: dst})
	scz, invz := ZMM(), ZMM()
	VBROADCASTSS(sc, scz)
	VBROADCASTSS(inv, invz)

	XORQ(i, i)
	quant := func(mask OpmaskVirtual) {
		v := loadZ(Mem{Base: src, Index: i, Scale: 4}, maskOp(mask))
		VMULPS(scz, v, v)
		VMULPS(invz, v, v)
		VCVTPS2DQ(v, v)
		out := Mem{Base: dst, Index: i, Scale: 1, Disp: 4}
		if mask == nil {
			VPMOVDB(v, out)
		} else {
			VPMOVDB(v, mask, out)
		}
	}
	Label("nq_q")
	MOVQ(n, rest)
	SUBQ(i, rest)
	CMPQ(rest, U8(16))
	JB(LabelRef("nq_q_tail"))
	quant(nil)
	ADDQ(U8(16), i)
	JMP(LabelRef("nq_q"))
	Label("nq_q_tail")
	TESTQ(rest, rest)
	JZ(LabelRef("nq_done"))
	quant(tailK(rest))
	Label("nq_done")
	VZEROUPPER()
	RET()
}

// maxAndSum reduces the lanes of m to their largest in its low lane, and
// those of z to their sum, for a row quantiser's scale and its finiteness
// test: sixteen lanes (zmm) or eight.
func maxAndSum(m, z VecVirtual, zmm bool) {
	for _, h := range []struct {
		v  VecVirtual
		op func(a, b, c Op)
	}{{m, func(a, b, c Op) { VMAXPS(a, b, c) }}, {z, func(a, b, c Op) { VADDPS(a, b, c) }}} {
		if zmm {
			y := YMM()
			VEXTRACTF64X4(U8(1), h.v, y)
			h.op(y, h.v.AsY(), h.v.AsY())
		}
		x := XMM()
		VEXTRACTF128(U8(1), h.v.AsY(), x)
		h.op(x, h.v.AsX(), h.v.AsX())
		t := XMM()
		VMOVHLPS(h.v.AsX(), t, t)
		h.op(t, h.v.AsX(), h.v.AsX())
		VMOVSHDUP(h.v.AsX(), t)
		h.op(t, h.v.AsX(), h.v.AsX())
	}
}

// rowScaleInv returns, for a row of largest magnitude m (the low lane of
// m) whose finiteness sum is z, the row's scale s = m/127 (NaN if z is
// NaN, 0 if m is 0), and the factors sc and inv that each element is
// multiplied by, in that order, before it is rounded to an integer: sc =
// 2⁶⁴ below m = 2⁻⁶⁴ (where 127/m would overflow), else 1, and inv =
// 127/(m·sc), or 0 for a row of zeros or one that is not finite. Both
// products are exact in sc and round once in inv, as the twin's. p
// names the labels.
func rowScaleInv(p string, m, z Register) (s, sc, inv VecVirtual) {
	s, sc, inv = XMM(), XMM(), XMM()
	VMOVSS(vecF("f1", 1), sc)
	VXORPS(inv, inv, inv)
	VUCOMISS(z, z)
	JP(LabelRef(p + "_nan"))
	VXORPS(s, s, s)
	VUCOMISS(s, m)
	JE(LabelRef(p + "_scaled")) // m = 0: s = 0
	VDIVSS(vecF("f127", 127), m, s)
	VUCOMISS(vecF("tiny64", 0x1p-64), m)
	JAE(LabelRef(p + "_inv"))
	VMOVSS(vecF("huge64", 0x1p64), sc)
	Label(p + "_inv")
	ms := XMM()
	VMULSS(sc, m, ms)
	VMOVSS(vecF("f127", 127), inv)
	VDIVSS(ms, inv, inv)
	JMP(LabelRef(p + "_scaled"))
	Label(p + "_nan")
	VMOVSS(vec32("qnan", 0x7fc00000), s)
	Label(p + "_scaled")
	return s, sc, inv
}

// maskOp is mask as an operand, nil for none.
func maskOp(mask OpmaskVirtual) Op {
	if mask == nil {
		return nil
	}
	return mask
}

// vec64 returns a read-only 64-bit constant.
func vec64(name string, bits uint64) Mem {
	if m, ok := consts[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	DATA(0, U64(bits))
	consts[name] = m
	return m
}

// inVector emits the butterflies of genHadamardRows inside the vector x
// of lanes floats (8 or 16), spans 1 to lanes/2 in order: a permutation
// and an FMA with ±1 each, which rounds as the twin's sum or difference.
func inVector(x VecVirtual, lanes int, vec func() VecVirtual) {
	for span := 1; span < lanes; span *= 2 {
		y := vec()
		switch {
		case span == 1:
			VPERMILPS(U8(0xb1), x, y)
		case span == 2:
			VPERMILPS(U8(0x4e), x, y)
		case span == 4 && lanes == 8:
			VPERM2F128(U8(0x01), x, x, y)
		case span == 4:
			VSHUFF32X4(U8(0xb1), x, x, y)
		case span == 8:
			VSHUFF64X2(U8(0x4e), x, x, y)
		}
		VFMADD132PS(signsZ(span), y, x)
	}
}

// between emits the butterflies between the vectors of a row held in vs
// (spans of one vector to len(vs)/2, in order) and returns the registers
// that then hold the row's vectors, in order.
func between(vs []VecVirtual, vec func() VecVirtual) []VecVirtual {
	vs = slices.Clone(vs)
	for span := 1; span < len(vs); span *= 2 {
		for i := range vs {
			if i&span != 0 {
				continue
			}
			a, c, s := vs[i], vs[i+span], vec()
			VADDPS(c, a, s)
			VSUBPS(c, a, a)
			vs[i], vs[i+span] = s, a
		}
	}
	return vs
}

// genQuantRowsI8 quantises rows of d = 128 floats held in eight
// registers: rotated first unless f is 0 (the butterflies of
// genHadamardRows, inside the vectors and then between them, and the
// product with f), then narrowI8's arithmetic on the registers (the
// largest magnitude and the finiteness sum as trees, which neither order
// changes, then the float32 products rounded to nearest even): the bits
// of hadamardRows followed by narrowI8, without a pass over memory between
// them. The two loops (rotated or not) run whole rows, row r stored at
// dst[r·stride:].
func genQuantRowsI8() {
	dst := Load(Param("dst").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	fz := ZMM()
	VBROADCASTSS(argAddr(Param("f")), fz)
	z := XMM()
	VXORPS(z, z, z)
	VUCOMISS(z, fz.AsX())
	JE(LabelRef("qr_p8"))
	quantRowsLoop("qr_r8", 8, true, dst, stride, src, n, fz)
	quantRowsLoop("qr_p8", 8, false, dst, stride, src, n, fz)
	Label("qr_done")
	VZEROUPPER()
	RET()
}

// quantRowsLoop emits one loop of genQuantRowsI8: rows of nv vectors.
func quantRowsLoop(p string, nv int, rot bool, dst, stride, src, n Register, fz VecVirtual) {
	Label(p)
	CMPQ(n, U8(16*nv))
	JB(LabelRef("qr_done"))
	vs := make([]VecVirtual, nv)
	for i := range vs {
		vs[i] = ZMM()
		VMOVUPS(Mem{Base: src, Disp: 64 * i}, vs[i])
	}
	if rot {
		for _, x := range vs {
			inVector(x, 16, ZMM)
		}
		vs = between(vs, ZMM)
		for _, x := range vs {
			VMULPS(fz, x, x)
		}
	}
	// The largest magnitude and the sum of x−x, as trees.
	abs := ZMM()
	VBROADCASTSS(vec32("absmask", 0x7fffffff), abs)
	mx, nz := make([]VecVirtual, nv), make([]VecVirtual, nv)
	for i, x := range vs {
		mx[i], nz[i] = ZMM(), ZMM()
		VANDPS(abs, x, mx[i])
		VSUBPS(x, x, nz[i])
	}
	for w := nv / 2; w >= 1; w /= 2 {
		for i := range w {
			VMAXPS(mx[i+w], mx[i], mx[i])
			VADDPS(nz[i+w], nz[i], nz[i])
		}
	}
	m0, z0 := mx[0], nz[0]
	maxAndSum(m0, z0, true)
	sv, sc, inv := rowScaleInv(p, m0.AsX(), z0.AsX())
	VMOVSS(sv, Mem{Base: dst})
	scz, invz := ZMM(), ZMM()
	VBROADCASTSS(sc, scz)
	VBROADCASTSS(inv, invz)
	for i, x := range vs {
		VMULPS(scz, x, x)
		VMULPS(invz, x, x)
		VCVTPS2DQ(x, x)
		VPMOVDB(x, Mem{Base: dst, Disp: 4 + 16*i})
	}
	ADDQ(U32(64*nv), src)
	ADDQ(stride, dst)
	SUBQ(U8(16*nv), n)
	JMP(LabelRef(p))
}
