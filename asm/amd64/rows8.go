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

// partI8 returns the floats of the 1 <= n < 8 int8 elements at m, the
// other lanes zero, reading no other byte: the bytes gathered in a general
// register by a loop (a tail's cold path: unrolled, the gather took 26 lines
// more at each of its 38 uses), then moved and widened, which takes a single
// vector register (the four-row multi-row kernels' tails have no more to
// spare).
func partI8(m Mem, n Register) VecVirtual {
	parts[fn]++
	loop := fmt.Sprintf("%s_part%d", fn, parts[fn])
	// From the last element down: b = b<<8 | element i.
	b, p, i := GP64(), GP64(), GP64()
	XORQ(b, b)
	LEAQ(m, p)
	MOVQ(n, i)
	Label(loop)
	SHLQ(U8(8), b)
	MOVB(Mem{Base: p, Index: i, Scale: 1, Disp: -1}, b.As8())
	DECQ(i)
	JNZ(LabelRef(loop))
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
	// d is read again where the tail needs it: the blocks' prefetch
	// pointer takes its register.
	full := Load(Param("q").Len(), GP64())
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
		var next Register
		if R == 8 {
			// As scoreAhead16: the block multiAhead rows on, a line a
			// step; the last line at the block's end.
			next = i8BlockAhead(k, stride, multiAhead)
		}
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
			PREFETCHT0(Mem{Base: next})
			ADDQ(U8(64), next)
		}
		JMP(LabelRef(name + "_chunk"))
		Label(name + "_tail")
		rem := Load(Param("q").Len(), GP64())
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
			PREFETCHT0(Mem{Base: next})
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

// genBlendRowsI8Y is genBlendRowsI8 on eight lanes: passes of 8, 4, 2 and
// 1 vectors of columns, then the last d%8 columns. Each row of a pass asks
// for its pass's bytes multiAhead rows on, as blendAhead16 does.
func genBlendRowsI8Y() {
	acc := Load(Param("acc").Base(), GP64())
	d := Load(Param("acc").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	rows := Load(Param("w").Len(), GP64())
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	back := GP64() // minus the bytes v has moved past the rows' starts
	XORQ(back, back)
	far, limit := GP64(), GP64()
	IMUL3Q(U32(multiAhead), stride, far)
	MOVQ(argAddr(Param("v").Len()), limit)
	LEAQ(Mem{Base: v, Index: limit, Scale: 1, Disp: -(4 + 64)}, limit)
	SUBQ(far, limit) // the last row whose prefetch stays inside v
	ahead := func(row Register, bytes int) {
		parts[fn]++
		skip := fmt.Sprintf("%s_ahead%d", fn, parts[fn])
		CMPQ(row, limit)
		JA(LabelRef(skip))
		// The pass's bytes from row+4, which need not start a line.
		PREFETCHT0(Mem{Base: row, Index: far, Scale: 1, Disp: 4})
		PREFETCHT0(Mem{Base: row, Index: far, Scale: 1, Disp: 4 + bytes - 1})
		Label(skip)
	}
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
			ahead(row, 8*C)
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

// genWidenRowsI8Y is genWidenRowsI8 on eight lanes, four chunks an
// iteration, each row first asking for the row 4 KiB on while src holds it
// (as widenBF16 does): together they took verify-4k's step over an int8
// cache 0.92 of its time on Zen 3, where either alone gained nothing.
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
	full4 := GP64()
	MOVQ(d, full4)
	ANDQ(I32(-32), full4)
	// far: the last row start whose row 4 KiB on ends within src.
	far := Load(Param("src").Len(), GP64())
	ADDQ(src, far)
	SUBQ(stride, far)
	SUBQ(U32(4096), far)
	Label("wi8y_row")
	CMPQ(n, d)
	JB(LabelRef("wi8y_done"))
	sc := YMM()
	VBROADCASTSS(Mem{Base: src}, sc)
	c := GP64()
	XORQ(c, c)
	CMPQ(src, far)
	JA(LabelRef("wi8y_four"))
	Label("wi8y_ask")
	PREFETCHT0(Mem{Base: src, Index: c, Scale: 1, Disp: 4096})
	ADDQ(U8(64), c)
	CMPQ(c, stride)
	JB(LabelRef("wi8y_ask"))
	PREFETCHT0(Mem{Base: src, Index: stride, Scale: 1, Disp: 4095})
	XORQ(c, c)
	Label("wi8y_four")
	CMPQ(c, full4)
	JAE(LabelRef("wi8y_chunk"))
	for j := range 4 {
		t := YMM()
		widenI8Y(Mem{Base: src, Index: c, Scale: 1, Disp: 4 + 8*j}, t)
		VMULPS(sc, t, t)
		VMOVUPS(t, Mem{Base: dst, Index: c, Scale: 4, Disp: 32 * j})
	}
	ADDQ(U8(32), c)
	JMP(LabelRef("wi8y_four"))
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

func init() { avx2["quantRowsI8"] = genQuantRowsI8Y }

// genQuantRowsI8Y is genQuantRowsI8 on eight lanes, the same bits. A row
// of 128 floats is sixteen ymm, every register there is, so a rotated row
// goes through half of tmp (2·128 floats): each half of the row rotated
// in registers (the butterflies of spans up to 32), then the span of 64
// and the product with f two vectors at a time as the largest magnitude
// gathers (which is also the finiteness test, see gatherRow), then
// narrowI8's products from tmp. Unrotated rows are read from src by the
// last two passes. One call quantises every row, where the rows one at a
// time through hadamardRows and narrowI8 took a call (and a copy) each.
func genQuantRowsI8Y() {
	dst := Load(Param("dst").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	src := Load(Param("src").Base(), GP64())
	n := Load(Param("src").Len(), GP64())
	tmp := Load(Param("tmp").Base(), GP64())
	fx, z := XMM(), XMM()
	VMOVSS(argAddr(Param("f")), fx)
	VXORPS(z, z, z)
	VUCOMISS(z, fx)
	JE(LabelRef("qry_plain"))

	// Row r's last passes read tmp's half cur while row r+1's rotation
	// writes the other, nxt: its butterflies, between row r's divisions
	// (its scale) and its products, fill their wait.
	cur, nxt, ap, first := GP64(), GP64(), GP64(), GP64()
	CMPQ(n, U32(128))
	JB(LabelRef("qry_done"))
	MOVQ(tmp, cur)
	LEAQ(Mem{Base: tmp, Disp: 512}, nxt)
	MOVQ(src, ap)
	MOVQ(U32(1), first)
	JMP(LabelRef("qry_a"))

	Label("qry_row")
	fy, abs := YMM(), YMM()
	VBROADCASTSS(argAddr(Param("f")), fy)
	VBROADCASTSS(vec32("absmask", 0x7fffffff), abs)
	mx := gathers()
	o := GP64()
	XORQ(o, o)
	Label("qry_span")
	a, c, t := YMM(), YMM(), YMM()
	VMOVUPS(Mem{Base: cur, Index: o, Scale: 1}, a)
	VMOVUPS(Mem{Base: cur, Index: o, Scale: 1, Disp: 256}, c)
	VADDPS(c, a, t)
	VSUBPS(c, a, a)
	for i, x := range []VecVirtual{t, a} {
		VMULPS(fy, x, x)
		VMOVUPS(x, Mem{Base: cur, Index: o, Scale: 1, Disp: 256 * i})
		gatherRow(x, abs, mx[i])
	}
	ADDQ(U8(32), o)
	CMPQ(o, U32(256))
	JB(LabelRef("qry_span"))
	s, sc, inv := scaleRowY("qry_r", dst, mx)
	LEAQ(Mem{Base: src, Disp: 512}, ap)
	CMPQ(n, U32(256))
	JB(LabelRef("qry_c"))

	Label("qry_a")
	for h := range 2 {
		vs := make([]VecVirtual, 8)
		for i := range vs {
			vs[i] = YMM()
			VMOVUPS(Mem{Base: ap, Disp: 256*h + 32*i}, vs[i])
		}
		for _, x := range vs {
			inVector(x, 8, YMM)
		}
		for i, x := range between(vs, YMM) {
			VMOVUPS(x, Mem{Base: nxt, Disp: 256*h + 32*i})
		}
	}
	TESTQ(first, first)
	JNZ(LabelRef("qry_first"))

	Label("qry_c")
	writeRowY("qry_r", dst, cur, s, sc, inv)
	ADDQ(U32(512), src)
	ADDQ(stride, dst)
	SUBQ(U32(128), n)
	XCHGQ(cur, nxt)
	CMPQ(n, U32(128))
	JAE(LabelRef("qry_row"))
	JMP(LabelRef("qry_done"))
	Label("qry_first")
	XORQ(first, first)
	XCHGQ(cur, nxt)
	JMP(LabelRef("qry_row"))

	// Unrotated rows: the next row's largest magnitude gathered between
	// this row's scale and its products, as above.
	Label("qry_plain")
	CMPQ(n, U32(128))
	JB(LabelRef("qry_done"))
	abs2 := YMM()
	VBROADCASTSS(vec32("absmask", 0x7fffffff), abs2)
	gather := func(q string, row Register) [2]VecVirtual {
		mx := gathers()
		o := GP64()
		XORQ(o, o)
		Label(q)
		for i := range 2 {
			x := YMM()
			VMOVUPS(Mem{Base: row, Index: o, Scale: 1, Disp: 32 * i}, x)
			gatherRow(x, abs2, mx[i])
		}
		ADDQ(U8(64), o)
		CMPQ(o, U32(512))
		JB(LabelRef(q))
		return mx
	}
	mx2 := gather("qry_max0", src)
	Label("qry_prow")
	s2, sc2, inv2 := scaleRowY("qry_p", dst, mx2)
	CMPQ(n, U32(256))
	JB(LabelRef("qry_pc"))
	nx := GP64()
	LEAQ(Mem{Base: src, Disp: 512}, nx)
	m := gather("qry_max", nx)
	VMOVDQU(m[0], mx2[0])
	VMOVDQU(m[1], mx2[1])
	Label("qry_pc")
	writeRowY("qry_p", dst, src, s2, sc2, inv2)
	ADDQ(U32(512), src)
	ADDQ(stride, dst)
	SUBQ(U32(128), n)
	CMPQ(n, U32(128))
	JAE(LabelRef("qry_prow"))

	Label("qry_done")
	VZEROUPPER()
	RET()
}

// gathers returns two zeroed accumulators for gatherRow: two chains,
// half as long.
func gathers() (mx [2]VecVirtual) {
	for i := range 2 {
		mx[i] = YMM()
		VXORPS(mx[i], mx[i], mx[i])
	}
	return
}

// gatherRow folds x into a row quantiser's largest magnitude mx,
// consuming x: |x| by its bits, whose unsigned order is that of the
// magnitudes and puts the infinities and then the NaNs above every finite
// one, so that the largest is not finite exactly where the row is not.
func gatherRow(x, abs, mx VecVirtual) {
	VANDPS(abs, x, x)
	VPMAXUD(x, mx, mx)
}

// scaleRowY reduces mx, a row of 128's largest magnitude as
// genQuantRowsI8Y gathers it (p names the labels), stores the row's scale
// s at dst and returns it with the factors sc and inv (see rowScaleInv).
func scaleRowY(p string, dst Register, mx [2]VecVirtual) (s, sc, inv VecVirtual) {
	m, t, z := mx[0], XMM(), XMM()
	VPMAXUD(mx[1], m, m)
	VEXTRACTI128(U8(1), m, t)
	VPMAXUD(t, m.AsX(), m.AsX())
	VPSHUFD(U8(0x4e), m.AsX(), t)
	VPMAXUD(t, m.AsX(), m.AsX())
	VPSHUFD(U8(0xb1), m.AsX(), t)
	VPMAXUD(t, m.AsX(), m.AsX())
	VSUBSS(m.AsX(), m.AsX(), z) // NaN where m is not finite, as narrowI8's sum of x−x
	s, sc, inv = rowScaleInv(p, m.AsX(), z)
	VMOVSS(s, Mem{Base: dst})
	return
}

// writeRowY stores the row's sixteen vectors at from as narrowI8 does,
// after its scale s: zeros where s is not finite (the packs would
// saturate a NaN's integer to −128).
func writeRowY(p string, dst, from Register, s, sc, inv VecVirtual) {
	VUCOMISS(s, s)
	JP(LabelRef(p + "_zeros"))
	scy, invy := YMM(), YMM()
	VBROADCASTSS(sc, scy)
	VBROADCASTSS(inv, invy)
	// Sixteen elements a step: their dwords packed to words in lane
	// order (the in-lane pack and a quadword permutation), then to bytes.
	b := GP64()
	XORQ(b, b)
	Label(p + "_q")
	v := [2]VecVirtual{YMM(), YMM()}
	for i, x := range v {
		VMOVUPS(Mem{Base: from, Index: b, Scale: 4, Disp: 32 * i}, x)
		VMULPS(scy, x, x)
		VMULPS(invy, x, x)
		VCVTPS2DQ(x, x)
	}
	hi := XMM()
	VPACKSSDW(v[1], v[0], v[0])
	VPERMQ(U8(0xd8), v[0], v[0])
	VEXTRACTI128(U8(1), v[0], hi)
	VPACKSSWB(hi, v[0].AsX(), hi)
	VMOVDQU(hi, Mem{Base: dst, Index: b, Scale: 1, Disp: 4})
	ADDQ(U8(16), b)
	CMPQ(b, U32(128))
	JB(LabelRef(p + "_q"))
	JMP(LabelRef(p + "_next"))
	Label(p + "_zeros")
	zy := YMM()
	VXORPS(zy, zy, zy)
	for i := range 4 {
		VMOVDQU(zy, Mem{Base: dst, Disp: 4 + 32*i})
	}
	Label(p + "_next")
}
