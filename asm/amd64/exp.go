package main

import (
	"math"

	"github.com/glancelab/attention/internal/expconst"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The exp kernels evaluate the scheme of internal/expconst lane by lane with
// the same operations as the generic exp32, so every lane's result is
// bit-identical to it (the fast path scales p by an integer add onto its
// exponent field, which is the same exact product; see expconst.FastN).
//
// Each kernel comes in two parts. The fast kernel interleaves several
// vectors (see expUnroll), keeps what constants fit in registers, and
// handles inputs with |x| <= expFastBound, where
// p·2^n is a normal float32, plus lanes at or below expZeroBelow (-Inf
// among them), whose result is +0 (see expZeroLanes). When a block holds
// anything else (large |x|, +Inf, NaN, or a result that is subnormal) it
// returns how far it got, and the Go wrapper hands the next vectors to the
// special kernel, which handles every input with the split-scale code of
// expSpecial and returns once it meets a vector the fast kernel can take
// again.

// expFastBound: for |x| <= 86.5, |n| = |round(x/ln2)| <= 125 = FastN.
const expFastBound = 86.5

// expUnroll is the number of vectors the fast kernels interleave, stage by
// stage, so their 6-FMA Horner chains overlap. Four vectors need twelve
// registers between them (x, z and n of each), which leaves room for only
// a few constants in registers; the rest become memory operands. More
// loads cost less than idle FMA pipes: four vectors beat two with every
// constant in a register, three with more constants in registers, five
// with none and a software-pipelined loop (measured:
// docs/performance/amd-epyc-zen3.md#the-avx2-exp-kernels-from-code-comments).
const expUnroll = 4

// expK holds the scheme's constants, each a register or a memory operand.
type expK struct {
	shift, invLn2, ln2Hi, ln2Lo, bias, c6, absMask Op
	horner                                         []Op // C5, C4, C3, C2, 1, 1
}

// loadExpK preloads the constants named in regs into registers; the others
// stay in memory.
func loadExpK(regs ...string) expK {
	get := func(name string, m Mem) Op {
		for _, r := range regs {
			if r == name {
				v := YMM()
				VMOVUPS(m, v)
				return v
			}
		}
		return m
	}
	k := expK{
		shift:   get("shift", vecF("exp_shift", expconst.Shift)),
		invLn2:  get("invln2", vecF("exp_invln2", expconst.InvLn2)),
		ln2Hi:   get("ln2hi", vecF("exp_ln2hi", expconst.Ln2Hi)),
		ln2Lo:   get("ln2lo", vecF("exp_ln2lo", expconst.Ln2Lo)),
		bias:    get("bias", vec32("exp_bias", expconst.ExpBias)),
		c6:      get("c6", vecF("exp_c6", expconst.C6)),
		absMask: get("absmask", vec32("exp_absmask", 0x7fffffff)),
	}
	one := get("one", vecF("exp_one", 1))
	k.horner = []Op{
		get("c5", vecF("exp_c5", expconst.C5)), get("c4", vecF("exp_c4", expconst.C4)),
		get("c3", vecF("exp_c3", expconst.C3)), get("c2", vecF("exp_c2", expconst.C2)),
		one, one,
	}
	return k
}

// mov copies a register or memory operand into a new register.
func mov(src Op) VecVirtual {
	v := YMM()
	if m, ok := src.(Mem); ok {
		VMOVUPS(m, v)
	} else {
		VMOVAPS(src, v)
	}
	return v
}

// expCore computes e^x of each register of x, stage by stage across them,
// and returns the results in new registers; x is overwritten. With keep
// set it also returns the 2^n bit patterns before biasing (e = n << 23) and
// n itself, which the special-case code needs; without it (|n| <= FastN)
// the result is p with n added to its exponent field, which spares the
// FMA pipes the final multiply.
func expCore(k expK, x []VecVirtual, keep bool) (res, n, e []VecVirtual) {
	U := len(x)
	z := make([]VecVirtual, U)
	for u := range U {
		z[u] = mov(k.shift)
		VFMADD231PS(k.invLn2, x[u], z[u]) // z = x*InvLn2 + Shift
	}
	n = make([]VecVirtual, U)
	for u := range U {
		n[u] = YMM()
		VSUBPS(k.shift, z[u], n[u]) // n = z - Shift
	}
	for u := range U {
		VFNMADD231PS(k.ln2Hi, n[u], x[u]) // r = x - n*Ln2Hi
	}
	for u := range U {
		VFNMADD231PS(k.ln2Lo, n[u], x[u]) // r -= n*Ln2Lo
	}
	if keep {
		e = make([]VecVirtual, U)
	}
	for u := range U {
		VPSLLD(U8(23), z[u], z[u])
		if keep {
			e[u] = mov(z[u])
			VPADDD(k.bias, z[u], z[u]) // z = 2^n
		}
	}
	p := make([]VecVirtual, U)
	for u := range U {
		p[u] = mov(k.c6)
	}
	for _, c := range k.horner {
		for u := range U {
			VFMADD213PS(c, x[u], p[u]) // p = p*r + c
		}
	}
	if keep {
		res = make([]VecVirtual, U)
		for u := range U {
			res[u] = YMM()
			VMULPS(z[u], p[u], res[u])
		}
		// The special-case code needs p as well: hand it back in x.
		for u := range U {
			VMOVAPS(p[u], x[u])
		}
		return res, n, e
	}
	for u := range U {
		VPADDD(z[u], p[u], p[u]) // bits(p) + (n << 23) = p·2^n
	}
	return p, nil, nil
}

// expSpecialLanes finishes res where |n| > SpecialN: 2^n is split as s1·s2
// (both normal) so the product rounds once, and past SaturateN the result is
// s1·s1 (+Inf or +0), exactly as the generic expSpecial. p is the
// polynomial, e = n << 23.
func expSpecialLanes(res, n, p, e VecVirtual) {
	b := YMM()
	VXORPS(b, b, b)
	VCMPPS(U8(0x12), b, n, b) // n <= 0 (LE_OQ)
	VANDPS(vec32("exp_specialoffset", expconst.SpecialOffset), b, b)
	s1 := YMM()
	VPADDD(vec32("exp_specialbias", expconst.SpecialBias), b, s1)
	VPSUBD(b, e, e) // s2 = e - b
	VMULPS(s1, p, p)
	VMULPS(e, p, p) // r0 = (p*s1)*s2
	VMULPS(s1, s1, s1)
	absn := YMM()
	VANDPS(vec32("exp_absmask", 0x7fffffff), n, absn)
	sat := YMM()
	VCMPPS(U8(0x1e), vecF("exp_saturaten", expconst.SaturateN), absn, sat) // GT_OQ
	VBLENDVPS(sat, s1, p, p)                                               // saturated lanes: s1*s1
	VCMPPS(U8(0x1e), vecF("exp_specialn", expconst.SpecialN), absn, absn)
	VBLENDVPS(absn, p, res, res) // special lanes take the split result
}

// expZeroBelow: e^x rounds to +0 for every x at or below it (e^-104 is
// below half the least subnormal, 2^-150), so lanes there need no
// exponential at all. Masks (-Inf) and very negative scores minus their
// max land here.
const expZeroBelow = -104

// expZeroLanes is the fast kernels' second try at a block that failed
// outOfRange: lanes at or below expZeroBelow (-Inf included) become 0
// before the range check and get +0, exactly the exponential's value; if
// the block passes, it is done here, two vectors at a time, instead of
// returning to the special kernel. A block that still fails (large, NaN
// or in the band where the result is subnormal) jumps to ret with nothing
// written. load(u) reloads vector u of the block; store(res, first)
// writes (and sums) res as vectors first, first+1, ....
func expZeroLanes(k expK, U int, load func(u int) VecVirtual, ret string, store func(res []VecVirtual, first int)) {
	xs := make([]VecVirtual, U)
	for u := range U {
		xs[u] = load(u)
		VANDNPS(xs[u], zeroLanes(xs[u]), xs[u]) // those lanes: 0, in range
	}
	outOfRange(k, xs)
	JNZ(LabelRef(ret))
	for first := 0; first < U; first += 2 {
		part := xs[first:min(first+2, U)]
		res, _, _ := expCore(k, part, false)
		for i, r := range res {
			VANDNPS(r, zeroLanes(load(first+i)), r) // e^0 = 1 there: make it +0
		}
		store(res, first)
	}
}

// belowRange sets the flags for JNZ: nonzero if any lane of x is below
// -expFastBound. It is the fused exp-and-sum's check, whose callers
// guarantee x <= 86.5 and no NaN (x is a score minus the maximum).
func belowRange(x []VecVirtual) {
	lo := YMM()
	VMINPS(x[0], x[min(1, len(x)-1)], lo)
	for _, v := range x[min(2, len(x)):] {
		VMINPS(v, lo, lo)
	}
	VCMPPS(U8(0x11), vecF("exp_negfastbound", -expFastBound), lo, lo) // LT_OQ
	VPTEST(lo, lo)
}

// zeroLanes returns the mask of v's lanes at or below expZeroBelow (-Inf
// too; never NaN).
func zeroLanes(v VecVirtual) VecVirtual {
	m := YMM()
	VCMPPS(U8(0x12), vecF("exp_zerobelow", expZeroBelow), v, m) // LE_OQ
	return m
}

// withoutZeros returns copies of xs with the lanes at or below expZeroBelow
// set to 0: what the fast kernels' range check sees on their second try.
func withoutZeros(xs []VecVirtual) []VecVirtual {
	out := make([]VecVirtual, len(xs))
	for i, v := range xs {
		m := zeroLanes(v)
		out[i] = YMM()
		VANDNPS(v, m, out[i])
	}
	return out
}

// expSource loads the vectors of one block, subtracting m if it is set.
type expSource struct {
	x    Register   // base pointer
	m    VecVirtual // nil for plain exp
	mask VecVirtual // nil for full vectors
}

func (s expSource) load(u int) VecVirtual {
	v := YMM()
	if s.mask != nil {
		VMASKMOVPS(Mem{Base: s.x, Disp: 32 * u}, s.mask, v)
	} else {
		VMOVUPS(Mem{Base: s.x, Disp: 32 * u}, v)
	}
	if s.m != nil {
		VSUBPS(s.m, v, v)
		if s.mask != nil {
			VANDPS(s.mask, v, v) // lanes past the end: 0, in range
		}
	}
	return v
}

// outOfRange sets the flags for JNZ: nonzero if any lane of x has |x| above
// expFastBound or is NaN. Masked-off lanes load as 0 and pass.
func outOfRange(k expK, x []VecVirtual) {
	chk := YMM()
	VPAND(k.absMask, x[0], chk)
	for _, v := range x[1:] {
		t := YMM()
		VPAND(k.absMask, v, t)
		VPMAXUD(t, chk, chk)
	}
	VPCMPGTD(vec32("exp_fastbound", math.Float32bits(expFastBound)), chk, chk)
	VPTEST(chk, chk)
}

// expKernel is the shape shared by the four exp kernels: walk x in blocks,
// write dst, optionally sum (expSum), and return how many elements were
// done (and the sum).
type expKernel struct {
	sum     bool     // exp(x-m) and its sum
	special bool     // the special kernel: every input, until a fast vector
	regs    []string // constants the fast kernel keeps in registers
}

func (g expKernel) generate() {
	dst := Load(Param("dst").Base(), GP64())
	x := Load(Param("x").Base(), GP64())
	n := Load(Param("x").Len(), GP64())
	done := GP64()
	XORQ(done, done)
	var m, sum, sum2 VecVirtual
	if g.sum {
		m = YMM()
		VBROADCASTSS(paramAddr("m"), m)
		sums := zeros(2)
		sum, sum2 = sums[0], sums[1]
	}
	var k expK
	U := expUnroll
	if g.special {
		// Every constant in memory: the special code needs the registers.
		// Two vectors at a time overlap their latency chains: about a
		// quarter less time than one on all-special input.
		k = loadExpK()
		U = 2
	} else {
		k = loadExpK(g.regs...)
	}
	src := expSource{x: x, m: m}
	storeAt := func(res []VecVirtual, first int, mask VecVirtual) {
		for i, r := range res {
			u := first + i
			if mask != nil {
				VMASKMOVPS(r, mask, Mem{Base: dst, Disp: 32 * u})
				if g.sum {
					VANDPS(mask, r, r) // lanes past the end add nothing
				}
			} else {
				VMOVUPS(r, Mem{Base: dst, Disp: 32 * u})
			}
			if g.sum {
				if u%2 == 1 {
					VADDPS(r, sum2, sum2)
				} else {
					VADDPS(r, sum, sum)
				}
			}
		}
	}
	var cold []func()
	block := func(U int, mask VecVirtual, label string) {
		s := src
		s.mask = mask
		xs := make([]VecVirtual, U)
		for u := range U {
			xs[u] = s.load(u)
		}
		if !g.special {
			zeros, next := fn+"_"+label+"_zeros", fn+"_"+label+"_next"
			if g.sum {
				belowRange(xs) // see genExpSum
			} else {
				outOfRange(k, xs)
			}
			JNZ(LabelRef(zeros))
			res, _, _ := expCore(k, xs, false)
			storeAt(res, 0, mask)
			Label(next)
			// The second try sits after the return, out of the fast loop.
			cold = append(cold, func() {
				Label(zeros)
				expZeroLanes(k, U, s.load, fn+"_ret", func(res []VecVirtual, first int) { storeAt(res, first, mask) })
				JMP(LabelRef(next))
			})
			return
		}
		// Special kernel: once at least one vector is done, stop at a
		// vector the fast kernel can take (lanes at or below expZeroBelow
		// included, see expZeroLanes).
		TESTQ(done, done)
		JZ(LabelRef(fn + "_" + label + "_go"))
		outOfRange(k, withoutZeros(xs))
		JZ(LabelRef(fn + "_ret"))
		Label(fn + "_" + label + "_go")
		res, nv, ev := expCore(k, xs, true)
		for u := range U {
			expSpecialLanes(res[u], nv[u], xs[u], ev[u])
		}
		storeAt(res, 0, mask)
	}

	Label(fn + "_loop")
	rem := GP64()
	MOVQ(n, rem)
	SUBQ(done, rem)
	CMPQ(rem, U8(8*U))
	JL(LabelRef(fn + "_single"))
	block(U, nil, "u")
	ADDQ(U32(32*U), x)
	ADDQ(U32(32*U), dst)
	ADDQ(U8(8*U), done)
	JMP(LabelRef(fn + "_loop"))

	Label(fn + "_single")
	if U > 1 {
		CMPQ(rem, U8(8))
		JL(LabelRef(fn + "_tail"))
		block(1, nil, "s")
		ADDQ(U8(32), x)
		ADDQ(U8(32), dst)
		ADDQ(U8(8), done)
		SUBQ(U8(8), rem)
		JMP(LabelRef(fn + "_single"))
	}

	Label(fn + "_tail")
	TESTQ(rem, rem)
	JZ(LabelRef(fn + "_ret"))
	block(1, tailMask(rem), "t")
	MOVQ(n, done)

	Label(fn + "_ret")
	if g.sum {
		VADDPS(sum2, sum, sum)
		Store(hsum(sum), Return("sum"))
		Store(done, Return("done"))
	} else {
		Store(done, ReturnIndex(0))
	}
	VZEROUPPER()
	RET()
	for _, c := range cold {
		c()
	}
}

func init() {
	avx2["expFast"] = expKernel{regs: []string{"shift", "invln2", "one", "c2"}}.generate
	avx2["expSpecial"] = expKernel{special: true}.generate
	// The fused exp-and-sum serves Softmax, whose m is the maximum of an x
	// without NaN, so the fast kernel checks only the lower end of its range
	// (belowRange: three VMINPS for four vectors against the AND and VPMAXUD of
	// each). It keeps two sums, for alternate vectors, and only Shift in a
	// register (the second sum needs it; measured:
	// docs/performance/amd-epyc-zen3.md#the-avx2-exp-kernels-from-code-comments).
	avx2["expSumFast"] = expKernel{sum: true, regs: []string{"shift"}}.generate
	avx2["expSumSpecial"] = expKernel{sum: true, special: true}.generate
}
