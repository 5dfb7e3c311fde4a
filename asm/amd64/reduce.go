package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// genMax: the largest element, NaN if any element is NaN, -Inf if empty.
// VMAXPS drops a NaN in one operand or the other depending on position, so
// NaNs are tracked apart: an unordered self-compare ORed into a flag.
func genMax() {
	TEXT("maxAVX2", NOSPLIT, "func(x []float32) float32")
	Pragma("noescape")
	Doc("maxAVX2 returns the largest x[i], NaN if any is NaN, -Inf if x is empty.")
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	ninf := vec32("neginf", math.Float32bits(float32(math.Inf(-1))))
	m := make([]VecVirtual, 4)
	for i := range m {
		m[i] = YMM()
		VMOVUPS(ninf, m[i])
	}
	nan := zeros(1)[0]
	step := func(t VecVirtual, i int) {
		u := YMM()
		VCMPPS(U8(3), t, t, u) // unordered: t is NaN
		VORPS(u, nan, nan)
		VMAXPS(t, m[i], m[i])
	}

	stream("max", n, []Register{x}, func(u int, mask VecVirtual) {
		t := YMM()
		if mask == nil {
			VMOVUPS(Mem{Base: x, Disp: 32 * u}, t)
		} else {
			lt := YMM()
			VMASKMOVPS(Mem{Base: x}, mask, lt)
			VMOVUPS(ninf, t)
			VBLENDVPS(mask, lt, t, t) // lanes past the end count as -Inf
		}
		step(t, u)
	})

	Label("max_reduce")
	VMAXPS(m[1], m[0], m[0])
	VMAXPS(m[3], m[2], m[2])
	VMAXPS(m[2], m[0], m[0])
	hi := XMM()
	VEXTRACTF128(U8(1), m[0], hi)
	lo := m[0].AsX()
	VMAXPS(hi, lo, lo)
	sh := XMM()
	VPERMILPS(U8(0x4e), lo, sh) // swap 64-bit halves
	VMAXPS(sh, lo, lo)
	VPERMILPS(U8(0xb1), lo, sh) // swap neighbours
	VMAXPS(sh, lo, lo)
	VPTEST(nan, nan)
	JZ(LabelRef("max_ret"))
	VMOVSS(vec32("qnan", 0x7fc00000), lo)
	Label("max_ret")
	Store(lo, ReturnIndex(0))
	VZEROUPPER()
	RET()
}

// genScale: x[i] *= s.
func genScale() {
	TEXT("scaleAVX2", NOSPLIT, "func(s float32, x []float32)")
	Pragma("noescape")
	Doc("scaleAVX2 sets x[i] *= s.")
	s := YMM()
	VBROADCASTSS(paramAddr("s"), s)
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())

	stream("scale", n, []Register{x}, func(u int, mask VecVirtual) {
		m := Mem{Base: x, Disp: 32 * u}
		t := YMM()
		if mask == nil {
			VMULPS(m, s, t)
			VMOVUPS(t, m)
			return
		}
		VMASKMOVPS(m, mask, t)
		VMULPS(t, s, t)
		VMASKMOVPS(t, mask, m)
	})
	VZEROUPPER()
	RET()
}
