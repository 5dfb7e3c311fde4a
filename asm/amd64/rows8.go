package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The int8 cache's kernels on eight lanes (avx2): rows of a float32 scale
// and then int8 elements, eight of which a sign-extension (VPMOVSXBD) and
// a conversion make floats of; the last d%8 are inserted one at a time
// (partI8), as no load reads fewer than four bytes and a row's last bytes
// may end its slice. The scale multiplies a score's sum, or a blend's
// weight, once a row, as the avx512 kernels do.

func init() {
	avx2["scoreRowsI8"] = genScoreRowsI8Y
	avx2["blendRowsI8"] = genBlendRowsI8Y
	avx2["widenRowsI8"] = genWidenRowsI8Y
	avx2["narrowI8"] = genNarrowI8Y
}

// widenI8Y sets dst to the floats of the eight int8 elements at m.
func widenI8Y(m Mem, dst VecVirtual) {
	VPMOVSXBD(m, dst)
	VCVTDQ2PS(dst, dst)
}

// partI8 returns the floats of the n < 8 int8 elements at m, the other
// lanes zero, reading no other byte: the bytes gathered in a general
// register, then moved and widened, which takes a single vector register
// (the four-row multi-row kernels' tails have no more to spare).
func partI8(m Mem, n Register) VecVirtual {
	parts[fn]++
	done := fmt.Sprintf("%s_part%d", fn, parts[fn])
	b, t := GP64(), GP64()
	XORQ(b, b)
	for i := range 7 {
		if i > 0 {
			CMPQ(n, U8(i))
			JBE(LabelRef(done))
		}
		e := m
		e.Disp += i
		MOVBQZX(e, t)
		if i > 0 {
			SHLQ(U8(8*i), t)
		}
		ORQ(t, b)
	}
	Label(done)
	x, y := XMM(), YMM()
	MOVQ(b, x)
	VPMOVSXBD(x, y)
	VCVTDQ2PS(y, y)
	return y
}

// genScoreRowsI8Y is genScoreRowsI8 on eight lanes: blocks of eight rows
// (their sums by sums8) and then single rows, without prefetches.
func genScoreRowsI8Y() {
	dst := Load(Param("dst").Base(), GP64())
	rows := Load(Param("dst").Len(), GP64())
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	q := Load(Param("q").Base(), GP64())
	d := Load(Param("q").Len(), GP64())
	full := GP64()
	MOVQ(d, full)
	ANDQ(I32(-8), full)
	for _, R := range []int{8, 1} {
		name := fmt.Sprintf("%s_rows%d", fn, R)
		Label(name)
		CMPQ(rows, U8(R))
		JL(LabelRef(name + "_next"))
		s3, k4 := GP64(), GP64()
		LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
		if R == 8 {
			LEAQ(Mem{Base: k, Index: stride, Scale: 4}, k4)
		}
		row := func(r int) Mem { m := rowAddr(k, k4, stride, s3, r); m.Disp += 4; return m }
		acc := zeros(R)
		c := GP64()
		XORQ(c, c)
		Label(name + "_chunk")
		CMPQ(c, full)
		JAE(LabelRef(name + "_tail"))
		qv := YMM()
		VMOVUPS(Mem{Base: q, Index: c, Scale: 4}, qv)
		for r := range R {
			t := YMM()
			widenI8Y(row(r), t)
			VFMADD231PS(t, qv, acc[r])
		}
		ADDQ(U8(8), c)
		ADDQ(U8(8), k)
		if R == 8 {
			ADDQ(U8(8), k4)
		}
		JMP(LabelRef(name + "_chunk"))
		Label(name + "_tail")
		rem := GP64()
		MOVQ(d, rem)
		ANDQ(U8(7), rem)
		JZ(LabelRef(name + "_reduce"))
		qt := YMM()
		VMASKMOVPS(Mem{Base: q, Index: c, Scale: 4}, tailMask(rem), qt)
		for r := range R {
			VFMADD231PS(partI8(row(r), rem), qt, acc[r])
		}
		Label(name + "_reduce")
		SUBQ(c, k)
		if R == 8 {
			SUBQ(c, k4)
			s := sums8(acc)
			lo, hi := XMM(), XMM()
			VMOVSS(rowAddr(k, k4, stride, s3, 0), lo)
			VMOVSS(rowAddr(k, k4, stride, s3, 4), hi)
			for r := 1; r < 4; r++ {
				VINSERTPS(U8(r<<4), rowAddr(k, k4, stride, s3, r), lo, lo)
				VINSERTPS(U8(r<<4), rowAddr(k, k4, stride, s3, 4+r), hi, hi)
			}
			scales := YMM()
			VINSERTF128(U8(1), hi, lo.AsY(), scales)
			VMULPS(scales, s, s)
			VMOVUPS(s, Mem{Base: dst})
		} else {
			x := hsum(acc[0])
			VMULSS(Mem{Base: k}, x, x)
			VMOVSS(x, Mem{Base: dst})
		}
		blk := GP64()
		MOVQ(stride, blk)
		if R > 1 {
			SHLQ(U8(3), blk)
		}
		ADDQ(blk, k)
		ADDQ(U8(4*R), dst)
		SUBQ(U8(R), rows)
		JMP(LabelRef(name))
		Label(name + "_next")
	}
	VZEROUPPER()
	RET()
}

// genBlendRowsI8Y is genBlendRowsI8 on eight lanes, without prefetches:
// passes of 8, 4, 2 and 1 vectors of columns, then the last d%8 columns.
func genBlendRowsI8Y() {
	acc := Load(Param("acc").Base(), GP64())
	d := Load(Param("acc").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	rows := Load(Param("w").Len(), GP64())
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	back := GP64() // minus the bytes v has moved past the rows' starts
	XORQ(back, back)
	over := func(name string, add func(wb VecVirtual, row Register)) {
		wp, vp, r := GP64(), GP64(), GP64()
		MOVQ(w, wp)
		MOVQ(v, vp)
		MOVQ(rows, r)
		Label(name + "_row")
		TESTQ(r, r)
		JZ(LabelRef(name + "_end"))
		x, wb := XMM(), YMM()
		VMOVSS(Mem{Base: wp}, x)
		VMULSS(Mem{Base: vp, Index: back, Scale: 1}, x, x)
		VBROADCASTSS(x, wb)
		add(wb, vp)
		ADDQ(U8(4), wp)
		ADDQ(stride, vp)
		DECQ(r)
		JMP(LabelRef(name + "_row"))
		Label(name + "_end")
	}
	for _, C := range []int{8, 4, 2, 1} {
		name := fmt.Sprintf("%s_cols%d", fn, C)
		Label(name)
		CMPQ(d, U32(8*C))
		JL(LabelRef(name + "_next"))
		a := make([]VecVirtual, C)
		for j := range a {
			a[j] = YMM()
			VMOVUPS(Mem{Base: acc, Disp: 32 * j}, a[j])
		}
		over(name, func(wb VecVirtual, row Register) {
			for j := range a {
				t := YMM()
				widenI8Y(Mem{Base: row, Disp: 4 + 8*j}, t)
				VFMADD231PS(t, wb, a[j])
			}
		})
		for j := range a {
			VMOVUPS(a[j], Mem{Base: acc, Disp: 32 * j})
		}
		ADDQ(U32(32*C), acc)
		ADDQ(U32(8*C), v)
		SUBQ(U32(8*C), back)
		SUBQ(U32(8*C), d)
		JMP(LabelRef(name))
		Label(name + "_next")
	}
	TESTQ(d, d)
	JZ(LabelRef(fn + "_done"))
	mask := tailMask(d)
	a := YMM()
	VMASKMOVPS(Mem{Base: acc}, mask, a)
	over(fn+"_part", func(wb VecVirtual, row Register) {
		VFMADD231PS(partI8(Mem{Base: row, Disp: 4}, d), wb, a)
	})
	VMASKMOVPS(a, mask, Mem{Base: acc})
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}

// genWidenRowsI8Y is genWidenRowsI8 on eight lanes.
func genWidenRowsI8Y() {
	dst := Load(Param("dst").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())
	src := Load(Param("src").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	d := Load(Param("d"), GP64())
	TESTQ(d, d)
	JZ(LabelRef("wi8y_done"))
	full, rem := GP64(), GP64()
	MOVQ(d, full)
	ANDQ(I32(-8), full)
	MOVQ(d, rem)
	ANDQ(U8(7), rem)
	mask := tailMask(rem)
	Label("wi8y_row")
	CMPQ(n, d)
	JB(LabelRef("wi8y_done"))
	sc := YMM()
	VBROADCASTSS(Mem{Base: src}, sc)
	c := GP64()
	XORQ(c, c)
	Label("wi8y_chunk")
	CMPQ(c, full)
	JAE(LabelRef("wi8y_tail"))
	t := YMM()
	widenI8Y(Mem{Base: src, Index: c, Scale: 1, Disp: 4}, t)
	VMULPS(sc, t, t)
	VMOVUPS(t, Mem{Base: dst, Index: c, Scale: 4})
	ADDQ(U8(8), c)
	JMP(LabelRef("wi8y_chunk"))
	Label("wi8y_tail")
	TESTQ(rem, rem)
	JZ(LabelRef("wi8y_next"))
	u := partI8(Mem{Base: src, Index: c, Scale: 1, Disp: 4}, rem)
	VMULPS(sc, u, u)
	VMASKMOVPS(u, mask, Mem{Base: dst, Index: c, Scale: 4})
	Label("wi8y_next")
	LEAQ(Mem{Base: dst, Index: d, Scale: 4}, dst)
	ADDQ(stride, src)
	SUBQ(d, n)
	JMP(LabelRef("wi8y_row"))
	Label("wi8y_done")
	VZEROUPPER()
	RET()
}

// genNarrowI8Y is genNarrowI8 on eight lanes: the same two passes, eight
// elements at a time, packed to bytes with saturation (which never
// bites: every value is within ±127); a row that is not finite is filled
// with zeros.
func genNarrowI8Y() {
	dst := Load(Param("dst").Base(), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	abs, mx, nz := YMM(), YMM(), YMM()
	VBROADCASTSS(vec32("absmask", 0x7fffffff), abs)
	VXORPS(mx, mx, mx)
	VXORPS(nz, nz, nz)
	i, rest := GP64(), GP64()
	XORQ(i, i)
	acc := func(v VecVirtual) {
		t := YMM()
		VSUBPS(v, v, t)
		VADDPS(t, nz, nz)
		VANDPS(abs, v, v)
		VMAXPS(v, mx, mx)
	}
	Label("nqy_max")
	MOVQ(n, rest)
	SUBQ(i, rest)
	CMPQ(rest, U8(8))
	JB(LabelRef("nqy_max_tail"))
	v := YMM()
	VMOVUPS(Mem{Base: src, Index: i, Scale: 4}, v)
	acc(v)
	ADDQ(U8(8), i)
	JMP(LabelRef("nqy_max"))
	Label("nqy_max_tail")
	TESTQ(rest, rest)
	JZ(LabelRef("nqy_reduce"))
	vt := YMM()
	VMASKMOVPS(Mem{Base: src, Index: i, Scale: 4}, tailMask(rest), vt)
	acc(vt)
	Label("nqy_reduce")
	maxAndSum(mx, nz, false)
	s, sc, inv := rowScaleInv("nqy", mx.AsX(), nz.AsX())
	VMOVSS(s, Mem{Base: dst})
	VUCOMISS(s, s)
	JP(LabelRef("nqy_zeros")) // not finite: zeros (the packs would saturate a NaN's integer to −128)
	scy, invy := YMM(), YMM()
	VBROADCASTSS(sc, scy)
	VBROADCASTSS(inv, invy)
	XORQ(i, i)
	// quant returns the eight bytes of the eight floats v in the low
	// quadword of an xmm.
	quant := func(v VecVirtual) VecVirtual {
		VMULPS(scy, v, v)
		VMULPS(invy, v, v)
		VCVTPS2DQ(v, v)
		hi := XMM()
		VEXTRACTF128(U8(1), v, hi)
		VPACKSSDW(hi, v.AsX(), hi)
		VPACKSSWB(hi, hi, hi)
		return hi
	}
	Label("nqy_q")
	MOVQ(n, rest)
	SUBQ(i, rest)
	CMPQ(rest, U8(8))
	JB(LabelRef("nqy_q_tail"))
	v2 := YMM()
	VMOVUPS(Mem{Base: src, Index: i, Scale: 4}, v2)
	VMOVQ(quant(v2), Mem{Base: dst, Index: i, Scale: 1, Disp: 4})
	ADDQ(U8(8), i)
	JMP(LabelRef("nqy_q"))
	Label("nqy_q_tail")
	TESTQ(rest, rest)
	JZ(LabelRef("nqy_done"))
	v3 := YMM()
	VMASKMOVPS(Mem{Base: src, Index: i, Scale: 4}, tailMask(rest), v3)
	b := GP64()
	VMOVQ(quant(v3), b)
	Label("nqy_bytes")
	MOVB(b.As8(), Mem{Base: dst, Index: i, Scale: 1, Disp: 4})
	SHRQ(U8(8), b)
	INCQ(i)
	DECQ(rest)
	JNZ(LabelRef("nqy_bytes"))
	JMP(LabelRef("nqy_done"))

	Label("nqy_zeros")
	XORQ(i, i)
	Label("nqy_zero")
	CMPQ(i, n)
	JAE(LabelRef("nqy_done"))
	MOVB(U8(0), Mem{Base: dst, Index: i, Scale: 1, Disp: 4})
	INCQ(i)
	JMP(LabelRef("nqy_zero"))
	Label("nqy_done")
	VZEROUPPER()
	RET()
}
