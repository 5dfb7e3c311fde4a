package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx512["scoreRowsF16"] = func() { genScoreRows16(zmm16, widenF16) }
	avx512["scoreRowsBF16"] = func() { genScoreRows16(zmm16, widenBF16) }
	avx512["blendRowsF16"] = func() { genBlendRows16(zmm16, widenF16) }
	avx512["blendRowsBF16"] = func() { genBlendRows16(zmm16, widenBF16) }
}

// zmm16 is lanes16 for sixteen lanes: a ymm of halfwords widens to a
// zmm of floats, and the tail's halfwords come through a zeroing
// VMOVDQU16 under the tail's opmask, which reads no byte past them.
var zmm16 = lanes16{
	lanes: 16,
	vec:   func() VecVirtual { return ZMM() },
	zeros: zerosZ,
	tail:  func(n Register) Op { return tailK(n) },
	load:  loadZ,
	store: storeZ,
	part: func(m Mem, _ Register, mask Op, w widen16) VecVirtual {
		y, z := YMM(), ZMM()
		VMOVDQU16_Z(m, mask, y)
		w(y, z)
		return z
	},
	sums: storeRowsSums,
}
