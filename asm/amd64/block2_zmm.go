package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The block score kernel for two blocks of sixteen query rows at once:
// each key element is broadcast into a register once and meets both
// blocks' row vectors, two FMAs per load where blockScores has one. That
// load is what bounds blockScores on sixteen lanes (see block_zmm.go): on
// Zen 5 a loop of FMAs with a broadcast operand ran at 87% of the FMA peak
// of register operands, with a row vector loaded per sixteen of them
// (blockScores' pattern) at 80%, and with two row vectors and an explicit
// broadcast per two FMAs (this kernel's) at 97%.

func init() {
	avx512["blockScores2"] = genBlockScores2Z
}

// blockGroup2Z is how many keys share one pass: two accumulators each (24
// registers), the two row vectors and the broadcast fill 27 of 32.
const blockGroup2Z = 12

func genBlockScores2Z() {
	st := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(5), n) // keys
	sh := GP64()   // bytes from block 0's scores to block 1's
	MOVQ(n, sh)
	SHLQ(U8(6), sh)
	qt := Load(Param("qt").Base(), GP64())
	qh := Load(Param("qt").Len(), GP64()) // bytes from block 0's rows to block 1's
	SHLQ(U8(1), qh)
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)

	for _, W := range []int{blockGroup2Z, 8, 4, 2, 1} {
		loop, next := fmt.Sprintf("scores2z%d_loop", W), fmt.Sprintf("scores2z%d_next", W)
		Label(loop)
		CMPQ(n, U8(W))
		JL(LabelRef(next))

		bases := []Register{GP64()}
		MOVQ(k, bases[0])
		for b := 1; b < (W+3)/4; b++ {
			bases = append(bases, GP64())
			LEAQ(Mem{Base: bases[b-1], Index: stride, Scale: 4}, bases[b])
		}
		row := blockRowsZ(bases, stride, s3)
		qp, cnt := GP64(), GP64()
		MOVQ(qt, qp)
		MOVQ(qh, cnt)
		SHRQ(U8(6), cnt) // dimensions
		acc0, acc1 := zerosZ(W), zerosZ(W)
		// step(u) emits dimension u of a block of dimensions at the
		// current pointers, each accumulator's FMAs in dimension order as
		// in blockScores, with the key element in the same operand.
		step := func(u int) {
			q0, q1 := ZMM(), ZMM()
			VMOVUPS(Mem{Base: qp, Disp: 64 * u}, q0)
			VMOVUPS(Mem{Base: qp, Index: qh, Scale: 1, Disp: 64 * u}, q1)
			for w := range W {
				m := row(w)
				m.Disp += 4 * u
				b := ZMM()
				VBROADCASTSS(m, b)
				VFMADD231PS(b, q0, acc0[w])
				VFMADD231PS(b, q1, acc1[w])
			}
		}
		advance := func(U int) {
			ADDQ(U32(64*U), qp)
			for _, b := range bases {
				ADDQ(U8(4*U), b)
			}
		}
		unrolled(fmt.Sprintf("scores2z%d", W), cnt, step, advance)

		for w := range W {
			VMOVUPS(acc0[w], Mem{Base: st, Disp: 64 * w})
			VMOVUPS(acc1[w], Mem{Base: st, Index: sh, Scale: 1, Disp: 64 * w})
		}
		ADDQ(U32(64*W), st)
		adv := GP64()
		MOVQ(stride, adv)
		if W > 1 {
			IMUL3Q(U8(W), adv, adv)
		}
		ADDQ(adv, k)
		SUBQ(U8(W), n)
		JMP(LabelRef(loop))
		Label(next)
	}
	VZEROUPPER()
	RET()
}
