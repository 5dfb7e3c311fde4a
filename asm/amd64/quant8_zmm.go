package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// What an int8 cache's Append runs on avx512: the row quantiser and the
// rotation of rows, both the bits of their generic twins.

func init() {
	avx512["narrowI8"] = genNarrowI8
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
	for span := 1; span < lanes; span *= 2 {
		y := vec()
		switch {
		case span == 1:
			VPERMILPS(U8(0xb1), z, y)
		case span == 2:
			VPERMILPS(U8(0x4e), z, y)
		case span == 4 && lanes == 8:
			VPERM2F128(U8(0x01), z, z, y)
		case span == 4:
			VSHUFF32X4(U8(0xb1), z, z, y)
		case span == 8:
			VSHUFF64X2(U8(0x4e), z, z, y)
		}
		VFMADD132PS(signsZ(span), y, z)
	}
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
// pass, then the scale m/127 and, in a second pass, each element times
// 127/m in float64 (VCVTPS2PD, VMULPD) rounded to the nearest integer, ties
// to even (VCVTPD2DQ under the default rounding mode) and narrowed
// (VPMOVDB): the twin's bits. A row of zeros, or one that is not finite,
// goes through the same pass with 0 for 127/m, which makes every element 0
// (a NaN's integer 0x80000000 narrows to 0).
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
	for _, h := range []struct {
		v  VecVirtual
		op func(a, b, c Op)
	}{{mx, func(a, b, c Op) { VMAXPS(a, b, c) }}, {nz, func(a, b, c Op) { VADDPS(a, b, c) }}} {
		y := YMM()
		VEXTRACTF64X4(U8(1), h.v, y)
		h.op(y, h.v.AsY(), h.v.AsY())
		x := XMM()
		VEXTRACTF128(U8(1), h.v.AsY(), x)
		h.op(x, h.v.AsX(), h.v.AsX())
		t := XMM()
		VMOVHLPS(h.v.AsX(), t, t)
		h.op(t, h.v.AsX(), h.v.AsX())
		VMOVSHDUP(h.v.AsX(), t)
		h.op(t, h.v.AsX(), h.v.AsX())
	}
	m, inv, s := mx.AsX(), XMM(), XMM()
	VXORPD(inv, inv, inv) // 127/m: 0 unless m is finite and not 0
	VUCOMISS(nz.AsX(), nz.AsX())
	JP(LabelRef("nq_nan"))
	VXORPS(s, s, s)
	VUCOMISS(s, m)
	JE(LabelRef("nq_scale")) // m = 0: s = 0
	VDIVSS(vecF("f127", 127), m, s)
	md := XMM()
	VCVTSS2SD(m, md, md)
	VMOVSD(vec64("d127", math.Float64bits(127)), inv)
	VDIVSD(md, inv, inv)
	JMP(LabelRef("nq_scale"))
	Label("nq_nan")
	VMOVSS(vec32("qnan", 0x7fc00000), s)
	Label("nq_scale")
	VMOVSS(s, Mem{Base: dst})
	invz := ZMM()
	VBROADCASTSD(inv, invz)

	XORQ(i, i)
	quant := func(mask OpmaskVirtual) {
		v := loadZ(Mem{Base: src, Index: i, Scale: 4}, maskOp(mask))
		lo, hi := ZMM(), ZMM()
		VCVTPS2PD(v.AsY(), lo)
		yh := YMM()
		VEXTRACTF64X4(U8(1), v, yh)
		VCVTPS2PD(yh, hi)
		VMULPD(invz, lo, lo)
		VMULPD(invz, hi, hi)
		il, ih := YMM(), YMM()
		VCVTPD2DQ(lo, il)
		VCVTPD2DQ(hi, ih)
		q := ZMM()
		VINSERTI64X4(U8(1), ih, il.AsZ(), q)
		out := Mem{Base: dst, Index: i, Scale: 1, Disp: 4}
		if mask == nil {
			VPMOVDB(q, out)
		} else {
			VPMOVDB(q, mask, out)
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
