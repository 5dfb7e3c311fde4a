package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx2["max"] = genMax
	avx2["scale"] = genScale
	avx512["scale"] = genScaleZ
	avx512["max"] = genMaxZ
}

// genMax: the largest element, NaN if any element is NaN, -Inf if empty.
// VMAXPS drops a NaN in one operand or the other depending on position, so
// NaNs are tracked apart: an unordered self-compare ORed into a flag.
func genMax() {
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	ninf := vec32("neginf", math.Float32bits(float32(math.Inf(-1))))
	m := make([]VecVirtual, 4)
	for i := range m {
		m[i] = YMM()
		VMOVUPS(ninf, m[i])
	}
	// A NaN is looked for two vectors at a time: an unordered compare is
	// true where either operand is NaN, so the test costs half an
	// instruction per vector instead of one (VMAXPS itself drops a NaN
	// held in its first source).
	nan := zeros(1)[0]
	unordered := func(a, b VecVirtual) {
		u := YMM()
		VCMPPS(U8(3), a, b, u)
		VORPS(u, nan, nan)
	}
	load := func(u int) VecVirtual {
		t := YMM()
		VMOVUPS(Mem{Base: x, Disp: 32 * u}, t)
		return t
	}
	Label("max_loop32")
	CMPQ(n, U8(32))
	JL(LabelRef("max_loop8"))
	t := make([]VecVirtual, 4)
	for u := range t {
		t[u] = load(u)
		VMAXPS(t[u], m[u], m[u])
	}
	unordered(t[0], t[1])
	unordered(t[2], t[3])
	ADDQ(U32(128), x)
	SUBQ(U8(32), n)
	JMP(LabelRef("max_loop32"))

	Label("max_loop8")
	CMPQ(n, U8(8))
	JL(LabelRef("max_tail"))
	t1 := load(0)
	VMAXPS(t1, m[0], m[0])
	unordered(t1, t1)
	ADDQ(U8(32), x)
	SUBQ(U8(8), n)
	JMP(LabelRef("max_loop8"))

	Label("max_tail")
	TESTQ(n, n)
	JZ(LabelRef("max_reduce"))
	mask := tailMask(n)
	lt, tt := YMM(), YMM()
	VMASKMOVPS(Mem{Base: x}, mask, lt)
	VMOVUPS(ninf, tt)
	VBLENDVPS(mask, lt, tt, tt) // lanes past the end count as -Inf
	VMAXPS(tt, m[0], m[0])
	unordered(tt, tt)

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

// genScaleZ: genScale on sixteen lanes, the tail under an opmask.
func genScaleZ() {
	s := ZMM()
	VBROADCASTSS(paramAddr("s"), s)
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())

	streamZ("scale", n, []Register{x}, func(u int, mask Op) {
		m := Mem{Base: x, Disp: 64 * u}
		t := loadZ(m, mask)
		VMULPS(t, s, t)
		storeZ(t, m, mask)
	})
	VZEROUPPER()
	RET()
}

// genMaxZ: genMax on sixteen lanes. NaNs are looked for as there, two
// vectors to an unordered compare, into an opmask ORed into a flag mask:
// KORW's one-cycle chain, where a compare narrowing the mask under itself
// made a chain of the compare's latency (measured:
// docs/performance/amd-epyc-zen5.md#max-ors-its-compares-into-a-flag-mask-from-code-comments).
func genMaxZ() {
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	ninf := ZMM()
	VBROADCASTSS(vec32("neginf", math.Float32bits(float32(math.Inf(-1)))), ninf)
	m := make([]VecVirtual, 4)
	for i := range m {
		m[i] = ZMM()
		VMOVAPS(ninf, m[i])
	}
	nan := K()
	KXORW(nan, nan, nan)
	unordered := func(a, b VecVirtual) {
		u := K()
		VCMPPS(U8(3), b, a, u) // UNORD_Q
		KORW(u, nan, nan)
	}
	load := func(u int) VecVirtual {
		t := ZMM()
		VMOVUPS(Mem{Base: x, Disp: 64 * u}, t)
		return t
	}
	Label("max_loop64")
	CMPQ(n, U8(64))
	JL(LabelRef("max_loop16"))
	t := make([]VecVirtual, 4)
	for u := range t {
		t[u] = load(u)
		VMAXPS(m[u], t[u], m[u])
	}
	unordered(t[0], t[1])
	unordered(t[2], t[3])
	ADDQ(U32(256), x)
	SUBQ(U8(64), n)
	JMP(LabelRef("max_loop64"))

	Label("max_loop16")
	CMPQ(n, U8(16))
	JL(LabelRef("max_tail"))
	t1 := load(0)
	VMAXPS(m[0], t1, m[0])
	unordered(t1, t1)
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("max_loop16"))

	Label("max_tail")
	TESTQ(n, n)
	JZ(LabelRef("max_reduce"))
	tt := ZMM()
	VMOVAPS(ninf, tt)
	VMOVUPS(Mem{Base: x}, tailK(n), tt) // lanes past the end stay -Inf
	VMAXPS(m[0], tt, m[0])
	unordered(tt, tt)

	Label("max_reduce")
	VMAXPS(m[1], m[0], m[0])
	VMAXPS(m[3], m[2], m[2])
	VMAXPS(m[2], m[0], m[0])
	hi := YMM()
	VEXTRACTF64X4(U8(1), m[0], hi)
	y := m[0].AsY()
	VMAXPS(hi, y, y)
	hx := XMM()
	VEXTRACTF128(U8(1), y, hx)
	lo := m[0].AsX()
	VMAXPS(hx, lo, lo)
	sh := XMM()
	VPERMILPS(U8(0x4e), lo, sh) // swap 64-bit halves
	VMAXPS(sh, lo, lo)
	VPERMILPS(U8(0xb1), lo, sh) // swap neighbours
	VMAXPS(sh, lo, lo)
	KORTESTW(nan, nan)
	JZ(LabelRef("max_ret")) // ZF: no NaN
	VMOVSS(vec32("qnan", 0x7fc00000), lo)
	Label("max_ret")
	Store(lo, ReturnIndex(0))
	VZEROUPPER()
	RET()
}
