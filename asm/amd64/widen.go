package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// The widening kernels: a run of 16-bit elements to float32, for the
// block kernels, which broadcast each key element to their lanes and so
// take float32 rows (the engine widens a tile of 16-bit rows once for
// all sixteen). One generator serves both widths and both formats.

func init() {
	avx2["widenF16"] = func() { genWiden16(ymm16, widenF16) }
	avx2["widenBF16"] = func() { genWiden16(ymm16, widenBF16) }
	avx512["widenF16"] = func() { genWiden16(zmm16, widenF16) }
	avx512["widenBF16"] = func() { genWiden16(zmm16, widenBF16) }
}

// genWiden16: dst[i] = widen(src[i]) for i < len(dst), four vectors a
// step, then one, then the tail through l.part (which reads no halfword
// past the last) and a masked store.
func genWiden16(l lanes16, w widen16) {
	dst := Load(Param("dst").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())
	src := Load(Param("src").Base(), GP64())
	// The last address from which a step's prefetches keep inside src
	// (see keepInside).
	lim := Load(Param("src").Len(), GP64())
	SHLQ(U8(1), lim)
	ADDQ(src, lim)
	SUBQ(U32(widenAhead+2*l.lanes*4), lim)
	for _, U := range []int{4, 1} {
		loop, next := fmt.Sprintf("%s_loop%d", fn, l.lanes*U), fmt.Sprintf("%s_next%d", fn, l.lanes*U)
		Label(loop)
		CMPQ(n, U8(l.lanes*U))
		JL(LabelRef(next))
		if U == 4 {
			// The rows a few calls on: the engine widens a run of rows
			// 16 KiB of floats at a time, in address order.
			far := fmt.Sprintf("%s_far%d", fn, l.lanes*U)
			CMPQ(src, lim)
			JHI(LabelRef(far))
			for off := 0; off < 2*l.lanes*U; off += 64 {
				PREFETCHT0(Mem{Base: src, Disp: widenAhead + off})
			}
			Label(far)
		}
		for u := range U {
			v := l.vec()
			w(Mem{Base: src, Disp: 2 * l.lanes * u}, v)
			l.store(v, Mem{Base: dst, Disp: 4 * l.lanes * u}, nil)
		}
		ADDQ(U32(2*l.lanes*U), src)
		ADDQ(U32(4*l.lanes*U), dst)
		SUBQ(U8(l.lanes*U), n)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(n, n)
	JZ(LabelRef(fn + "_done"))
	mask := l.tail(n)
	v := l.part(Mem{Base: src}, n, mask, w)
	l.store(v, Mem{Base: dst}, mask)
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}

// widenAhead is how many bytes ahead of its loads the widening prefetches:
// two of the engine's calls on at d = 128. Its loads are the block path's
// only reads of K and V from memory, and without the hint a 4-row verify
// over an f16 cache was far slower (measured:
// docs/performance/amd-epyc-zen5.md#widening-16-bit-rows-for-the-block-path-from-code-comments).
const widenAhead = 4096
