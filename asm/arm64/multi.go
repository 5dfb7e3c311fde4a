package main

import "fmt"

// The multi-row kernels serve the row path when a few query rows (the
// query heads of a grouped decode step) walk the same keys: each key's row
// of K or V is loaded once for all of them. Each takes 1 to 4 rows, with a
// code path per row count; the row count divides the slices' lengths with
// a UDIV before the paths part.

func init() {
	neon["scoreRowsMulti"] = genScoreRowsMulti
	neon["blendRowsMulti"] = genBlendRowsMulti
}

// byRows branches to the code path for the row count and returns the
// paths' labels, for 1 to 4 rows (4 for anything above 3).
func byRows(a *Asm, rows R) []string {
	labels := make([]string, 4)
	for i := range labels {
		labels[i] = a.NewLabel(fmt.Sprintf("rows%d_", i+1))
	}
	for r := 1; r <= 3; r++ {
		a.Op("CMP $%d, %s", r, rows)
		a.Op("BEQ %s", labels[r-1])
	}
	a.Op("B %s", labels[3])
	return labels
}

// rowPointers sets ps[r] = ps[0] + r*step for the rest of ps.
func rowPointers(a *Asm, ps []R, step R) {
	for r := 1; r < len(ps); r++ {
		a.Op("ADD %s, %s, %s", step, ps[r-1], ps[r])
	}
}

// shiftOf returns log2 of a power of two.
func shiftOf(p int) int {
	for s := 0; ; s++ {
		if 1<<s == p {
			return s
		}
		if 1<<s > p {
			panic(fmt.Sprintf("%d is not a power of two", p))
		}
	}
}

// genScoreRowsMulti: dst[r*n+j] = Σ_c k[j*stride+c]*q[r*d+c]. Keys go in
// blocks of P (8 for one or two rows, 4 for three or four), each vector of
// four columns of a key loaded once into V16–V23 and multiplied with the
// same vector of every query row (V24–V27): R·P accumulators in V0–V15, up
// to 4 rows × 4 keys. The last d%4 columns of the query rows, zero-padded,
// stay in V28–V31 for every block; a key's are loaded lane by lane. A row's
// sums of four keys leave through one pairwise reduction and one store. The
// last keys go in a block of 4, then one at a time.
func genScoreRowsMulti(a *Asm) {
	o := []R{0, 1, 2, 3}  // output rows
	qp := []R{4, 5, 6, 7} // query rows, walked along the columns
	k, stride, n, d, rows := R(8), R(9), R(10), R(11), R(12)
	rem, cnt, back, tmp, tmp2 := R(12), R(13), R(14), R(15), R(16)
	kp := []R{17, 19, 20, 21, 22, 23, 24, 25} // the keys of a block
	a.Op("MOVD dst_base+0(FP), %s", o[0])
	a.Op("MOVD dst_len+8(FP), %s", n)
	a.Op("MOVD k_base+24(FP), %s", k)
	a.Op("MOVD stride+48(FP), %s", stride)
	a.Op("MOVD q_base+56(FP), %s", qp[0])
	a.Op("MOVD q_len+64(FP), %s", d)
	a.Op("MOVD rows+80(FP), %s", rows)
	a.Op("UDIV %s, %s, %s", rows, n, n)
	a.Op("UDIV %s, %s, %s", rows, d, d)
	a.Op("LSL $2, %s, %s", stride, stride)
	// Row pointers for four rows; a path for fewer never reads the rest.
	a.Op("LSL $2, %s, %s", n, tmp)
	rowPointers(a, o, tmp)
	a.Op("LSL $2, %s, %s", d, tmp)
	rowPointers(a, qp, tmp)
	paths := byRows(a, rows)
	// rows is dead from here: rem takes its register.
	for R := 1; R <= 4; R++ {
		a.Label(paths[R-1])
		a.Op("AND $3, %s, %s", d, rem)
		a.Op("SUB %s, %s, %s", rem, d, back)
		a.Op("LSL $2, %s, %s", back, back) // the bytes of a row's whole vectors
		// V28+r: the last d%4 columns of query row r, zero-padded.
		noqt := a.NewLabel("noqt")
		a.Op("CBZ %s, %s", rem, noqt)
		for r := range R {
			a.Op("ADD %s, %s, %s", back, qp[r], tmp)
			laneLoad(a, V(28+r), tmp, rem, tmp2)
		}
		a.Label(noqt)
		Ps := []int{4, 1}
		if R <= 2 {
			Ps = []int{8, 4, 1}
		}
		for _, P := range Ps {
			scoreBlocks(a, R, P, o, qp, kp, k, stride, n, d, rem, cnt, back, tmp)
		}
		a.Op("RET")
	}
}

// scoreBlocks emits the loop over blocks of P keys for R query rows.
func scoreBlocks(a *Asm, R, P int, o, qp, kp []R, k, stride, n, d, rem, cnt, back, tmp R) {
	acc := func(r, j int) V { return V(r*P + j) }
	loop, next := a.NewLabel(fmt.Sprintf("k%d_", P)), a.NewLabel("next")
	a.Label(loop)
	a.Op("CMP $%d, %s", P, n)
	a.Op("BLT %s", next)
	a.Op("MOVD %s, %s", k, kp[0])
	rowPointers(a, kp[:P], stride)
	zero(a, regs(0, R*P)...)
	// Whole vectors of four columns.
	chunk, tail, reduce := a.NewLabel("chunk"), a.NewLabel("tail"), a.NewLabel("reduce")
	a.Op("LSR $2, %s, %s", d, cnt)
	a.Op("CBZ %s, %s", cnt, tail)
	a.Label(chunk)
	for r := range R {
		a.Op("VLD1.P 16(%s), [%s]", qp[r], V(24+r).S4())
	}
	for j := range P {
		a.Op("VLD1.P 16(%s), [%s]", kp[j], V(16+j).S4())
		for r := range R {
			a.Op("VFMLA %s, %s, %s", V(16+j).S4(), V(24+r).S4(), acc(r, j).S4())
		}
	}
	a.Op("SUB $1, %s, %s", cnt, cnt)
	a.Op("CBNZ %s, %s", cnt, chunk)
	for r := range R {
		a.Op("SUB %s, %s, %s", back, qp[r], qp[r])
	}
	// The d%4 tail of each key, against V28–V31.
	a.Label(tail)
	a.Op("CBZ %s, %s", rem, reduce)
	for j := range P {
		laneLoad(a, V(16+j), kp[j], rem, tmp)
		for r := range R {
			a.Op("VFMLA %s, %s, %s", V(16+j).S4(), V(28+r).S4(), acc(r, j).S4())
		}
	}
	a.Label(reduce)
	for r := range R {
		if P == 1 {
			hsum(a, acc(r, 0))
			a.Op("FMOVS.P %s, 4(%s)", acc(r, 0).F(), o[r])
			continue
		}
		for g := 0; g < P; g += 4 {
			b := acc(r, g)
			a.W(FADDP(b, b, b+1))
			a.W(FADDP(b+2, b+2, b+3))
			a.W(FADDP(b, b, b+2)) // lanes: keys g, g+1, g+2, g+3
			a.Op("VST1.P [%s], 16(%s)", b.S4(), o[r])
		}
	}
	if P == 1 {
		a.Op("ADD %s, %s, %s", stride, k, k)
	} else {
		a.Op("ADD %s<<%d, %s, %s", stride, shiftOf(P), k, k)
	}
	a.Op("SUB $%d, %s, %s", P, n, n)
	a.Op("B %s", loop)
	a.Label(next)
}

// genBlendRowsMulti: acc[r*d+c] += Σ_j w[r*n+j]*v[j*stride+c]. The columns
// go in blocks of C vectors (16 for one row, 8 for two or three, 6 for
// four) whose R·C accumulators (at most 24, V0–V23) stay in registers while
// the keys stream past: per key, R broadcast weights (V28–V31) and the
// block of the value row, loaded four vectors at a time into V24–V27, feed
// R·C FMAs. Then smaller blocks (8, 4, 2 and 1 vectors), then the last d%4
// columns lane by lane.
func genBlendRowsMulti(a *Asm) {
	ac := []R{0, 1, 2, 3} // accumulator rows
	wp := []R{4, 5, 6, 7} // weight rows, walked along the keys
	v, stride, n, d, rows := R(8), R(9), R(10), R(11), R(12)
	cnt, nb, tmp, vp, vt := R(13), R(14), R(15), R(16), R(17)
	a.Op("MOVD acc_base+0(FP), %s", ac[0])
	a.Op("MOVD acc_len+8(FP), %s", d)
	a.Op("MOVD w_base+24(FP), %s", wp[0])
	a.Op("MOVD w_len+32(FP), %s", n)
	a.Op("MOVD v_base+48(FP), %s", v)
	a.Op("MOVD stride+72(FP), %s", stride)
	a.Op("MOVD rows+80(FP), %s", rows)
	a.Op("UDIV %s, %s, %s", rows, n, n)
	a.Op("UDIV %s, %s, %s", rows, d, d)
	a.Op("LSL $2, %s, %s", stride, stride)
	a.Op("LSL $2, %s, %s", d, tmp)
	rowPointers(a, ac, tmp)
	a.Op("LSL $2, %s, %s", n, nb)
	rowPointers(a, wp, nb)
	paths := byRows(a, rows)
	for R := 1; R <= 4; R++ {
		a.Label(paths[R-1])
		C := map[int]int{1: 16, 2: 8, 3: 8, 4: 6}[R]
		blendColumns(a, R, C, ac, wp, v, stride, n, d, cnt, nb, tmp, vp, vt)
		for _, P := range []int{8, 4, 2, 1} {
			if P < C {
				blendColumns(a, R, P, ac, wp, v, stride, n, d, cnt, nb, tmp, vp, vt)
			}
		}
		blendTail(a, R, ac, wp, v, stride, n, d, cnt, tmp, vp)
		a.Op("RET")
	}
}

// vectors splits a block of C vectors into the lists of at most four that
// one VLD1 or VST1 moves: their first index and length.
func vectors(C int) [][2]int {
	var l [][2]int
	for c := 0; c < C; c += 4 {
		l = append(l, [2]int{c, min(4, C-c)})
	}
	return l
}

// blendColumns emits the loop over blocks of C vectors of columns for R
// rows: row r's accumulators are V(r*C) on.
func blendColumns(a *Asm, R, C int, ac, wp []R, v, stride, n, d, cnt, nb, tmp, vp, vt R) {
	acc := func(r, c int) V { return V(r*C + c) }
	loop, next := a.NewLabel(fmt.Sprintf("c%d_", C)), a.NewLabel("next")
	a.Label(loop)
	a.Op("CMP $%d, %s", 4*C, d)
	a.Op("BLT %s", next)
	lists := vectors(C)
	for r := range R {
		if len(lists) == 1 {
			a.Op("VLD1 (%s), %s", ac[r], list(acc(r, 0), C))
			continue
		}
		a.Op("MOVD %s, %s", ac[r], tmp)
		for i, l := range lists {
			if i < len(lists)-1 {
				a.Op("VLD1.P %d(%s), %s", 16*l[1], tmp, list(acc(r, l[0]), l[1]))
			} else {
				a.Op("VLD1 (%s), %s", tmp, list(acc(r, l[0]), l[1]))
			}
		}
	}
	a.Op("MOVD %s, %s", v, vp)
	a.Op("MOVD %s, %s", n, cnt)
	key, store := a.NewLabel("key"), a.NewLabel("store")
	a.Op("CBZ %s, %s", cnt, store)
	a.Label(key)
	for r := range R {
		a.Op("VLD1R.P 4(%s), [%s]", wp[r], V(28+r).S4())
	}
	src := vp
	if len(lists) > 1 {
		a.Op("MOVD %s, %s", vp, vt)
		src = vt
	}
	for i, l := range lists {
		if i < len(lists)-1 {
			a.Op("VLD1.P %d(%s), %s", 16*l[1], src, list(24, l[1]))
		} else {
			a.Op("VLD1 (%s), %s", src, list(24, l[1]))
		}
		for c := range l[1] {
			for r := range R {
				a.Op("VFMLA %s, %s, %s", V(28+r).S4(), V(24+c).S4(), acc(r, l[0]+c).S4())
			}
		}
	}
	a.Op("ADD %s, %s, %s", stride, vp, vp)
	a.Op("SUB $1, %s, %s", cnt, cnt)
	a.Op("CBNZ %s, %s", cnt, key)
	a.Label(store)
	for r := range R {
		for _, l := range lists {
			a.Op("VST1.P %s, %d(%s)", list(acc(r, l[0]), l[1]), 16*l[1], ac[r])
		}
		a.Op("SUB %s, %s, %s", nb, wp[r], wp[r]) // back to the first key
	}
	a.Op("ADD $%d, %s, %s", 16*C, v, v)
	a.Op("SUB $%d, %s, %s", 4*C, d, d)
	a.Op("B %s", loop)
	a.Label(next)
}

// blendTail emits the last d < 4 columns for R rows, lane by lane: row r's
// accumulator in V(r), each key's columns in V24.
func blendTail(a *Asm, R int, ac, wp []R, v, stride, n, d, cnt, tmp, vp R) {
	key, store, done := a.NewLabel("tkey"), a.NewLabel("tstore"), a.NewLabel("done")
	a.Op("CBZ %s, %s", d, done)
	for r := range R {
		laneLoad(a, V(r), ac[r], d, tmp)
	}
	a.Op("MOVD %s, %s", v, vp)
	a.Op("MOVD %s, %s", n, cnt)
	a.Op("CBZ %s, %s", cnt, store)
	a.Label(key)
	for r := range R {
		a.Op("VLD1R.P 4(%s), [%s]", wp[r], V(28+r).S4())
	}
	laneLoad(a, 24, vp, d, tmp)
	for r := range R {
		a.Op("VFMLA %s, %s, %s", V(28+r).S4(), V(24).S4(), V(r).S4())
	}
	a.Op("ADD %s, %s, %s", stride, vp, vp)
	a.Op("SUB $1, %s, %s", cnt, cnt)
	a.Op("CBNZ %s, %s", cnt, key)
	a.Label(store)
	for r := range R {
		laneStore(a, V(r), ac[r], d, tmp)
	}
	a.Label(done)
}
