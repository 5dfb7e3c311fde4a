package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx2["blockKeep16"] = genBlockKeep
}

// genBlockKeep emits the keep-mask step of the block path: sixteen rows of
// flags (bytes, 0 = masked) become -Inf scores in the lanes of st, sixteen
// keys at a time. Rows r and r+8 share a YMM register (one per 128-bit
// lane), so the in-lane unpacks transpose both halves of the block at once:
// three rounds (bytes, words, dwords) leave in one register the flags of
// two keys, rows 0–7 in the low lane and 8–15 in the high one. Each key's
// eight flags then sign-extend to the lane mask of a blend.
func genBlockKeep() {
	st := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(8), n) // groups of 16 keys (256 floats)
	p := Load(Param("keep").Base(), GP64())
	s := Load(Param("stride"), GP64())
	s3, p4 := GP64(), GP64()
	LEAQ(Mem{Base: s, Index: s, Scale: 2}, s3)
	ninf := vec32("keep_ninf", 0xff800000)
	zero := vec32("keep_zero", 0)

	Label("keep_loop")
	TESTQ(n, n)
	JZ(LabelRef("keep_done"))
	LEAQ(Mem{Base: p, Index: s, Scale: 4}, p4)
	p8, p12 := GP64(), GP64()
	LEAQ(Mem{Base: p, Index: s, Scale: 8}, p8)
	LEAQ(Mem{Base: p4, Index: s, Scale: 8}, p12)
	// Rows 0–3 then 4–7 (with 8–11, 12–15 in the high lanes), so that few
	// registers are live at once: w[q] and w[4+q] hold the flags of keys
	// 4q .. 4q+3 for rows 0–3 and 4–7. The registers are named by hand:
	// avo's allocator would hand out Y16 and above (AVX-512 only).
	w := []VecPhysical{Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	v := []VecPhysical{Y0, Y1, Y2, Y3}
	b := []VecPhysical{Y4, Y5}
	for h := range 2 {
		// v[i] = [row 4h+i | row 4h+i+8], masked bytes 0xff.
		for i, r := range v {
			lo, hi := rowAddr(p, p4, s, s3, 4*h+i), rowAddr(p8, p12, s, s3, 4*h+i)
			VMOVDQU(lo, r.AsX())
			VINSERTI128(U8(1), hi, r, r)
			VPCMPEQB(zero, r, r)
		}
		// Round 1, bytes of rows (0, 1) and (2, 3): keys 0–7 or 8–15;
		// round 2, words of the two pairs: keys in fours.
		for k := range 2 {
			for i, r := range b {
				if k == 0 {
					VPUNPCKLBW(v[2*i+1], v[2*i], r)
				} else {
					VPUNPCKHBW(v[2*i+1], v[2*i], r)
				}
			}
			VPUNPCKLWD(b[1], b[0], w[4*h+2*k])
			VPUNPCKHWD(b[1], b[0], w[4*h+2*k+1])
		}
	}
	// Round 3: dwords of rows 0–3 and 4–7, two keys a register.
	lo, hi, upper, m, t := Y0, Y1, Y2, Y3, Y4
	for q := range 4 { // keys 4q .. 4q+3
		VPUNPCKLDQ(w[4+q], w[q], lo)
		VPUNPCKHDQ(w[4+q], w[q], hi)
		for u, r := range []VecPhysical{lo, hi} {
			key := 4*q + 2*u
			VEXTRACTI128(U8(1), r, upper.AsX())
			for e := range 2 { // key, key+1
				if e == 1 {
					VPSRLDQ(U8(8), r, r)
					VPSRLDQ(U8(8), upper, upper)
				}
				for half, src := range []VecPhysical{r, upper} {
					VPMOVSXBD(src.AsX(), m)
					at := Mem{Base: st, Disp: 64*(key+e) + 32*half}
					VMOVUPS(at, t)
					VBLENDVPS(m, ninf, t, t)
					VMOVUPS(t, at)
				}
			}
		}
	}
	ADDQ(U32(64*16), st)
	ADDQ(U8(16), p)
	DECQ(n)
	JMP(LabelRef("keep_loop"))
	Label("keep_done")
	VZEROUPPER()
	RET()
}
