package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx512["blockKeep16"] = genBlockKeepZ
}

// genBlockKeepZ is genBlockKeep with opmasks: the flags of a key's sixteen
// rows become the write mask of one store of -Inf, so the scores are
// neither read nor blended. Register v[i] holds rows i, i+4, i+8, i+12 of
// a group of sixteen keys, one row per 128-bit lane; two rounds of in-lane
// unpacks (bytes, words) leave in w[q], lane L, dword j the flags of key
// 4q+j for rows 4L..4L+3, and one dword permute gathers each key's four
// dwords into a lane of its own, rows in order. A byte test then sets
// bit 16j+r of a 64-bit opmask where key 4q+j is masked for row r.
func genBlockKeepZ() {
	st := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(8), n) // groups of 16 keys (256 floats)
	p := Load(Param("keep").Base(), GP64())
	s := Load(Param("stride"), GP64())
	s3 := GP64()
	LEAQ(Mem{Base: s, Index: s, Scale: 2}, s3)
	ninf := ZMM()
	VBROADCASTSS(vec32("keep_ninf", 0xff800000), ninf)
	perm := ZMM()
	VMOVDQU32(keepLaneTranspose(), perm)

	Label("keepz_loop")
	TESTQ(n, n)
	JZ(LabelRef("keepz_done"))
	// base[L] is row 4L; row 4L+i is at base[L] + i·stride.
	base := []Register{p, GP64(), GP64(), GP64()}
	for L := 1; L < 4; L++ {
		LEAQ(Mem{Base: base[L-1], Index: s, Scale: 4}, base[L])
	}
	rowOf := func(L, i int) Mem {
		switch i {
		case 1:
			return Mem{Base: base[L], Index: s, Scale: 1}
		case 2:
			return Mem{Base: base[L], Index: s, Scale: 2}
		case 3:
			return Mem{Base: base[L], Index: s3, Scale: 1}
		}
		return Mem{Base: base[L]}
	}
	v := make([]VecVirtual, 4)
	for i := range v {
		v[i] = ZMM()
		VBROADCASTI32X4(rowOf(0, i), v[i])
		for L := 1; L < 4; L++ {
			VINSERTI32X4(U8(L), rowOf(L, i), v[i], v[i])
		}
	}
	// Round 1: bytes of rows (i, i+1): keys 0–7 (lo) and 8–15 (hi).
	lo01, hi01, lo23, hi23 := ZMM(), ZMM(), ZMM(), ZMM()
	VPUNPCKLBW(v[1], v[0], lo01)
	VPUNPCKHBW(v[1], v[0], hi01)
	VPUNPCKLBW(v[3], v[2], lo23)
	VPUNPCKHBW(v[3], v[2], hi23)
	// Round 2: words of the two pairs, keys in fours.
	w := []VecVirtual{ZMM(), ZMM(), ZMM(), ZMM()}
	VPUNPCKLWD(lo23, lo01, w[0])
	VPUNPCKHWD(lo23, lo01, w[1])
	VPUNPCKLWD(hi23, hi01, w[2])
	VPUNPCKHWD(hi23, hi01, w[3])
	for q := range 4 {
		t := ZMM()
		VPERMD(w[q], perm, t)
		m := K()
		VPTESTNMB(t, t, m)
		// Four keys every row keeps (most, under a padding mask) need no
		// store. A masked store whose mask is zero costs a microcode
		// assist on a page not yet written, some 130 ns each here.
		skip := fmt.Sprintf("keepz_kept%d", q)
		KORTESTQ(m, m)
		JZ(LabelRef(skip))
		for j := range 4 {
			// A zmm store of dwords uses the low 16 bits of its mask.
			kj := m
			if j > 0 {
				kj = K()
				KSHIFTRQ(U8(16*j), m, kj)
			}
			VMOVUPS(ninf, kj, Mem{Base: st, Disp: 64 * (4*q + j)})
		}
		Label(skip)
	}
	ADDQ(U32(64*16), st)
	ADDQ(U8(16), p)
	DECQ(n)
	JMP(LabelRef("keepz_loop"))
	Label("keepz_done")
	VZEROUPPER()
	RET()
}

// keepLaneTranspose returns the dword indices of a 4×4 transpose of the
// lanes of a ZMM: dword 4j+L of the result is dword 4L+j of the source.
func keepLaneTranspose() Mem {
	var idx [16]uint32
	for p := range idx {
		idx[p] = uint32(p%4*4 + p/4)
	}
	return permZ(idx)
}
