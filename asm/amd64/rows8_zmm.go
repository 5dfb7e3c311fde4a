package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The row kernels over int8 key and value rows on sixteen lanes: each row
// is its float32 scale and then its elements, sixteen of which a
// sign-extension (VPMOVSXBD) and a conversion (VCVTDQ2PS) make floats of,
// exactly. The score multiplies each row's sum by its scale once; the
// blend multiplies each row's weight by it once, before the row's FMAs.

func init() {
	avx512["scoreRowsI8"] = genScoreRowsI8
	avx512["blendRowsI8"] = genBlendRowsI8
	avx512["widenRowsI8"] = genWidenRowsI8
}

// genWidenRowsI8 dequantises len(dst)/d rows of src into dst, packed: each
// sixteen elements widened and multiplied by the row's scale (a broadcast
// operand), the twin's one rounding; the last d%16 under a mask.
func genWidenRowsI8() {
	dst := Load(Param("dst").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())
	src := Load(Param("src").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	d := Load(Param("d"), GP64())
	TESTQ(d, d)
	JZ(LabelRef("wi8_done"))
	full := GP64()
	MOVQ(d, full)
	ANDQ(I32(-16), full)
	rem := GP64()
	MOVQ(d, rem)
	ANDQ(U8(15), rem)
	mask := tailK(rem)
	Label("wi8_row")
	CMPQ(n, d)
	JB(LabelRef("wi8_done"))
	c, e := GP64(), GP64()
	XORQ(c, c)
	// Two vectors a step while they fit, then one: half the loop's own
	// instructions.
	MOVQ(full, e)
	SUBQ(U8(16), e)
	Label("wi8_two")
	CMPQ(c, e)
	JGE(LabelRef("wi8_chunk"))
	for u := range 2 {
		t := ZMM()
		widenI8(Mem{Base: src, Index: c, Scale: 1, Disp: 4 + 16*u}, t)
		VMULPS_BCST(Mem{Base: src}, t, t)
		VMOVUPS(t, Mem{Base: dst, Index: c, Scale: 4, Disp: 64 * u})
	}
	ADDQ(U8(32), c)
	JMP(LabelRef("wi8_two"))
	Label("wi8_chunk")
	CMPQ(c, full)
	JAE(LabelRef("wi8_tail"))
	t := ZMM()
	widenI8(Mem{Base: src, Index: c, Scale: 1, Disp: 4}, t)
	VMULPS_BCST(Mem{Base: src}, t, t)
	VMOVUPS(t, Mem{Base: dst, Index: c, Scale: 4})
	ADDQ(U8(16), c)
	JMP(LabelRef("wi8_chunk"))
	Label("wi8_tail")
	TESTQ(rem, rem)
	JZ(LabelRef("wi8_next"))
	x, u := XMM(), ZMM()
	VMOVDQU8_Z(Mem{Base: src, Index: c, Scale: 1, Disp: 4}, mask, x)
	widenI8(x, u)
	VMULPS_BCST(Mem{Base: src}, u, u)
	VMOVUPS(u, mask, Mem{Base: dst, Index: c, Scale: 4})
	Label("wi8_next")
	LEAQ(Mem{Base: dst, Index: d, Scale: 4}, dst)
	ADDQ(stride, src)
	SUBQ(d, n)
	JMP(LabelRef("wi8_row"))
	Label("wi8_done")
	VZEROUPPER()
	RET()
}

// i8BlockAhead returns the pointer an eight-row int8 block of k (rows
// stride bytes apart) prefetches from: the block ahead rows on, in
// address order, kept inside k (see keepInside).
func i8BlockAhead(k, stride Register, ahead int) Register {
	next := GP64()
	IMUL3Q(U32(ahead), stride, next)
	ADDQ(k, next)
	reach := GP64()
	MOVQ(stride, reach)
	SHLQ(U8(3), reach)
	ADDQ(next, reach)
	keepInside("k", 0, reach, [2]Register{k, next})
	return next
}

// i8Ahead is how many rows ahead the one-row int8 kernels prefetch: a
// row is a scale and d bytes, about half a 16-bit row, and from memory
// they streamed the fastest asked for 128 rows on where the 16-bit
// kernels' multiAhead (32) left the one-row step about 1.1× as long (measured:
// docs/performance/amd-epyc-zen5.md#int8-one-row-prefetch-distance).
const i8Ahead = 128

// widenI8 sets dst to the floats of the sixteen int8 elements at src (a
// memory operand or an xmm register).
func widenI8(src Op, dst VecVirtual) {
	VPMOVSXBD(src, dst)
	VCVTDQ2PS(dst, dst)
}

// genScoreRowsI8: dst[i] = s_i·Σ_j k[i*stride+4+j]*q[j], genScoreRows16's
// blocks of eight rows and then single rows, each row's sum through the
// same tree (rowsSums, hsumZ for single rows) and then multiplied by its
// scale. The blocks prefetch the rows i8Ahead on, in address order.
func genScoreRowsI8() {
	dst := Load(Param("dst").Base(), GP64())
	rows := Load(Param("dst").Len(), GP64())
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64()) // bytes
	q := Load(Param("q").Base(), GP64())
	d := Load(Param("q").Len(), GP64())
	full := GP64() // k's elements (bytes) in full chunks of a row
	MOVQ(d, full)
	ANDQ(I32(-16), full)

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
			// The eight rows i8Ahead on, two lines a step of sixteen
			// elements.
			next = i8BlockAhead(k, stride, i8Ahead)
		}
		acc := zerosZ(R)
		c := GP64() // elements of each row done
		XORQ(c, c)
		Label(name + "_chunk")
		CMPQ(c, full)
		JAE(LabelRef(name + "_tail"))
		qv := loadZ(Mem{Base: q, Index: c, Scale: 4}, nil)
		for r := range R {
			t := ZMM()
			widenI8(row(r), t)
			VFMADD231PS(t, qv, acc[r])
		}
		if next != nil {
			PREFETCHT0(Mem{Base: next})
			PREFETCHT0(Mem{Base: next, Disp: 64})
			ADDQ(U8(128), next)
		}
		ADDQ(U8(16), c)
		ADDQ(U8(16), k)
		if R == 8 {
			ADDQ(U8(16), k4)
		}
		JMP(LabelRef(name + "_chunk"))

		// The tail's lanes past d are zero in both factors and add +0.
		Label(name + "_tail")
		rem := GP64()
		MOVQ(d, rem)
		ANDQ(U8(15), rem)
		JZ(LabelRef(name + "_reduce"))
		mask := tailK(rem)
		qt := loadZ(Mem{Base: q, Index: c, Scale: 4}, mask)
		for r := range R {
			x, t := XMM(), ZMM()
			VMOVDQU8_Z(row(r), mask, x)
			widenI8(x, t)
			VFMADD231PS(t, qt, acc[r])
		}

		Label(name + "_reduce")
		SUBQ(c, k)
		if R == 8 {
			SUBQ(c, k4)
			s := rowsSums(acc).AsY()
			lo, hi := XMM(), XMM()
			VMOVSS(rowAddr(k, k4, stride, s3, 0), lo)
			VMOVSS(rowAddr(k, k4, stride, s3, 4), hi)
			for r := 1; r < 4; r++ {
				VINSERTPS(U8(r<<4), rowAddr(k, k4, stride, s3, r), lo, lo)
				VINSERTPS(U8(r<<4), rowAddr(k, k4, stride, s3, 4+r), hi, hi)
			}
			scales := YMM()
			VINSERTF32X4(U8(1), hi, lo.AsY(), scales)
			VMULPS(scales, s, s)
			VMOVUPS(s, Mem{Base: dst})
		} else {
			x := hsumZ(acc[0])
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

// genBlendRowsI8: acc[j] += Σ_i (w[i]·s_i)*v[i*stride+4+j], genBlendRows16's
// passes over column chunks of up to eight vectors held in registers
// while the rows stream past, each row's weight multiplied by its scale
// once and its FMAs in row order; then the last d%16 columns under a
// mask. Each row's columns are prefetched i8Ahead rows on where they
// lie inside v, as genBlendRows16's are.
func genBlendRowsI8() {
	acc := Load(Param("acc").Base(), GP64())
	d := Load(Param("acc").Len(), GP64())
	w := Load(Param("w").Base(), GP64())
	rows := Load(Param("w").Len(), GP64())
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64()) // bytes

	widest := 4 + 16*8 // the bytes of a row the widest pass reads
	far, limit := GP64(), GP64()
	IMUL3Q(U32(i8Ahead), stride, far)
	MOVQ(argAddr(Param("v").Len()), limit)
	LEAQ(Mem{Base: v, Index: limit, Scale: 1, Disp: -widest}, limit)
	SUBQ(far, limit) // the last row whose prefetch stays inside v
	asks := 0
	ahead := func(row Register, bytes int) {
		asks++
		skip := fmt.Sprintf("%s_ahead%d", fn, asks)
		CMPQ(row, limit)
		JA(LabelRef(skip))
		for j := range max(1, bytes/64) {
			PREFETCHT0(Mem{Base: row, Index: far, Scale: 1, Disp: 64 * j})
		}
		Label(skip)
	}
	// back is minus the bytes v has moved past the rows' starts, where
	// their scales are.
	back := GP64()
	XORQ(back, back)
	// over emits the loop over the rows: add(wb, row) for each, wb the
	// row's weight times its scale, broadcast.
	over := func(name string, add func(wb VecVirtual, row Register)) {
		wp, vp, r := GP64(), GP64(), GP64()
		MOVQ(w, wp)
		MOVQ(v, vp)
		MOVQ(rows, r)
		Label(name + "_row")
		TESTQ(r, r)
		JZ(LabelRef(name + "_end"))
		x, wb := XMM(), ZMM()
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
		CMPQ(d, U32(16*C))
		JL(LabelRef(name + "_next"))
		a := make([]VecVirtual, C)
		for j := range a {
			a[j] = loadZ(Mem{Base: acc, Disp: 64 * j}, nil)
		}
		over(name, func(wb VecVirtual, row Register) {
			for j := range a {
				t := ZMM()
				widenI8(Mem{Base: row, Disp: 4 + 16*j}, t)
				VFMADD231PS(t, wb, a[j])
			}
			ahead(row, 16*C)
		})
		for j := range a {
			storeZ(a[j], Mem{Base: acc, Disp: 64 * j}, nil)
		}
		ADDQ(U32(64*C), acc)
		ADDQ(U32(16*C), v)
		SUBQ(U32(16*C), back)
		SUBQ(U32(16*C), d)
		JMP(LabelRef(name))
		Label(name + "_next")
	}
	TESTQ(d, d)
	JZ(LabelRef(fn + "_done"))
	mask := tailK(d)
	a := loadZ(Mem{Base: acc}, mask)
	over(fn+"_part", func(wb VecVirtual, row Register) {
		x, t := XMM(), ZMM()
		VMOVDQU8_Z(Mem{Base: row, Disp: 4}, mask, x)
		widenI8(x, t)
		VFMADD231PS(t, wb, a)
	})
	storeZ(a, Mem{Base: acc}, mask)
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}
