package main

// Shared pieces of the kernels.

// zero clears vector registers.
func zero(a *Asm, vs ...V) {
	for _, v := range vs {
		a.Op("VEOR %s, %s, %s", v.B16(), v.B16(), v.B16())
	}
}

// laneLoad clears v and loads cnt (1–3) floats from p into its first lanes;
// tmp is clobbered.
func laneLoad(a *Asm, v V, p, cnt, tmp R) {
	done := a.NewLabel("ll")
	zero(a, v)
	a.Op("VLD1 (%s), %s", p, v.Lane(0))
	for i := 1; i < 3; i++ {
		a.Op("CMP $%d, %s", i+1, cnt)
		a.Op("BLT %s", done)
		a.Op("ADD $%d, %s, %s", 4*i, p, tmp)
		a.Op("VLD1 (%s), %s", tmp, v.Lane(i))
	}
	a.Label(done)
}

// laneLoadH clears v and loads cnt (1–3) halfwords from p into its first
// lanes; tmp is clobbered.
func laneLoadH(a *Asm, v V, p, cnt, tmp R) {
	done := a.NewLabel("llh")
	zero(a, v)
	a.Op("VLD1 (%s), %s", p, v.HLane(0))
	for i := 1; i < 3; i++ {
		a.Op("CMP $%d, %s", i+1, cnt)
		a.Op("BLT %s", done)
		a.Op("ADD $%d, %s, %s", 2*i, p, tmp)
		a.Op("VLD1 (%s), %s", tmp, v.HLane(i))
	}
	a.Label(done)
}

// laneStore stores the first cnt (1–3) lanes of v to p; tmp is clobbered.
func laneStore(a *Asm, v V, p, cnt, tmp R) {
	done := a.NewLabel("ls")
	a.Op("VST1 %s, (%s)", v.Lane(0), p)
	for i := 1; i < 3; i++ {
		a.Op("CMP $%d, %s", i+1, cnt)
		a.Op("BLT %s", done)
		a.Op("ADD $%d, %s, %s", 4*i, p, tmp)
		a.Op("VST1 %s, (%s)", v.Lane(i), tmp)
	}
	a.Label(done)
}

// tailMask loads into v the mask whose first cnt (1–3) lanes are set.
func tailMask(a *Asm, v V, cnt, tmp R) {
	a.Op("MOVD $·neonTailMask<>(SB), %s", tmp)
	a.Op("ADD $16, %s, %s", tmp, tmp)
	a.Op("SUB %s<<2, %s, %s", cnt, tmp, tmp)
	a.Op("VLD1 (%s), [%s]", tmp, v.S4())
}

// hsum leaves the sum of the 4 lanes of v in lane 0 of v (scalar F(v)).
func hsum(a *Asm, v V) {
	a.W(FADDP(v, v, v))
	a.W(FADDPS(v, v))
}

// addTree adds vs pairwise into vs[0].
func addTree(a *Asm, vs []V) {
	for step := 1; step < len(vs); step *= 2 {
		for i := 0; i+step < len(vs); i += 2 * step {
			a.W(FADD(vs[i], vs[i], vs[i+step]))
		}
	}
}

func regs(first V, n int) []V {
	vs := make([]V, n)
	for i := range vs {
		vs[i] = first + V(i)
	}
	return vs
}

// stream emits the usual walk over n elements: blocks of `block` floats
// (several vectors), then single vectors, then single floats. big, vec and
// scalar emit one step of each loop; between the vector and scalar loops
// runs between (nil for nothing). cnt is clobbered.
func stream(a *Asm, n, cnt R, block int, big, vec, between, scalar func()) {
	loop, vstart, vloop, sstart, sloop, done := a.NewLabel("loop"), a.NewLabel("vec"), a.NewLabel("vloop"), a.NewLabel("scalar"), a.NewLabel("sloop"), a.NewLabel("done")
	shift := map[int]int{16: 4, 32: 5}[block]
	a.Op("LSR $%d, %s, %s", shift, n, cnt)
	a.Op("CBZ %s, %s", cnt, vstart)
	a.Label(loop)
	big()
	a.Op("SUB $1, %s, %s", cnt, cnt)
	a.Op("CBNZ %s, %s", cnt, loop)
	a.Label(vstart)
	a.Op("UBFX $2, %s, $%d, %s", n, shift-2, cnt) // whole vectors left
	a.Op("CBZ %s, %s", cnt, sstart)
	a.Label(vloop)
	vec()
	a.Op("SUB $1, %s, %s", cnt, cnt)
	a.Op("CBNZ %s, %s", cnt, vloop)
	a.Label(sstart)
	if between != nil {
		between()
	}
	a.Op("AND $3, %s, %s", n, cnt)
	a.Op("CBZ %s, %s", cnt, done)
	a.Label(sloop)
	scalar()
	a.Op("SUB $1, %s, %s", cnt, cnt)
	a.Op("CBNZ %s, %s", cnt, sloop)
	a.Label(done)
}
