package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func init() {
	avx2["blockScores"] = func() { genBlockScores(false) }
	avx2["blockBlend"] = func() { genBlockBlend(false) }
	avx2["blockScoresAsk"] = func() { genBlockScores(true) }
	avx2["blockBlendAsk"] = func() { genBlockBlend(true) }
	avx2["blockMax"] = genBlockMax
	avx2["blockExpSumFast"] = func() { genBlockExpSum(false) }
	avx2["blockExpSumSpecial"] = func() { genBlockExpSum(true) }
}

// The block kernels of the batched engine (see internal/kernel/block_generic.go): sixteen
// query rows across two YMM registers, so every kernel streams whole
// 64-byte groups and needs no tails along the rows.

// blockGroup is how many keys (scores) or value columns (blend) share one
// pass: 6 × 2 accumulators, two row vectors and a broadcast fill 15 of the
// 16 YMM registers, with 8 loads per 12 FMAs.
const blockGroup = 6

// stridedRows returns the address of row w (w < 6) of a group whose row 0
// is at p0 and row 3 at p3, rows stride bytes apart.
func stridedRows(p0, p3, stride Register) func(w int) Mem {
	return func(w int) Mem {
		base := p0
		if w >= 3 {
			base, w = p3, w-3
		}
		switch w {
		case 1:
			return Mem{Base: base, Index: stride, Scale: 1}
		case 2:
			return Mem{Base: base, Index: stride, Scale: 2}
		}
		return Mem{Base: base}
	}
}

// genBlockScores emits blockScores, or with ask blockScoresAsk: its full
// groups ask for 2·blockGroup bytes of ask per dimension (one prefetch a
// step of four, the bytes of the 16-bit rows of blockGroup keys, see
// askStep) in place of their rows ahead.
func genBlockScores(ask bool) {
	ap := askAt(ask)
	st := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(4), n)
	qt := Load(Param("qt").Base(), GP64())
	d := Load(Param("qt").Len(), GP64())
	SHRQ(U8(4), d)
	k := Load(Param("k").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	// ahead is the distance of two groups of rows.
	ahead := GP64()
	MOVQ(stride, ahead)
	IMUL3Q(U8(2*blockGroup), ahead, ahead)

	for _, W := range []int{blockGroup, 4, 2, 1} {
		loop, next := fmt.Sprintf("scores%d_loop", W), fmt.Sprintf("scores%d_next", W)
		Label(loop)
		CMPQ(n, U8(W))
		JL(LabelRef(next))

		p0, p3, qp, cnt := GP64(), GP64(), GP64(), GP64()
		MOVQ(k, p0)
		if W > 3 {
			LEAQ(Mem{Base: k, Index: stride, Scale: 2}, p3)
			ADDQ(stride, p3)
		}
		// The full groups fetch the rows two groups ahead into L1 as they
		// go, one prefetch per row and step of four dimensions: a head
		// larger than L2 otherwise reaches the kernel as a demand miss
		// per cache line. Inside the step loop the prefetches ride on
		// spare load slots; a separate loop over the lines cost a fifth
		// of the kernel's time.
		var a0, a3 Register
		if W == blockGroup && ap == nil {
			a0, a3 = GP64(), GP64()
			MOVQ(ahead, a0)
			ADDQ(p0, a0)
			reach := GP64()
			LEAQ(Mem{Base: a0, Index: stride, Scale: 4}, reach)
			LEAQ(Mem{Base: reach, Index: stride, Scale: 2}, reach)
			keepInside("k", 2, reach, [2]Register{p0, a0})
			// Row 3 of the group ahead, or of this one where the rows
			// ahead would pass the end of k.
			LEAQ(Mem{Base: a0, Index: stride, Scale: 2}, a3)
			ADDQ(stride, a3)
		}
		MOVQ(qt, qp)
		MOVQ(d, cnt)
		row := stridedRows(p0, p3, stride)
		acc := zeros(2 * W)
		done := fmt.Sprintf("scores%d_store", W)
		// Dimension c of the group: unrolled by four, then one at a time.
		step := func(u int) {
			switch {
			case W == blockGroup && u == 0 && ap != nil:
				PREFETCHT1(Mem{Base: ap})
			case W == blockGroup && u == 0:
				ahead := stridedRows(a0, a3, stride)
				for w := range W {
					PREFETCHT0(ahead(w))
				}
			}
			q0, q1 := YMM(), YMM()
			VMOVUPS(Mem{Base: qp, Disp: 64 * u}, q0)
			VMOVUPS(Mem{Base: qp, Disp: 64*u + 32}, q1)
			for w := range W {
				b := YMM()
				m := row(w)
				m.Disp += 4 * u
				VBROADCASTSS(m, b)
				VFMADD231PS(b, q0, acc[2*w])
				VFMADD231PS(b, q1, acc[2*w+1])
			}
		}
		unrolled(fmt.Sprintf("scores%d", W), cnt, step, func(U int) {
			ADDQ(U32(64*U), qp)
			ADDQ(U8(4*U), p0)
			if W > 3 {
				ADDQ(U8(4*U), p3)
			}
			switch {
			case W == blockGroup && ap != nil:
				ADDQ(U8(2*blockGroup*U), ap)
			case W == blockGroup:
				ADDQ(U8(4*U), a0)
				ADDQ(U8(4*U), a3)
			}
		})
		JMP(LabelRef(done))

		Label(done)
		for i, a := range acc {
			VMOVUPS(a, Mem{Base: st, Disp: 32 * i})
		}
		ADDQ(U32(64*W), st)
		adv := GP64()
		MOVQ(stride, adv)
		if W > 1 {
			IMUL3Q(U8(W), adv, adv)
		}
		ADDQ(adv, k)
		SUBQ(U8(W), n)
		JMP(LabelRef(loop))
		Label(next)
	}
	VZEROUPPER()
	RET()
}

// genBlockBlend emits blockBlend, or with ask blockBlendAsk: its full
// groups ask for 2·blockGroup bytes of ask per key (one prefetch a step of
// four keys, see askStep) in place of the next run's rows.
func genBlockBlend(ask bool) {
	ap := askAt(ask)
	ot := Load(Param("ot").Base(), GP64())
	dv := Load(Param("ot").Len(), GP64())
	SHRQ(U8(4), dv)
	st := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(4), n)
	v := Load(Param("v").Base(), GP64())
	stride := Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	c := Load(Param("c").Base(), GP64())
	clen := Load(Param("c").Len(), GP64())
	s3 := GP64()
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	// The engine blends a tile in runs of keys: each step fetches the same
	// columns of the next run's row into L2 while this run computes. The
	// prefetch goes to a group's last column: every cache line of a row
	// holds the last column of some group.
	var run Register
	if ap == nil {
		run = GP64()
		MOVQ(stride, run)
		IMULQ(n, run)
	}

	for _, W := range []int{blockGroup, 4, 2, 1} {
		loop, next := fmt.Sprintf("blend%d_loop", W), fmt.Sprintf("blend%d_next", W)
		Label(loop)
		CMPQ(dv, U8(W))
		JL(LabelRef(next))

		acc := make([]VecVirtual, 2*W)
		for i := range acc {
			acc[i] = YMM()
			VMOVUPS(Mem{Base: ot, Disp: 32 * i}, acc[i])
		}
		// An empty c means no rescale (a later run of the same tile).
		scaled := fmt.Sprintf("blend%d_scaled", W)
		TESTQ(clen, clen)
		JZ(LabelRef(scaled))
		for i := range acc {
			VMULPS(Mem{Base: c, Disp: 32 * (i % 2)}, acc[i], acc[i])
		}
		Label(scaled)
		var nx Register // the next run's rows, which the Ask form does not fetch
		if ap == nil {
			nx = GP64()
			LEAQ(Mem{Base: v, Index: run, Scale: 1, Disp: 4 * (W - 1)}, nx)
			reach := GP64()
			LEAQ(Mem{Base: nx, Index: run, Scale: 1}, reach)
			keepInside("v", 2, reach, [2]Register{v, nx})
		}
		vp, sp, cnt := GP64(), GP64(), GP64()
		MOVQ(v, vp)
		MOVQ(st, sp)
		MOVQ(n, cnt)
		done := fmt.Sprintf("blend%d_store", W)
		// Key j of the tile: unrolled by four (rows vp, vp+s, vp+2s,
		// vp+3s), then one at a time.
		step := func(u int) {
			p0, p1 := YMM(), YMM()
			VMOVUPS(Mem{Base: sp, Disp: 64 * u}, p0)
			VMOVUPS(Mem{Base: sp, Disp: 64*u + 32}, p1)
			row := Mem{Base: vp}
			switch u {
			case 1:
				row = Mem{Base: vp, Index: stride, Scale: 1}
			case 2:
				row = Mem{Base: vp, Index: stride, Scale: 2}
			case 3:
				row = Mem{Base: vp, Index: s3, Scale: 1}
			}
			switch {
			case ap == nil:
				pf := row
				pf.Base = nx
				PREFETCHT1(pf)
			case W == blockGroup && u == 0:
				PREFETCHT1(Mem{Base: ap})
			}
			for w := range W {
				b := YMM()
				m := row
				m.Disp = 4 * w
				VBROADCASTSS(m, b)
				VFMADD231PS(b, p0, acc[2*w])
				VFMADD231PS(b, p1, acc[2*w+1])
			}
		}
		keys := nextKeys(sp, vp, nx, stride)
		unrolled(fmt.Sprintf("blend%d", W), cnt, step, func(U int) {
			keys(U)
			if ap != nil && W == blockGroup {
				ADDQ(U8(2*blockGroup*U), ap)
			}
		})
		JMP(LabelRef(done))

		Label(done)
		for i, a := range acc {
			VMOVUPS(a, Mem{Base: ot, Disp: 32 * i})
		}
		ADDQ(U32(64*W), ot)
		ADDQ(U8(4*W), v)
		SUBQ(U8(W), dv)
		JMP(LabelRef(loop))
		Label(next)
	}
	VZEROUPPER()
	RET()
}

func genBlockMax() {
	sp := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	SHRQ(U8(4), n)
	ml := Load(Param("ml").Base(), GP64())
	mt := []VecVirtual{YMM(), YMM()}
	VMOVUPS(Mem{Base: ml}, mt[0])
	VMOVUPS(Mem{Base: ml, Disp: 32}, mt[1])
	Label("max_loop")
	TESTQ(n, n)
	JZ(LabelRef("max_done"))
	// The score is VMAXPS's first source: ties keep the running maximum
	// and NaN scores are skipped, as blockMaxGeneric's s > m does.
	for u := range 2 {
		s := YMM()
		VMOVUPS(Mem{Base: sp, Disp: 32 * u}, s)
		VMAXPS(mt[u], s, mt[u])
	}
	ADDQ(U8(64), sp)
	DECQ(n)
	JMP(LabelRef("max_loop"))

	Label("max_done")
	x := make([]VecVirtual, 2)
	for u := range 2 {
		mu := YMM()
		VCMPPS(U8(0), vec32("ninf", 0xff800000), mt[u], mu) // EQ_OQ: mt == -Inf
		VANDNPS(mt[u], mu, mu)                              // mu = mt, or 0 where -Inf
		VMOVUPS(mu, Mem{Base: ml, Disp: 192 + 32*u})
		x[u] = YMM()
		VMOVUPS(Mem{Base: ml, Disp: 32 * u}, x[u])
		VSUBPS(mu, x[u], x[u]) // m_old - mu
		VMOVUPS(mt[u], Mem{Base: ml, Disp: 32 * u})
	}
	// m_old - mu is -Inf for a lane that attends its first keys: the
	// special-case code gives every input its exact exp.
	res, nv, ev := expCore(loadExpK(), x, true)
	for u := range 2 {
		expSpecialLanes(res[u], nv[u], x[u], ev[u])
		VMOVUPS(res[u], Mem{Base: ml, Disp: 128 + 32*u})
		VMULPS(Mem{Base: ml, Disp: 64 + 32*u}, res[u], res[u])
		VMOVUPS(res[u], Mem{Base: ml, Disp: 64 + 32*u})
	}
	VZEROUPPER()
	RET()
}

// genBlockExpSum emits the exp pass of a tile: st[j*16+r] = e^(st[j*16+r]-mu[r]),
// added to l[r]. As with the other exp kernels, the fast kernel stops at
// the first group with an input outside ±86.5 (or NaN) that is not simply
// at or below expZeroBelow (a masked key), and the special one takes over
// until the inputs are ordinary again; each returns how many floats it
// did, a multiple of 16.
func genBlockExpSum(special bool) {
	name := fn
	sp := Load(Param("st").Base(), GP64())
	n := Load(Param("st").Len(), GP64())
	ml := Load(Param("ml").Base(), GP64())
	done := GP64()
	XORQ(done, done)
	// The fast kernel takes two groups at a time (four vectors in flight,
	// as the other exp kernels) and subtracts mu straight from memory,
	// which leaves room for Shift and 1/ln2 in registers. Measured here
	// against one group with five constants in registers: about 8% less
	// time at the best and the 25th percentile. The special kernel takes
	// one group, with mu in registers and every constant in memory.
	mu, l := []Op{nil, nil}, []VecVirtual{YMM(), YMM()}
	for u := range 2 {
		mu[u] = Mem{Base: ml, Disp: 192 + 32*u}
		if special {
			r := YMM()
			VMOVUPS(mu[u], r)
			mu[u] = r
		}
		VMOVUPS(Mem{Base: ml, Disp: 64 + 32*u}, l[u])
	}
	// groups emits the work on G consecutive groups (keys) at sp.
	var cold []func()
	groups := func(G int, k expK) {
		load := func(v int) VecVirtual {
			r := YMM()
			VMOVUPS(Mem{Base: sp, Disp: 32 * v}, r)
			VSUBPS(mu[v%2], r, r)
			return r
		}
		x := make([]VecVirtual, 2*G)
		for v := range x {
			x[v] = load(v)
		}
		storeAt := func(res []VecVirtual, first int) {
			for i, r := range res {
				v := first + i
				VMOVUPS(r, Mem{Base: sp, Disp: 32 * v})
				VADDPS(r, l[v%2], l[v%2]) // keys in order, as the generic loop
			}
		}
		if special {
			TESTQ(done, done)
			JZ(LabelRef(name + "_go"))
			outOfRange(k, withoutZeros(x))
			JZ(LabelRef(name + "_ret"))
			Label(name + "_go")
			res, nv, ev := expCore(k, x, true)
			for v := range x {
				expSpecialLanes(res[v], nv[v], x[v], ev[v])
			}
			storeAt(res, 0)
		} else {
			// Masked keys (-Inf, on the causal diagonal) take the second
			// try of expZeroLanes rather than the special kernel.
			zeros, next := fmt.Sprintf("%s_zeros%d", name, G), fmt.Sprintf("%s_next%d", name, G)
			outOfRange(k, x)
			JNZ(LabelRef(zeros))
			res, _, _ := expCore(k, x, false)
			storeAt(res, 0)
			Label(next)
			// The second try sits after the return, out of the fast loop.
			cold = append(cold, func() {
				Label(zeros)
				expZeroLanes(k, 2*G, load, name+"_ret", storeAt)
				JMP(LabelRef(next))
			})
		}
		ADDQ(U8(64*G), sp)
		ADDQ(U8(16*G), done)
	}
	if special {
		Label(name + "_loop")
		CMPQ(done, n)
		JGE(LabelRef(name + "_ret"))
		groups(1, loadExpK())
		JMP(LabelRef(name + "_loop"))
	} else {
		k := loadExpK("shift", "invln2")
		last := GP64()
		MOVQ(n, last)
		SUBQ(U8(16), last) // two groups fit while done < n-16
		Label(name + "_pairs")
		CMPQ(done, last)
		JGE(LabelRef(name + "_one"))
		groups(2, k)
		JMP(LabelRef(name + "_pairs"))
		Label(name + "_one") // at most one group is left
		CMPQ(done, n)
		JGE(LabelRef(name + "_ret"))
		groups(1, k)
	}

	Label(name + "_ret")
	for u := range 2 {
		VMOVUPS(l[u], Mem{Base: ml, Disp: 64 + 32*u})
	}
	Store(done, ReturnIndex(0))
	VZEROUPPER()
	RET()
	for _, c := range cold {
		c()
	}
}

// unrolled emits the loop over cnt steps: four at a time while four
// remain, then one at a time. step(u) emits step u of a block at the
// current pointers; advance(U) moves them past a block of U steps.
func unrolled(name string, cnt Register, step func(u int), advance func(U int)) {
	for _, U := range []int{4, 1} {
		inner, after := fmt.Sprintf("%s_inner%d", name, U), fmt.Sprintf("%s_after%d", name, U)
		Label(inner)
		CMPQ(cnt, U8(U))
		JL(LabelRef(after))
		for u := range U {
			step(u)
		}
		advance(U)
		SUBQ(U8(U), cnt)
		JMP(LabelRef(inner))
		Label(after)
	}
}
