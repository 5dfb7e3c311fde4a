package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The online softmax of the block kernels on sixteen lanes: a group of
// sixteen scores (one key, every query row of the block) is one ZMM
// register, so m, l, c and mu are one register each and nothing needs a
// tail. ml holds m, l, c and mu at byte offsets 0, 64, 128 and 192.

func init() {
	avx512["blockMax"] = genBlockMaxZ
	avx512["blockExpSum"] = genBlockExpSumZ
}

// genBlockMaxZ is blockMaxGeneric lane for lane. VMAXPS with the score as
// its first source returns the running maximum unless the score is
// greater, so ties keep the earlier value and a NaN score is skipped, as
// the generic loop's s > m does. Four accumulators (keys u, u+4, ...)
// break the dependency chain; they can pick a different value than the
// one chain only between +0 and -0, the one tie of equal values with
// different bits, so a lane where two equal accumulators differ in their
// bits (the maximum is ±0 and both signs met) has the tile redone as one
// chain. The exp of c is exact for any input (see expZ).
func genBlockMaxZ() {
	sp := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(4), n)
	ml := Load(Param("ml").Base(), GP64())
	sp0, n0 := GP64(), GP64()
	MOVQ(sp, sp0)
	MOVQ(n, n0)
	acc := make([]VecVirtual, 4)
	acc[0] = ZMM()
	VMOVUPS(Mem{Base: ml}, acc[0])
	for u := 1; u < 4; u++ {
		acc[u] = ZMM()
		VBROADCASTSS(vec32("ninf", 0xff800000), acc[u])
	}
	raise := func(m VecVirtual, at Mem) {
		s := ZMM()
		VMOVUPS(at, s)
		VMAXPS(m, s, m) // s > m ? s : m
	}
	softmaxGroupsZ("bmax", n, sp, 4, func(G int) {
		for u := range G {
			raise(acc[u], Mem{Base: sp, Disp: 64 * u})
		}
	})
	lo, hi, mt := ZMM(), ZMM(), ZMM()
	VMAXPS(acc[0], acc[1], lo)
	VMAXPS(acc[2], acc[3], hi)
	VMAXPS(lo, hi, mt)
	mixed := K()
	KXORW(mixed, mixed, mixed)
	for _, a := range acc {
		eq, d := K(), K()
		VCMPPS(U8(0), mt, a, eq)    // EQ_OQ
		VPCMPD(U8(4), mt, a, eq, d) // NE, among the equal lanes
		KORW(d, mixed, mixed)
	}
	KORTESTW(mixed, mixed)
	JNZ(LabelRef("bmax_chain"))
	Label("bmax_max")
	// mu = mt, or 0 where mt is -Inf (NEQ_UQ keeps NaN lanes as they are).
	live := K()
	VCMPPS_BCST(U8(4), vec32("ninf", 0xff800000), mt, live)
	mu := ZMM()
	VMOVAPS_Z(mt, live, mu)
	x := ZMM()
	VMOVUPS(Mem{Base: ml}, x)
	VSUBPS(mu, x, x) // m_old - mu: -Inf for a lane that attends its first keys
	VMOVUPS(mt, Mem{Base: ml})
	VMOVUPS(mu, Mem{Base: ml, Disp: 192})
	c := expZ(loadExpZK(true), []VecVirtual{x}, nil)[0]
	VMOVUPS(c, Mem{Base: ml, Disp: 128})
	VMULPS(Mem{Base: ml, Disp: 64}, c, c)
	VMOVUPS(c, Mem{Base: ml, Disp: 64}) // l *= c
	VZEROUPPER()
	RET()

	// The one chain, from the tile's first key.
	Label("bmax_chain")
	VMOVUPS(Mem{Base: ml}, mt)
	softmaxGroupsZ("bmax_chain", n0, sp0, 1, func(int) { raise(mt, Mem{Base: sp0}) })
	JMP(LabelRef("bmax_max"))
}

// blockExpSumZUnroll is how many groups share one pass of expZ.
const blockExpSumZUnroll = 4

// genBlockExpSumZ is blockExpSumGeneric lane for lane: each group's
// exponentials overwrite it and are added to l in key order, one chain
// as in the generic loop, so l gets the generic bits. expZ is exact for
// any input, so one function serves masked (-Inf) keys too.
func genBlockExpSumZ() {
	sp := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(4), n)
	ml := Load(Param("ml").Base(), GP64())
	mu, l := ZMM(), ZMM()
	VMOVUPS(Mem{Base: ml, Disp: 192}, mu)
	VMOVUPS(Mem{Base: ml, Disp: 64}, l)
	k := loadExpZK(true)
	softmaxGroupsZ("bexp", n, sp, blockExpSumZUnroll, func(U int) {
		x := make([]VecVirtual, U)
		for u := range U {
			x[u] = ZMM()
			VMOVUPS(Mem{Base: sp, Disp: 64 * u}, x[u])
			VSUBPS(mu, x[u], x[u])
		}
		for u, r := range expZ(k, x, nil) {
			VMOVUPS(r, Mem{Base: sp, Disp: 64 * u})
			VADDPS(r, l, l)
		}
	})
	VMOVUPS(l, Mem{Base: ml, Disp: 64})
	VZEROUPPER()
	RET()
}

// softmaxGroupsZ emits the walk over n groups of sixteen floats at sp: U
// groups at a time while U remain, then one at a time. body(G) emits the
// work on G groups at sp.
func softmaxGroupsZ(name string, n, sp Register, U int, body func(G int)) {
	sizes := []int{U, 1}
	if U == 1 {
		sizes = sizes[1:]
	}
	for _, G := range sizes {
		loop, next := fmt.Sprintf("%s_loop%d", name, G), fmt.Sprintf("%s_next%d", name, G)
		Label(loop)
		CMPQ(n, U8(G))
		JL(LabelRef(next))
		body(G)
		ADDQ(U32(64*G), sp)
		SUBQ(U8(G), n)
		JMP(LabelRef(loop))
		Label(next)
	}
}
