package main

import (
	"fmt"

	"github.com/glancelab/attention/internal/kernels"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The shared pieces of the avx512 implementation: sixteen lanes per
// register, tails through opmask registers (a masked load reads, and a
// masked store writes, only the lanes its mask sets, and faults on no
// other byte), constants as 4-byte globals read with embedded broadcast.

// tailK loads into a new opmask register the mask whose first n lanes are
// set (1 <= n <= 15): entry n of a table of 16-bit masks.
func tailK(n Register) OpmaskVirtual {
	if _, ok := consts["ktable"]; !ok {
		m := GLOBL("ktable", RODATA|NOPTR)
		for i := range 16 {
			DATA(2*i, U16(uint16(1)<<i-1))
		}
		consts["ktable"] = m
	}
	base := GP64()
	LEAQ(consts["ktable"], base)
	k := K()
	KMOVW(Mem{Base: base, Index: n, Scale: 2}, k)
	return k
}

// loadZ loads 16 floats from m into a new register, or with a mask only
// the lanes it sets (the others are zero).
func loadZ(m Mem, mask Op) VecVirtual {
	z := ZMM()
	if mask == nil {
		VMOVUPS(m, z)
	} else {
		VMOVUPS_Z(m, mask, z)
	}
	return z
}

// storeZ stores z to m, or with a mask only the lanes it sets.
func storeZ(z VecVirtual, m Mem, mask Op) {
	if mask == nil {
		VMOVUPS(z, m)
	} else {
		VMOVUPS(z, mask, m)
	}
}

// zerosZ returns n ZMM registers set to zero: the first by a broadcast
// load, the rest by XOR of the first with itself. avo's liveness takes a
// register XORed with itself as read before it is written, so it would
// hold that register from the function's entry on, which the kernels that
// need all 32 cannot afford; the first is written just before. The XOR is
// a zero idiom, done at rename on Intel and AMD cores, where a broadcast
// load a register took a slot of an FP pipe on a Zen 4, which the
// multi-row scores, zeroing sixteen accumulators a block of keys, felt
// (measured: docs/performance/amd-epyc-zen4.md#zeroing-by-xor-from-code-comments).
func zerosZ(n int) []VecVirtual {
	v := make([]VecVirtual, n)
	for i := range v {
		v[i] = ZMM()
		if i == 0 {
			VBROADCASTSS(vec32("zero", 0), v[i])
		} else {
			VPXORD(v[0], v[0], v[i])
		}
	}
	return v
}

// hsumZ adds the 16 lanes of z and returns the sum in the low lane of an
// XMM, in hsum's tree after the two halves are added, with instructions
// that all have EVEX forms: VEXTRACTF128 cannot encode the registers 16 to
// 31, which avo hands out under pressure.
func hsumZ(z VecVirtual) VecVirtual {
	hi := YMM()
	VEXTRACTF64X4(U8(1), z, hi)
	lo := z.AsY().(VecVirtual)
	VADDPS(hi, lo, lo)
	h := XMM()
	VEXTRACTF32X4(U8(1), lo, h)
	x := lo.AsX()
	VADDPS(h, x, x)
	t := XMM()
	VMOVSHDUP(x, t)
	VADDPS(t, x, x) // lanes 0 and 2 hold pair sums
	VMOVHLPS(x, t, t)
	VADDSS(t, x, x)
	return x.(VecVirtual)
}

// permZ returns a 64-byte read-only global holding a VPERMPS/VPERMD index
// of the 16 lanes, one per distinct index.
func permZ(idx [16]uint32) Mem {
	name := "permz"
	for _, i := range idx {
		name += fmt.Sprintf("_%d", i)
	}
	return dwords(name, idx[:])
}

// streamZ is stream for sixteen lanes: blocks of four vectors, then single
// vectors, then a tail under an opmask. body(u, mask) emits the work on
// vector u at the current pointers (mask is nil but for the tail); the
// pointers in ptrs then advance together.
func streamZ(name string, n Register, ptrs []Register, body func(u int, mask Op)) {
	for _, U := range []int{4, 1} {
		loop, next := fmt.Sprintf("%s_loop%d", name, 16*U), fmt.Sprintf("%s_next%d", name, 16*U)
		Label(loop)
		CMPQ(n, U8(16*U))
		JL(LabelRef(next))
		for u := range U {
			body(u, nil)
		}
		for _, p := range ptrs {
			ADDQ(U32(64*U), p)
		}
		SUBQ(U8(16*U), n)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	body(0, tailK(n))
	Label(name + "_done")
}

// chunksOf returns the widths the kernel table gives avx512's functions of
// kernel name sections for, in vectors of sixteen floats.
func chunksOf(name string) []int {
	var nc []int
	for _, cols := range kernels.WidthsOf(name, "avx512") {
		nc = append(nc, cols/16)
	}
	return nc
}
