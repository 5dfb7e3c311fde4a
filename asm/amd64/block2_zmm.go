package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The block score and blend kernels for two blocks of sixteen query rows
// at once: each key or value element is broadcast into a register once and
// meets both blocks' row vectors, two FMAs per load where blockScores and
// blockBlend have one. That load is what bounds blockScores on sixteen
// lanes (see block_zmm.go): a loop of FMAs with two row vectors and an
// explicit broadcast per two FMAs (this kernel's pattern) came nearer the
// FMA peak of register operands than blockScores' (measured:
// docs/performance/amd-epyc-zen5.md#two-blocks-per-broadcast-from-code-comments).

func init() {
	avx512["blockScores2"] = genBlockScores2Z
	avx512["blockBlend2"] = genBlockBlend2Z
}

// blockGroup2Z is how many keys share one pass: two accumulators each (24
// registers), the two row vectors and the broadcast fill 27 of 32.
const blockGroup2Z = 12

// genBlockScores2Z emits blockScores2: two blocks' scores of one pass over
// the keys, two FMAs per broadcast key element.
func genBlockScores2Z() {
	prefix := "scores2z"
	st := Load(Param("st0").Base(), GP64())
	sh := Load(Param("st1").Base(), GP64()) // from block 0's scores to block 1's
	SUBQ(st, sh)
	n := Load(Param("st0").Len(), GP64())
	SHRQ(U8(4), n) // keys
	qt := Load(Param("qt0").Base(), GP64())
	qh := Load(Param("qt1").Base(), GP64()) // from block 0's rows to block 1's
	SUBQ(qt, qh)
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)

	keyGroupsZ(prefix, blockGroup2Z, n, k, qt, stride, s3, "qt0", func(W int, row func(int) Mem, qp, cnt Register, advance func(U int)) {
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
		unrolled(fmt.Sprintf("%s%d", prefix, W), cnt, step, advance)

		for w := range W {
			VMOVUPS(acc0[w], Mem{Base: st, Disp: 64 * w})
			VMOVUPS(acc1[w], Mem{Base: st, Index: sh, Scale: 1, Disp: 64 * w})
		}
		ADDQ(U32(64*W), st)
	})
	VZEROUPPER()
	RET()
}

// genBlockBlend2Z is genBlockBlendZ for two blocks: groups of
// blockGroup2Z columns whose two sets of accumulators stay in registers
// while the keys go past, each group fetching into L2 the columns of its
// rows that the next group reads (every cache line of a row holds the
// last column of some group of 12 too). Each accumulator takes its FMAs in
// key order with the value element in blockBlend's operand, so each block
// gets blockBlend's bits.
func genBlockBlend2Z() {
	ot := Load(Param("ot0").Base(), GP64())
	oh := Load(Param("ot1").Base(), GP64()) // from block 0's output lanes to block 1's
	SUBQ(ot, oh)
	dv := Load(Param("ot0").Len(), GP64())
	SHRQ(U8(4), dv) // columns
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	sh := Load(Param("st1").Base(), GP64()) // from block 0's weights to block 1's
	Load(Param("st0").Base(), s3)
	SUBQ(s3, sh)
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	// The rescale factors: none if c0 is empty; ch from c0 to c1.
	scale, ch := GP64(), GP64()
	Load(Param("c0").Len(), scale)
	TESTQ(scale, scale)
	JZ(LabelRef("blend2z_noc"))
	Load(Param("c0").Base(), scale)
	Load(Param("c1").Base(), ch)
	SUBQ(scale, ch)
	Label("blend2z_noc")

	blockGroupsZ("blend2z", blockGroup2Z, dv, func(W int) {
		acc0, acc1 := make([]VecVirtual, W), make([]VecVirtual, W)
		for i := range W {
			acc0[i] = loadZ(Mem{Base: ot, Disp: 64 * i}, nil)
			acc1[i] = loadZ(Mem{Base: ot, Index: oh, Scale: 1, Disp: 64 * i}, nil)
		}
		scaled := fmt.Sprintf("blend2z%d_scaled", W)
		TESTQ(scale, scale)
		JZ(LabelRef(scaled))
		for i := range W {
			VMULPS(Mem{Base: scale}, acc0[i], acc0[i])
			VMULPS(Mem{Base: scale, Index: ch, Scale: 1}, acc1[i], acc1[i])
		}
		Label(scaled)
		valueKeysZ(fmt.Sprintf("blend2z%d", W), W, v, stride, s3, "st0", func(sp Register, u int) func(row Mem) {
			p0 := loadZ(Mem{Base: sp, Disp: 64 * u}, nil)
			p1 := loadZ(Mem{Base: sp, Index: sh, Scale: 1, Disp: 64 * u}, nil)
			return func(row Mem) {
				for w := range W {
					m := row
					m.Disp = 4 * w
					b := ZMM()
					VBROADCASTSS(m, b)
					VFMADD231PS(b, p0, acc0[w])
					VFMADD231PS(b, p1, acc1[w])
				}
			}
		})
		for i := range W {
			storeZ(acc0[i], Mem{Base: ot, Disp: 64 * i}, nil)
			storeZ(acc1[i], Mem{Base: ot, Index: oh, Scale: 1, Disp: 64 * i}, nil)
		}
		ADDQ(U32(64*W), ot)
		ADDQ(U8(4*W), v)
	})
	VZEROUPPER()
	RET()
}
