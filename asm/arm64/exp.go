package main

import (
	"math"

	"github.com/glancelab/attention/internal/expconst"
)

func init() {
	neon["exp"] = genExp
	neon["expSum"] = genExpSum
}

// The exp kernels evaluate the scheme of internal/expconst lane by lane with
// the same operations as the generic exp32, so every lane is bit-identical
// to it. With 32 registers, all constants stay in V16–V27 and four vectors
// (16 floats) are interleaved stage by stage in V0–V15: x/r in V0–V3, z and
// then the result in V4–V7, n and then the polynomial in V8–V11, V12–V15 as
// the Horner accumulators. A block whose inputs are all within
// |x| <= expFastBound takes the fast path; otherwise it is recomputed vector
// by vector with the split-scale code for 2^n out of range.

const (
	vShift, vInvLn2, vLn2Hi, vLn2Lo, vBias, vC6 V = 16, 17, 18, 19, 20, 21
	vAbsMask                                    V = 27
	vM, vSum, vChk                              V = 29, 30, 31
)

// vHorner are C5, C4, C3, C2, 1, 1 (V22–V26, "one" used twice).
var vHorner = []V{22, 23, 24, 25, 26, 26}

// expFastBound: for |x| <= 86.5, |n| = |round(x/ln2)| <= 125 = FastN, where
// the fast path may scale p by an integer add onto its exponent field.
const expFastBound = 86.5

// loadExpConsts fills V16–V27 from the constant table.
func loadExpConsts(a *Asm, tmp R) {
	a.Op("MOVD $·neonExpConsts<>(SB), %s", tmp)
	for i := range expConsts {
		a.Op("VLD1R.P 4(%s), [%s]", tmp, V(16+i).S4())
	}
}

// expFast computes e^x of the vectors x[u] (V0.., overwritten with r) into
// V4+u, stage by stage, and folds |x| into vChk for the range check.
func expFast(a *Asm, U int) {
	for u := range U {
		x := V(u)
		if u == 0 {
			a.Op("VAND %s, %s, %s", vAbsMask.B16(), x.B16(), vChk.B16())
		} else {
			a.Op("VAND %s, %s, %s", vAbsMask.B16(), x.B16(), V(12+u).B16())
			a.Op("VUMAX %s, %s, %s", V(12+u).S4(), vChk.S4(), vChk.S4())
		}
	}
	for u := range U {
		z := V(4 + u)
		a.Op("VMOV %s, %s", vShift.B16(), z.B16())
		a.Op("VFMLA %s, %s, %s", vInvLn2.S4(), V(u).S4(), z.S4()) // z = Shift + x*InvLn2
	}
	for u := range U {
		a.W(FSUB(V(8+u), V(4+u), vShift)) // n = z - Shift
	}
	for u := range U {
		a.Op("VFMLS %s, %s, %s", vLn2Hi.S4(), V(8+u).S4(), V(u).S4()) // r = x - n*Ln2Hi
	}
	for u := range U {
		a.Op("VFMLS %s, %s, %s", vLn2Lo.S4(), V(8+u).S4(), V(u).S4()) // r -= n*Ln2Lo
	}
	for u := range U {
		a.Op("VSHL $23, %s, %s", V(4+u).S4(), V(4+u).S4()) // z = n << 23
	}
	horner(a, U, 8)
	for u := range U {
		// bits(p) + (n << 23) = p·2^n, exact for |n| <= FastN (see
		// expconst.FastN): an integer add in place of the multiply.
		a.Op("VADD %s, %s, %s", V(8+u).S4(), V(4+u).S4(), V(4+u).S4())
	}
}

// horner leaves p(r) in V(pBase+u) for r in V(u): each step starts a new
// accumulator from the constant (FMLA adds into its destination), and the
// even number of steps brings p back to V(pBase+u).
func horner(a *Asm, U int, pBase V) {
	for u := range U {
		a.Op("VMOV %s, %s", vC6.B16(), (pBase + V(u)).B16())
	}
	p, t := pBase, V(12)
	for _, c := range vHorner {
		for u := range U {
			a.Op("VMOV %s, %s", c.B16(), (t + V(u)).B16())
			a.Op("VFMLA %s, %s, %s", (p + V(u)).S4(), V(u).S4(), (t + V(u)).S4()) // t = c + p*r
		}
		p, t = t, p
	}
}

// expSlow recomputes vector u from x (already loaded into V(u), minus m)
// into V(4+u) with the special-case lanes of the generic expSpecial: 2^n
// split into two normal factors s1·s2 so the product rounds once, and s1·s1
// (+Inf or +0) past SaturateN. Scratch: V8–V15, V28.
func expSlow(a *Asm, u int, tmp R) {
	x, z := V(u), V(4+u)
	n, p, t, e, b, s1, ab, m2 := V(8), V(9), V(10), V(11), V(12), V(13), V(14), V(28)
	a.Op("VMOV %s, %s", vShift.B16(), z.B16())
	a.Op("VFMLA %s, %s, %s", vInvLn2.S4(), x.S4(), z.S4())
	a.W(FSUB(n, z, vShift))
	a.Op("VFMLS %s, %s, %s", vLn2Hi.S4(), n.S4(), x.S4())
	a.Op("VFMLS %s, %s, %s", vLn2Lo.S4(), n.S4(), x.S4())
	a.Op("VSHL $23, %s, %s", z.S4(), e.S4()) // e = n << 23
	a.Op("VADD %s, %s, %s", vBias.S4(), e.S4(), z.S4())
	// Horner with p in V9 and the accumulator in V10.
	a.Op("VMOV %s, %s", vC6.B16(), p.B16())
	for _, c := range vHorner {
		a.Op("VMOV %s, %s", c.B16(), t.B16())
		a.Op("VFMLA %s, %s, %s", p.S4(), x.S4(), t.S4())
		p, t = t, p
	}
	a.W(FMUL(z, z, p)) // the ordinary result
	dup := func(v V, bits uint32) {
		a.Op("MOVW $0x%08x, %s", bits, tmp)
		a.Op("VDUP %s, %s", tmp, v.S4())
	}
	a.W(FCMLEZ(b, n)) // n <= 0
	dup(m2, expconst.SpecialOffset)
	a.Op("VAND %s, %s, %s", m2.B16(), b.B16(), b.B16())
	dup(s1, expconst.SpecialBias)
	a.Op("VADD %s, %s, %s", b.S4(), s1.S4(), s1.S4()) // s1 = SpecialBias + b
	a.Op("VSUB %s, %s, %s", b.S4(), e.S4(), e.S4())   // s2 = e - b
	a.W(FMUL(p, p, s1))
	a.W(FMUL(p, p, e))    // r0 = (p*s1)*s2
	a.W(FMUL(s1, s1, s1)) // r1 = s1*s1
	a.W(FABS(ab, n))
	dup(m2, math.Float32bits(expconst.SaturateN))
	a.W(FCMGT(b, ab, m2))
	a.Op("VBIT %s, %s, %s", b.B16(), s1.B16(), p.B16()) // saturated lanes: r1
	dup(m2, math.Float32bits(expconst.SpecialN))
	a.W(FCMGT(b, ab, m2))
	a.Op("VBIT %s, %s, %s", b.B16(), p.B16(), z.B16()) // special lanes: split result
}

// expBlock computes U vectors whose inputs are in V0.. (reloaded by reload
// for the slow path) into V4...
func expBlock(a *Asm, U int, reload func(u int), tmp R) {
	expFast(a, U)
	ok := a.NewLabel("ok")
	a.W(UMAXV(vChk, vChk))
	a.Op("VMOV %s, %s", vChk.Lane(0), tmp)
	a.Op("MOVW $0x%08x, R16", math.Float32bits(expFastBound))
	a.Op("CMPW R16, %s", tmp)
	a.Op("BLS %s", ok)
	for u := range U {
		reload(u)
		expSlow(a, u, tmp)
	}
	a.Label(ok)
}

func genExp(a *Asm)    { expKernel(a, false) }
func genExpSum(a *Asm) { expKernel(a, true) }

func expKernel(a *Asm, sum bool) {
	dst, x, n, cnt, tmp, rem, p := R(0), R(1), R(2), R(3), R(4), R(5), R(6)
	a.Op("MOVD dst_base+0(FP), %s", dst)
	a.Op("MOVD x_base+24(FP), %s", x)
	a.Op("MOVD x_len+32(FP), %s", n)
	loadExpConsts(a, tmp)
	if sum {
		a.Op("FMOVS m+48(FP), F31")
		a.Op("VDUP %s, %s", V(31).Lane(0), vM.S4())
		zero(a, vSum)
	}
	subM := func(v V) {
		if sum {
			a.W(FSUB(v, v, vM))
		}
	}
	// Blocks of 4 vectors, then single vectors, then 1–3 lanes.
	for _, U := range []int{4, 1} {
		loop, next := a.NewLabel("loop"), a.NewLabel("next")
		if U == 4 {
			a.Op("LSR $4, %s, %s", n, cnt)
		} else {
			a.Op("UBFX $2, %s, $2, %s", n, cnt)
		}
		a.Op("CBZ %s, %s", cnt, next)
		a.Label(loop)
		a.Op("VLD1 (%s), %s", x, list(0, U))
		for u := range U {
			subM(V(u))
		}
		expBlock(a, U, func(u int) {
			a.Op("ADD $%d, %s, %s", 16*u, x, p)
			a.Op("VLD1 (%s), [%s]", p, V(u).S4())
			subM(V(u))
		}, tmp)
		a.Op("VST1.P %s, %d(%s)", list(4, U), 16*U, dst)
		if sum {
			for u := range U {
				a.W(FADD(vSum, vSum, V(4+u)))
			}
		}
		a.Op("ADD $%d, %s, %s", 16*U, x, x)
		a.Op("SUB $1, %s, %s", cnt, cnt)
		a.Op("CBNZ %s, %s", cnt, loop)
		a.Label(next)
	}
	done := a.NewLabel("done")
	a.Op("AND $3, %s, %s", n, rem)
	a.Op("CBZ %s, %s", rem, done)
	// Lanes past the end are zero after the mask, so they stay in range
	// and add nothing to the sum.
	mask := V(28)
	load := func(int) {
		laneLoad(a, 0, x, rem, p)
		subM(0)
		if sum {
			tailMask(a, mask, rem, p)
			a.Op("VAND %s, %s, %s", mask.B16(), V(0).B16(), V(0).B16())
		}
	}
	load(0)
	expBlock(a, 1, load, tmp)
	laneStore(a, 4, dst, rem, p)
	if sum {
		tailMask(a, mask, rem, p)
		a.Op("VAND %s, %s, %s", mask.B16(), V(4).B16(), V(4).B16())
		a.W(FADD(vSum, vSum, 4))
	}
	a.Label(done)
	if sum {
		hsum(a, vSum)
		a.Op("FMOVS %s, ret+56(FP)", vSum.F())
	}
	a.Op("RET")
}
