package main

import "fmt"

// The row kernels over 16-bit key and value rows are scoreRows and
// blendRows with each element of k or v widened to float32 as it is
// loaded: the loops read half the bytes and do the same FMAs in the same
// order, so a 16-bit row gives the bits its widened float32 row gives
// scoreRows and blendRows. rowElems is what differs between the formats.

func init() {
	neon["scoreRowsF16"] = func(a *Asm) { genScoreRows(a, f16Rows) }
	neon["scoreRowsBF16"] = func(a *Asm) { genScoreRows(a, bf16Rows) }
	neon["blendRowsF16"] = func(a *Asm) { genBlendRows(a, f16Rows) }
	neon["blendRowsBF16"] = func(a *Asm) { genBlendRows(a, bf16Rows) }
}

// rowElems is the element type of the rows a kernel reads.
type rowElems struct {
	shift uint // log2 of an element's bytes
	// lo and hi widen the low and the high four halfwords of n into the
	// four floats of d; nil for float32 rows.
	lo, hi func(d, n V) Word
}

var (
	f32Rows  = rowElems{shift: 2}
	f16Rows  = rowElems{shift: 1, lo: FCVTL, hi: FCVTL2}
	bf16Rows = rowElems{shift: 1, lo: SHLL, hi: SHLL2}
)

// load sets the n (1, 2 or 4) vectors from dst to the floats of the next
// 4n elements at p, advancing p past them if post. 16-bit elements go
// through the registers from raw (n/2 of them, or one), each eight
// halfwords or, for n = 1, four.
func (e rowElems) load(a *Asm, p R, post bool, dst V, n int, raw V) {
	op := func(bytes int) string {
		if post {
			return fmt.Sprintf("VLD1.P %d(%s)", bytes, p)
		}
		return fmt.Sprintf("VLD1 (%s)", p)
	}
	switch {
	case e.lo == nil:
		a.Op("%s, %s", op(16*n), list(dst, n))
	case n == 1:
		a.Op("%s, [%s]", op(8), raw.H4())
		a.W(e.lo(dst, raw))
	default:
		a.Op("%s, %s", op(8*n), listH8(raw, n/2))
		for i := range V(n / 2) {
			a.W(e.lo(dst+2*i, raw+i))
			a.W(e.hi(dst+2*i+1, raw+i))
		}
	}
}

// loadAt is load of up to 8 vectors, leaving p where it is; tmp is
// clobbered.
func (e rowElems) loadAt(a *Asm, p, tmp R, dst V, n int, raw V) {
	if e.lo == nil && n > 4 {
		a.Op("MOVD %s, %s", p, tmp)
		e.load(a, tmp, true, dst, 4, raw)
		e.load(a, tmp, false, dst+4, n-4, raw)
		return
	}
	e.load(a, p, false, dst, n, raw)
}

// part sets dst to the floats of the cnt (1–3) elements at p, the other
// lanes zero, reading no other byte; tmp and raw are clobbered.
func (e rowElems) part(a *Asm, dst V, p, cnt, tmp R, raw V) {
	if e.lo == nil {
		laneLoad(a, dst, p, cnt, tmp)
		return
	}
	laneLoadH(a, raw, p, cnt, tmp)
	a.W(e.lo(dst, raw))
}

// one sets the scalar F(dst) to the float of the element at p.
func (e rowElems) one(a *Asm, dst V, p R) {
	if e.lo == nil {
		a.Op("FMOVS (%s), %s", p, dst.F())
		return
	}
	a.Op("VLD1 (%s), %s", p, dst.HLane(0))
	a.W(e.lo(dst, dst))
}
