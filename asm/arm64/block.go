package main

import "math"

func init() {
	neon["blockScores"] = genBlockScores
	neon["blockBlend"] = genBlockBlend
	neon["blockMax"] = genBlockMax
	neon["blockExpSum"] = genBlockExpSum
}

// The block kernels of the batched engine (see internal/kernel/block_generic.go): sixteen
// query rows across four vectors, so every kernel moves whole 64-byte
// groups and needs no lane tails.

// genBlockScores: groups of four keys, sixteen accumulators V0–V15 (key w
// in V4w..V4w+3); per dimension one 64-byte load of qt into V16–V19 and
// one replicated load per key into V20–V23.
func genBlockScores(a *Asm) {
	st, n, qt, d, k, stride := R(0), R(1), R(2), R(3), R(4), R(5)
	cnt, qp, tmp := R(6), R(7), R(12)
	rp := []R{8, 9, 10, 11}
	a.Op("MOVD st_base+0(FP), %s", st)
	a.Op("MOVD st_len+8(FP), %s", n)
	a.Op("LSR $4, %s, %s", n, n)
	a.Op("MOVD qt_base+24(FP), %s", qt)
	a.Op("MOVD qt_len+32(FP), %s", d)
	a.Op("LSR $4, %s, %s", d, d)
	a.Op("MOVD k_base+48(FP), %s", k)
	a.Op("MOVD stride+72(FP), %s", stride)
	a.Op("LSL $2, %s, %s", stride, stride)
	for _, W := range []int{4, 1} {
		loop, next := a.NewLabel("keys"), a.NewLabel("next")
		a.Label(loop)
		a.Op("CMP $%d, %s", W, n)
		a.Op("BLT %s", next)
		a.Op("MOVD %s, %s", k, rp[0])
		for w := 1; w < W; w++ {
			a.Op("ADD %s, %s, %s", stride, rp[w-1], rp[w])
		}
		acc := regs(0, 4*W)
		zero(a, acc...)
		a.Op("MOVD %s, %s", qt, qp)
		inner, store := a.NewLabel("dim"), a.NewLabel("store")
		a.Op("CBZ %s, %s", d, store)
		a.Op("MOVD %s, %s", d, cnt)
		a.Label(inner)
		a.Op("VLD1.P 64(%s), %s", qp, list(16, 4))
		for w := range W {
			a.Op("VLD1R.P 4(%s), [%s]", rp[w], V(20+w).S4())
		}
		for w := range W {
			for i := range 4 {
				a.Op("VFMLA %s, %s, %s", V(20+w).S4(), V(16+i).S4(), acc[4*w+i].S4())
			}
		}
		a.Op("SUB $1, %s, %s", cnt, cnt)
		a.Op("CBNZ %s, %s", cnt, inner)
		a.Label(store)
		for w := range W {
			a.Op("VST1.P %s, 64(%s)", list(V(4*w), 4), st)
		}
		a.Op("MOVD $%d, %s", W, tmp)
		a.Op("MUL %s, %s, %s", stride, tmp, tmp)
		a.Op("ADD %s, %s, %s", tmp, k, k)
		a.Op("SUB $%d, %s, %s", W, n, n)
		a.Op("B %s", loop)
		a.Label(next)
	}
	a.Op("RET")
}

// genBlockBlend: groups of four value columns, sixteen accumulators V0–V15
// (column w in V4w..V4w+3) scaled by c (V24–V27) as they are loaded; per
// key one 64-byte load of the weights into V16–V19 and one replicated load
// per column into V20–V23.
func genBlockBlend(a *Asm) {
	ot, dv, st, n, v, stride, c := R(0), R(1), R(2), R(3), R(4), R(5), R(6)
	cnt, sp, vp, tmp := R(7), R(8), R(9), R(10)
	a.Op("MOVD ot_base+0(FP), %s", ot)
	a.Op("MOVD ot_len+8(FP), %s", dv)
	a.Op("LSR $4, %s, %s", dv, dv)
	a.Op("MOVD st_base+24(FP), %s", st)
	a.Op("MOVD st_len+32(FP), %s", n)
	a.Op("LSR $4, %s, %s", n, n)
	a.Op("MOVD v_base+48(FP), %s", v)
	a.Op("MOVD stride+72(FP), %s", stride)
	a.Op("LSL $2, %s, %s", stride, stride)
	a.Op("MOVD c_base+80(FP), %s", c)
	// An empty c means no rescale: multiply by ones.
	noC, haveC := a.NewLabel("noc"), a.NewLabel("havec")
	a.Op("MOVD c_len+88(FP), %s", tmp)
	a.Op("CBZ %s, %s", tmp, noC)
	a.Op("VLD1 (%s), %s", c, list(24, 4))
	a.Op("B %s", haveC)
	a.Label(noC)
	a.Op("MOVW $0x3f800000, %s", tmp)
	for i := range 4 {
		a.Op("VDUP %s, %s", tmp, V(24+i).S4())
	}
	a.Label(haveC)
	for _, W := range []int{4, 1} {
		loop, next := a.NewLabel("cols"), a.NewLabel("next")
		a.Label(loop)
		a.Op("CMP $%d, %s", W, dv)
		a.Op("BLT %s", next)
		acc := regs(0, 4*W)
		a.Op("MOVD %s, %s", ot, tmp)
		for w := range W {
			a.Op("VLD1.P 64(%s), %s", tmp, list(V(4*w), 4))
		}
		for i, r := range acc {
			a.W(FMUL(r, r, V(24+i%4)))
		}
		a.Op("MOVD %s, %s", st, sp)
		a.Op("MOVD %s, %s", v, vp)
		inner, store := a.NewLabel("key"), a.NewLabel("store")
		a.Op("CBZ %s, %s", n, store)
		a.Op("MOVD %s, %s", n, cnt)
		a.Label(inner)
		a.Op("VLD1.P 64(%s), %s", sp, list(16, 4))
		for w := range W {
			if w == 0 {
				a.Op("VLD1R (%s), [%s]", vp, V(20).S4())
			} else {
				a.Op("ADD $%d, %s, %s", 4*w, vp, tmp)
				a.Op("VLD1R (%s), [%s]", tmp, V(20+w).S4())
			}
		}
		for w := range W {
			for i := range 4 {
				a.Op("VFMLA %s, %s, %s", V(20+w).S4(), V(16+i).S4(), acc[4*w+i].S4())
			}
		}
		a.Op("ADD %s, %s, %s", stride, vp, vp)
		a.Op("SUB $1, %s, %s", cnt, cnt)
		a.Op("CBNZ %s, %s", cnt, inner)
		a.Label(store)
		for w := range W {
			a.Op("VST1.P %s, 64(%s)", list(V(4*w), 4), ot)
		}
		a.Op("ADD $%d, %s, %s", 4*W, v, v)
		a.Op("SUB $%d, %s, %s", W, dv, dv)
		a.Op("B %s", loop)
		a.Label(next)
	}
	a.Op("RET")
}

// genBlockMax: the running max of each lane over the tile's rows (a NaN
// score is skipped, as in the generic code), mu, c = e^(m_old-mu) with the special-case exp for every lane
// (m_old is -Inf for a row that attends its first keys) and l *= c. ml
// holds m, l, c, mu, 16 floats each.
func genBlockMax(a *Asm) {
	sp, n, ml, tmp, p := R(0), R(1), R(2), R(3), R(4)
	a.Op("MOVD st_base+0(FP), %s", sp)
	a.Op("MOVD st_len+8(FP), %s", n)
	a.Op("LSR $4, %s, %s", n, n)
	a.Op("MOVD ml_base+24(FP), %s", ml)
	a.Op("VLD1 (%s), %s", ml, list(0, 4))
	loop, done := a.NewLabel("max"), a.NewLabel("maxdone")
	a.Op("CBZ %s, %s", n, done)
	a.Label(loop)
	a.Op("VLD1.P 64(%s), %s", sp, list(4, 4))
	// m = s where s > m: a compare and an insert, not FMAX, so that a NaN
	// score leaves m alone and a tie keeps the earlier value (±0), as
	// blockMaxGeneric's loop does.
	for u := range 4 {
		a.W(FCMGT(V(8+u), V(4+u), V(u)))
		a.Op("VBIT %s, %s, %s", V(8+u).B16(), V(4+u).B16(), V(u).B16())
	}
	a.Op("SUB $1, %s, %s", n, n)
	a.Op("CBNZ %s, %s", n, loop)
	a.Label(done)
	// V4–V7: m_old; m = max; mu = max where it is above -Inf, else 0.
	a.Op("VLD1 (%s), %s", ml, list(4, 4))
	a.Op("VST1 %s, (%s)", list(0, 4), ml)
	a.Op("MOVW $0x%08x, %s", math.Float32bits(float32(math.Inf(-1))), tmp)
	a.Op("VDUP %s, %s", tmp, V(12).S4())
	for u := range 4 {
		a.W(FCMGT(V(8), V(u), V(12)))
		a.Op("VAND %s, %s, %s", V(8).B16(), V(u).B16(), V(u).B16())
	}
	a.Op("ADD $192, %s, %s", ml, p)
	a.Op("VST1 %s, (%s)", list(0, 4), p)
	for u := range 4 {
		a.W(FSUB(V(u), V(4+u), V(u))) // m_old - mu
	}
	loadExpConsts(a, tmp)
	for u := range 4 {
		expSlow(a, u, tmp)
	}
	a.Op("ADD $128, %s, %s", ml, p)
	a.Op("VST1 %s, (%s)", list(4, 4), p)
	a.Op("ADD $64, %s, %s", ml, p)
	a.Op("VLD1 (%s), %s", p, list(8, 4))
	for u := range 4 {
		a.W(FMUL(V(8+u), V(8+u), V(4+u)))
	}
	a.Op("VST1 %s, (%s)", list(8, 4), p)
	a.Op("RET")
}

// genBlockExpSum: st[j*16+r] = e^(st[j*16+r]-mu[r]), added to l[r], one
// row of 16 (four vectors) at a time through the exp kernels' fast path,
// falling back to the special-case code for a row with an input outside
// ±86.5 or NaN. mu is reloaded from ml for each row (the exp code needs
// V0–V15 and the constants V16–V27), and l is updated in memory.
func genBlockExpSum(a *Asm) {
	sp, n, ml, tmp, mu, lp, p := R(0), R(1), R(2), R(3), R(4), R(5), R(6)
	a.Op("MOVD st_base+0(FP), %s", sp)
	a.Op("MOVD st_len+8(FP), %s", n)
	a.Op("LSR $4, %s, %s", n, n)
	a.Op("MOVD ml_base+24(FP), %s", ml)
	a.Op("ADD $192, %s, %s", ml, mu)
	a.Op("ADD $64, %s, %s", ml, lp)
	loadExpConsts(a, tmp)
	loop, done := a.NewLabel("row"), a.NewLabel("done")
	a.Op("CBZ %s, %s", n, done)
	a.Label(loop)
	a.Op("VLD1 (%s), %s", sp, list(0, 4))
	a.Op("VLD1 (%s), %s", mu, list(4, 4))
	for u := range 4 {
		a.W(FSUB(V(u), V(u), V(4+u)))
	}
	expBlock(a, 4, func(u int) {
		a.Op("ADD $%d, %s, %s", 16*u, sp, p)
		a.Op("VLD1 (%s), [%s]", p, V(u).S4())
		a.Op("ADD $%d, %s, %s", 16*u, mu, p)
		a.Op("VLD1 (%s), [%s]", p, V(28).S4())
		a.W(FSUB(V(u), V(u), V(28)))
	}, tmp)
	a.Op("VST1.P %s, 64(%s)", list(4, 4), sp)
	a.Op("VLD1 (%s), %s", lp, list(8, 4))
	for u := range 4 {
		a.W(FADD(V(8+u), V(8+u), V(4+u)))
	}
	a.Op("VST1 %s, (%s)", list(8, 4), lp)
	a.Op("SUB $1, %s, %s", n, n)
	a.Op("CBNZ %s, %s", n, loop)
	a.Label(done)
	a.Op("RET")
}
