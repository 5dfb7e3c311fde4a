package main

import (
	"fmt"

	"github.com/glancelab/attention/internal/expconst"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The avx512 exp kernels evaluate the scheme of internal/expconst on
// sixteen lanes with the operations of exp32, up to its last step, and
// finish with VSCALEFPS, p·2^n rounded once. exp32 rounds that same product
// once too, whichever of its branches runs: scale·p with a normal scale for
// |n| <= SpecialN, (p·s1)·s2 with p·s1 exact up to SaturateN, and +Inf or +0
// beyond, where p·2^n overflows or underflows as well. So one branch-free
// sequence is exact for every input once two cases are kept from it:
//
//   - x above expClampZ (+Inf among them, whose r would be NaN) is lowered
//     to expClampZ first, which overflows to +Inf just the same; NaN passes
//     the clamp (VMINPS returns its second source when either is NaN).
//   - lanes at or below expZeroBelow (-Inf among them) are zero-masked in
//     the VSCALEFPS: their exp32 is +0, and an underflowing VSCALEFPS can
//     take a microcode assist.
//
// No fast/special split is left, so each kernel is one function.

// expClampZ: e^100 overflows float32, and for x <= 100 the reduction is
// exact (|n| <= 145, so Ln2Hi·n is exact).
const expClampZ = 100

// expZUnroll is how many vectors the kernels interleave stage by stage, so
// that their 9-deep FMA chains overlap on the two FMA pipes; with the
// constants in registers, four vectors take 12 of the 32 registers. The
// kernels are bound by the FMA pipes' throughput from two vectors on, and
// six, which leave no register spare (eight do not fit), gain little over
// four (measured:
// docs/performance/amd-epyc-zen5.md#the-zmm-exp-kernels-interleave-four-vectors-from-code-comments).
const expZUnroll = 4

// expZK holds the scheme's constants, broadcast into registers.
type expZK struct {
	shift, invLn2, ln2Hi, ln2Lo, c6, zeroBelow, clamp VecVirtual
	horner                                            []VecVirtual // C5, C4, C3, C2, 1, 1
}

// bcstZ broadcasts a float32 constant into a new register.
func bcstZ(name string, f float64) VecVirtual {
	z := ZMM()
	VBROADCASTSS(vecF(name, f), z)
	return z
}

// loadExpZK broadcasts the constants; clamp is nil unless withClamp.
func loadExpZK(withClamp bool) expZK {
	k := expZK{
		shift:     bcstZ("exp_shift", expconst.Shift),
		invLn2:    bcstZ("exp_invln2", expconst.InvLn2),
		ln2Hi:     bcstZ("exp_ln2hi", expconst.Ln2Hi),
		ln2Lo:     bcstZ("exp_ln2lo", expconst.Ln2Lo),
		c6:        bcstZ("exp_c6", expconst.C6),
		zeroBelow: bcstZ("exp_zerobelow", expZeroBelow),
	}
	if withClamp {
		k.clamp = bcstZ("exp_clampz", expClampZ)
	}
	one := bcstZ("exp_one", 1)
	k.horner = []VecVirtual{
		bcstZ("exp_c5", expconst.C5), bcstZ("exp_c4", expconst.C4),
		bcstZ("exp_c3", expconst.C3), bcstZ("exp_c2", expconst.C2),
		one, one,
	}
	return k
}

// expZ computes e^x of each register of x, stage by stage across them, and
// returns the results in new registers; x is overwritten. live, if not
// nil, holds per vector the lanes to compute at all (a tail's mask): the
// others come out +0. Without a clamp the caller guarantees x <= expClampZ
// or NaN.
func expZ(k expZK, x []VecVirtual, live []Op) []VecVirtual {
	U := len(x)
	keep := make([]Op, U)
	for u := range U {
		kr := K()
		// NLE_UQ: above expZeroBelow, or NaN (whose result is NaN).
		if live != nil && live[u] != nil {
			VCMPPS(U8(0x16), k.zeroBelow, x[u], live[u], kr)
		} else {
			VCMPPS(U8(0x16), k.zeroBelow, x[u], kr)
		}
		keep[u] = kr
	}
	if k.clamp != nil {
		for u := range U {
			VMINPS(x[u], k.clamp, x[u]) // clamp < x ? clamp : x, NaN stays
		}
	}
	z := make([]VecVirtual, U)
	for u := range U {
		z[u] = ZMM()
		VMOVAPS(x[u], z[u])
		VFMADD213PS(k.shift, k.invLn2, z[u]) // z = x*InvLn2 + Shift
	}
	n := make([]VecVirtual, U)
	for u := range U {
		n[u] = ZMM()
		VSUBPS(k.shift, z[u], n[u]) // n = z - Shift
	}
	for u := range U {
		VFNMADD231PS(k.ln2Hi, n[u], x[u]) // r = x - n*Ln2Hi
	}
	for u := range U {
		VFNMADD231PS(k.ln2Lo, n[u], x[u]) // r -= n*Ln2Lo
	}
	p := z // z is dead: its registers take p
	for u := range U {
		VMOVAPS(k.c6, p[u])
	}
	for _, c := range k.horner {
		for u := range U {
			VFMADD213PS(c, x[u], p[u]) // p = p*r + c
		}
	}
	for u := range U {
		VSCALEFPS_Z(n[u], p[u], keep[u], p[u]) // p·2^n, rounded once
	}
	return p
}

// expZKernel emits expv (dst[i] = e^x[i]) or, with sum, expSum
// (dst[i] = e^(x[i]-m) and their sum) on sixteen lanes.
type expZKernel struct{ sum bool }

func (g expZKernel) generate() {
	dst := Load(Param("dst").Base(), GP64())
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	var m VecVirtual
	var sums []VecVirtual
	if g.sum {
		m = ZMM()
		VBROADCASTSS(paramAddr("m"), m)
		sums = zerosZ(2)
	}
	// expSum's callers pass x[i]-m <= 86.5 and no NaN: no clamp needed.
	k := loadExpZK(!g.sum)
	name := fn
	block := func(U int, mask Op) {
		xs := make([]VecVirtual, U)
		var live []Op
		for u := range U {
			xs[u] = loadZ(Mem{Base: x, Disp: 64 * u}, mask)
			if g.sum {
				VSUBPS(m, xs[u], xs[u])
			}
		}
		if mask != nil && g.sum {
			live = []Op{mask} // lanes past the end add nothing
		}
		res := expZ(k, xs, live)
		for u, r := range res {
			storeZ(r, Mem{Base: dst, Disp: 64 * u}, mask)
			if g.sum {
				VADDPS(r, sums[u%2], sums[u%2])
			}
		}
	}
	for _, U := range []int{expZUnroll, 1} {
		loop, next := fmt.Sprintf("%s_loop%d", name, U), fmt.Sprintf("%s_next%d", name, U)
		Label(loop)
		CMPQ(n, U8(16*U))
		JL(LabelRef(next))
		block(U, nil)
		ADDQ(U32(64*U), x)
		ADDQ(U32(64*U), dst)
		SUBQ(U8(16*U), n)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(n, n)
	JZ(LabelRef(name + "_done"))
	block(1, tailK(n))
	Label(name + "_done")
	if g.sum {
		VADDPS(sums[1], sums[0], sums[0])
		Store(hsumZ(sums[0]), ReturnIndex(0))
	}
	VZEROUPPER()
	RET()
}

func init() {
	avx512["exp"] = expZKernel{}.generate
	avx512["expSum"] = expZKernel{sum: true}.generate
}
