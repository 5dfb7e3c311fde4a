package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx512["blockIn"] = genBlockInZ
	avx512["blockOut"] = genBlockOutZ
}

// The block transposes on sixteen lanes: a block's sixteen rows are one
// 16×16 tile per sixteen columns, sixty-four shuffles per 256 floats
// where the AVX2 version's 8×8 tiles take ninety-six. A last partial chunk
// of columns is loaded or stored under an opmask, so every row takes the
// same straight-line code.

// transpose16 transposes the 16×16 tile held in v (v[i] = row i) in place.
func transpose16(v []VecVirtual) {
	// In-lane 4×4 transposes: u[4g+j], lane L, holds column 4L+j of rows
	// 4g..4g+3.
	t := make([]VecVirtual, 16)
	for i := 0; i < 16; i += 2 {
		t[i], t[i+1] = ZMM(), ZMM()
		VUNPCKLPS(v[i+1], v[i], t[i])
		VUNPCKHPS(v[i+1], v[i], t[i+1])
	}
	u := make([]VecVirtual, 16)
	for i := 0; i < 16; i += 4 {
		for k, imm := range []uint8{0x44, 0xee} {
			u[i+k], u[i+2+k] = ZMM(), ZMM()
			VSHUFPS(U8(imm), t[i+2], t[i], u[i+k])
			VSHUFPS(U8(imm), t[i+3], t[i+1], u[i+2+k])
		}
	}
	// A 4×4 transpose of 128-bit lanes across u[j], u[4+j], u[8+j],
	// u[12+j] gives columns j, 4+j, 8+j and 12+j.
	for j := range 4 {
		a, b, c, d := u[j], u[4+j], u[8+j], u[12+j]
		p0, p1, q0, q1 := ZMM(), ZMM(), ZMM(), ZMM()
		VSHUFF32X4(U8(0x44), b, a, p0) // a0 a1 b0 b1
		VSHUFF32X4(U8(0xee), b, a, p1) // a2 a3 b2 b3
		VSHUFF32X4(U8(0x44), d, c, q0) // c0 c1 d0 d1
		VSHUFF32X4(U8(0xee), d, c, q1) // c2 c3 d2 d3
		VSHUFF32X4(U8(0x88), q0, p0, v[j])
		VSHUFF32X4(U8(0xdd), q0, p0, v[4+j])
		VSHUFF32X4(U8(0x88), q1, p1, v[8+j])
		VSHUFF32X4(U8(0xdd), q1, p1, v[12+j])
	}
}

// transposeRows holds the addresses of a block's sixteen rows, s bytes
// apart from p.
type transposeRows struct {
	base  [4]Register // rows 0, 4, 8, 12
	s, s3 Register
}

// newTransposeRows returns the rows' registers; set must run at every
// chunk, once p has moved.
func newTransposeRows(p, s Register) transposeRows {
	r := transposeRows{s: s, s3: GP64()}
	LEAQ(Mem{Base: s, Index: s, Scale: 2}, r.s3)
	r.base[0] = p
	for i := 1; i < 4; i++ {
		r.base[i] = GP64()
	}
	return r
}

func (r transposeRows) set() {
	for i := 1; i < 4; i++ {
		LEAQ(Mem{Base: r.base[i-1], Index: r.s, Scale: 4}, r.base[i])
	}
}

// row returns the address of row i < 16.
func (r transposeRows) row(i int) Mem {
	b := r.base[i/4]
	switch i % 4 {
	case 1:
		return Mem{Base: b, Index: r.s, Scale: 1}
	case 2:
		return Mem{Base: b, Index: r.s, Scale: 2}
	case 3:
		return Mem{Base: b, Index: r.s3, Scale: 1}
	}
	return Mem{Base: b}
}

// transposeColMask returns an opmask with the first min(rem, 16) lanes set.
func transposeColMask(rem Register, name string) OpmaskVirtual {
	k := K()
	KXNORW(k, k, k)
	CMPQ(rem, U8(16))
	JGE(LabelRef(name + "_full"))
	KMOVW(tailK(rem), k)
	Label(name + "_full")
	return k
}

func genBlockInZ() {
	qt := Load(Param("qt").Base(), GP64())
	c := Load(Param("qt").Len(), GP64())
	SHRQ(U8(4), c) // columns left
	q := Load(Param("q").Base(), GP64())
	s := Load(Param("stride"), GP64())
	SHLQ(U8(2), s)
	rows := Load(Param("rows"), GP64())
	rs := newTransposeRows(q, s)

	Label("inz_loop")
	TESTQ(c, c)
	JZ(LabelRef("inz_done"))
	rs.set()
	k := transposeColMask(c, "inz")
	v := zerosZ(16)
	// Rows past the block's rows stay zero (and are not read).
	for i := range 16 {
		skipUnless(rows, i, "inz_loaded")
		VMOVUPS_Z(rs.row(i), k, v[i])
	}
	Label("inz_loaded")
	transpose16(v)
	for i := range 16 {
		if i > 0 {
			skipUnless(c, i, "inz_stored")
		}
		VMOVUPS(v[i], Mem{Base: qt, Disp: 64 * i})
	}
	Label("inz_stored")
	ADDQ(U32(64*16), qt)
	ADDQ(U8(64), q)
	SUBQ(U8(16), c)
	JG(LabelRef("inz_loop"))
	Label("inz_done")
	VZEROUPPER()
	RET()
}

func genBlockOutZ() {
	o := Load(Param("o").Base(), GP64())
	s := Load(Param("stride"), GP64())
	SHLQ(U8(2), s)
	rows := Load(Param("rows"), GP64())
	ot := Load(Param("ot").Base(), GP64())
	c := Load(Param("ot").Len(), GP64())
	SHRQ(U8(4), c) // columns left
	rs := newTransposeRows(o, s)

	Label("outz_loop")
	TESTQ(c, c)
	JZ(LabelRef("outz_done"))
	rs.set()
	v := zerosZ(16)
	for i := range 16 {
		if i > 0 {
			skipUnless(c, i, "outz_loaded")
		}
		VMOVUPS(Mem{Base: ot, Disp: 64 * i}, v[i])
	}
	Label("outz_loaded")
	transpose16(v)
	k := transposeColMask(c, "outz")
	for i := range 16 {
		skipUnless(rows, i, "outz_stored")
		VMOVUPS(v[i], k, rs.row(i))
	}
	Label("outz_stored")
	ADDQ(U32(64*16), ot)
	ADDQ(U8(64), o)
	SUBQ(U8(16), c)
	JG(LabelRef("outz_loop"))
	Label("outz_done")
	VZEROUPPER()
	RET()
}
