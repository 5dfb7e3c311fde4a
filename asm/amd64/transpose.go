package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx2["blockIn"] = genBlockIn
	avx2["blockOut"] = genBlockOut
}

// The block path's transposes between row-major rows (queries in, outputs
// out) and the lane layout of internal/kernel/block_generic.go, in 8×8 tiles: eight
// unpacks, eight shuffles and eight lane permutes per 64 floats.

// transpose8 transposes the 8×8 tile held in v (v[i] = row i) in place.
func transpose8(v []VecVirtual) {
	t := make([]VecVirtual, 8)
	for i := 0; i < 8; i += 2 {
		t[i], t[i+1] = YMM(), YMM()
		VUNPCKLPS(v[i+1], v[i], t[i])
		VUNPCKHPS(v[i+1], v[i], t[i+1])
	}
	u := make([]VecVirtual, 8)
	for i := 0; i < 8; i += 4 {
		for k, imm := range []uint8{0x44, 0xee} {
			u[i+k], u[i+2+k] = YMM(), YMM()
			VSHUFPS(U8(imm), t[i+2], t[i], u[i+k])
			VSHUFPS(U8(imm), t[i+3], t[i+1], u[i+2+k])
		}
	}
	// u[0..3] hold columns 0, 1, 2, 3 of rows 0–3 (low lane) and 4–7 of
	// the same rows (high lane); u[4..7] the same for rows 4–7.
	for k := range 4 {
		VPERM2F128(U8(0x20), u[4+k], u[k], v[k])
		VPERM2F128(U8(0x31), u[4+k], u[k], v[4+k])
	}
}

// rowAddr returns the address of row i (< 8) of a tile whose row 0 is at
// p and row 4 at p4, rows s bytes apart (s3 = 3s).
func rowAddr(p, p4, s, s3 Register, i int) Mem {
	base := p
	if i >= 4 {
		base, i = p4, i-4
	}
	switch i {
	case 1:
		return Mem{Base: base, Index: s, Scale: 1}
	case 2:
		return Mem{Base: base, Index: s, Scale: 2}
	case 3:
		return Mem{Base: base, Index: s3, Scale: 1}
	}
	return Mem{Base: base}
}

// skipUnless jumps to label unless count > i.
func skipUnless(count Register, i int, label string) {
	CMPQ(count, U8(i+1))
	JL(LabelRef(label))
}

func genBlockIn() {
	qt := Load(Param("qt").Base(), GP64())
	d := Load(Param("qt").Len(), GP64())
	SHRQ(U8(4), d)
	q := Load(Param("q").Base(), GP64())
	s := Load(Param("stride"), GP64())
	SHLQ(U8(2), s)
	rows := Load(Param("rows"), GP64())
	s3 := GP64()
	LEAQ(Mem{Base: s, Index: s, Scale: 2}, s3)

	for half := range 2 {
		// vr: rows of this half, 0..8.
		vr := GP64()
		MOVQ(rows, vr)
		if half == 1 {
			SUBQ(U8(8), vr)
		}
		p, p4, c, rem := GP64(), GP64(), GP64(), GP64()
		MOVQ(q, p)
		if half == 1 {
			LEAQ(Mem{Base: p, Index: s, Scale: 8}, p)
		}
		LEAQ(Mem{Base: p, Index: s, Scale: 4}, p4)
		out := GP64()
		LEAQ(Mem{Base: qt, Disp: 32 * half}, out)
		MOVQ(d, c)
		name := fmt.Sprintf("in%d", half)
		Label(name + "_loop")
		TESTQ(c, c)
		JZ(LabelRef(name + "_done"))
		MOVQ(c, rem)
		var mask VecVirtual
		full := name + "_full"
		CMPQ(rem, U8(8))
		JGE(LabelRef(full))
		mask = tailMask(rem)
		Label(full)
		v := make([]VecVirtual, 8)
		for i := range v {
			v[i] = YMM()
			VXORPS(v[i], v[i], v[i])
		}
		// Rows past the block's rows stay zero; a last partial chunk of
		// columns is loaded through the mask.
		for i := range 8 {
			skip := fmt.Sprintf("%s_r%d", name, i)
			skipUnless(vr, i, skip)
			partial := fmt.Sprintf("%s_p%d", name, i)
			CMPQ(rem, U8(8))
			JL(LabelRef(partial))
			VMOVUPS(rowAddr(p, p4, s, s3, i), v[i])
			JMP(LabelRef(skip))
			Label(partial)
			VMASKMOVPS(rowAddr(p, p4, s, s3, i), mask, v[i])
			Label(skip)
		}
		transpose8(v)
		for k := range 8 {
			if k > 0 {
				skipUnless(rem, k, name+"_stored")
			}
			VMOVUPS(v[k], Mem{Base: out, Disp: 64 * k})
		}
		Label(name + "_stored")
		ADDQ(U32(64*8), out)
		ADDQ(U8(32), p)
		ADDQ(U8(32), p4)
		SUBQ(U8(8), c)
		JGE(LabelRef(name + "_loop"))
		Label(name + "_done")
	}
	VZEROUPPER()
	RET()
}

func genBlockOut() {
	o := Load(Param("o").Base(), GP64())
	s := Load(Param("stride"), GP64())
	SHLQ(U8(2), s)
	rows := Load(Param("rows"), GP64())
	ot := Load(Param("ot").Base(), GP64())
	d := Load(Param("ot").Len(), GP64())
	SHRQ(U8(4), d)
	s3 := GP64()
	LEAQ(Mem{Base: s, Index: s, Scale: 2}, s3)

	for half := range 2 {
		name := fmt.Sprintf("out%d", half)
		vr := GP64()
		MOVQ(rows, vr)
		if half == 1 {
			SUBQ(U8(8), vr)
			JLE(LabelRef(name + "_done"))
		}
		p, p4, c, rem := GP64(), GP64(), GP64(), GP64()
		MOVQ(o, p)
		if half == 1 {
			LEAQ(Mem{Base: p, Index: s, Scale: 8}, p)
		}
		LEAQ(Mem{Base: p, Index: s, Scale: 4}, p4)
		in := GP64()
		LEAQ(Mem{Base: ot, Disp: 32 * half}, in)
		MOVQ(d, c)
		Label(name + "_loop")
		TESTQ(c, c)
		JZ(LabelRef(name + "_done"))
		MOVQ(c, rem)
		v := make([]VecVirtual, 8)
		for k := range v {
			v[k] = YMM()
			VXORPS(v[k], v[k], v[k])
		}
		for k := range 8 {
			if k > 0 {
				skipUnless(rem, k, name+"_loaded")
			}
			VMOVUPS(Mem{Base: in, Disp: 64 * k}, v[k])
		}
		Label(name + "_loaded")
		transpose8(v)
		var mask VecVirtual
		full := name + "_full"
		CMPQ(rem, U8(8))
		JGE(LabelRef(full))
		mask = tailMask(rem)
		Label(full)
		for i := range 8 {
			skipUnless(vr, i, name+"_stored")
			partial, next := fmt.Sprintf("%s_p%d", name, i), fmt.Sprintf("%s_n%d", name, i)
			CMPQ(rem, U8(8))
			JL(LabelRef(partial))
			VMOVUPS(v[i], rowAddr(p, p4, s, s3, i))
			JMP(LabelRef(next))
			Label(partial)
			VMASKMOVPS(v[i], mask, rowAddr(p, p4, s, s3, i))
			Label(next)
		}
		Label(name + "_stored")
		ADDQ(U32(64*8), in)
		ADDQ(U8(32), p)
		ADDQ(U8(32), p4)
		SUBQ(U8(8), c)
		JGE(LabelRef(name + "_loop"))
		Label(name + "_done")
	}
	VZEROUPPER()
	RET()
}
