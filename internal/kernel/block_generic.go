package kernel

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/glancelab/attention/internal/scalar"
)

// Block kernels: the batched engine's register-blocked path. A block is
// blockRows query rows laid out across SIMD lanes ("transposed"): element
// r of every 16-float group belongs to query row r. Scores, softmax state
// and the partial output all keep that layout, so the online softmax of
// sixteen rows is plain vertical arithmetic, with no horizontal sums.
//
//	qt [d][16]   the block's scaled queries, qt[c*16+r] = q_r[c]
//	st [n][16]   scores of n keys, then their weights
//	ot [dv][16]  the unnormalised output, ot[c*16+r] = o_r[c]
//	ml [4][16]   running max m, running sum l, rescale factor c, and mu,
//	             the max the weights are taken against
const BlockRows = 16

// blockScoresGeneric sets st[j*16+r] = Σ_c qt[c*16+r]·k[j*stride+c] for
// j < len(st)/16, c < len(qt)/16, summing over c in order.
func blockScoresGeneric(st, qt, k []float32, stride int) {
	d := len(qt) / BlockRows
	for j := range len(st) / BlockRows {
		var acc [BlockRows]float32
		for c, x := range k[j*stride : j*stride+d] {
			q := qt[c*BlockRows : (c+1)*BlockRows]
			for r := range acc {
				acc[r] += float32(q[r] * x)
			}
		}
		copy(st[j*BlockRows:], acc[:])
	}
}

// blockScores2Generic is blockScores2 as two calls of blockScores, the
// selected implementation's: the implementations without a kernel of their
// own for it run theirs, and an avx512 blockScores2 is checked against
// the avx512 blockScores bit for bit.
func blockScores2Generic(st0, st1, qt0, qt1, k []float32, stride int) {
	BlockScores(st0, qt0, k, stride)
	BlockScores(st1, qt1, k, stride)
}

// blockMaxGeneric starts a tile of the online softmax: per lane it raises
// m to the largest score of st, sets mu to that max (0 while it is -Inf, so
// that exp(-Inf - mu) is 0 rather than NaN), c = e^(m_old - mu), and l *= c.
// A NaN score need not reach m: the exp pass turns it into a NaN in l.
func blockMaxGeneric(st, ml []float32) {
	m, l, c, mu := ml[:16], ml[16:32], ml[32:48], ml[48:64]
	mt := [BlockRows]float32(m)
	for j := 0; j < len(st); j += BlockRows {
		for r, s := range st[j : j+BlockRows] {
			if s > mt[r] {
				mt[r] = s
			}
		}
	}
	for r := range BlockRows {
		u := mt[r]
		if math.IsInf(float64(u), -1) {
			u = 0
		}
		c[r] = scalar.Exp32(m[r] - u)
		l[r] *= c[r]
		m[r], mu[r] = mt[r], u
	}
}

// blockExpSumGeneric sets st[j*16+r] = e^(st[j*16+r] - mu[r]) and adds it
// to l[r], key by key in order.
func blockExpSumGeneric(st, ml []float32) {
	l, mu := ml[16:32], ml[48:64]
	for j := 0; j < len(st); j += BlockRows {
		s := st[j : j+BlockRows]
		for r := range s {
			s[r] = scalar.Exp32(s[r] - mu[r])
			l[r] += s[r]
		}
	}
}

// blockBlendGeneric sets ot[i*16+r] = ot[i*16+r]·c[r] + Σ_j st[j*16+r]·v[j*stride+i]
// for i < len(ot)/16, j < len(st)/16, adding the keys in order. An empty c
// means no rescale.
func blockBlendGeneric(ot, st, v []float32, stride int, c []float32) {
	dv := len(ot) / BlockRows
	for i := range dv * min(1, len(c)) {
		o := ot[i*BlockRows : (i+1)*BlockRows]
		for r, f := range c[:BlockRows] {
			o[r] *= f
		}
	}
	for j := range len(st) / BlockRows {
		p := st[j*BlockRows : (j+1)*BlockRows]
		for i, x := range v[j*stride : j*stride+dv] {
			o := ot[i*BlockRows : (i+1)*BlockRows]
			for r := range o {
				o[r] += float32(p[r] * x)
			}
		}
	}
}

// blockBlend2Generic is blockBlend2 as two calls of blockBlend, the
// selected implementation's (see blockScores2Generic).
func blockBlend2Generic(ot0, ot1, st0, st1, v []float32, stride int, c0, c1 []float32) {
	BlockBlend(ot0, st0, v, stride, c0)
	BlockBlend(ot1, st1, v, stride, c1)
}

// blockInGeneric sets qt[c*16+r] = q[r*stride+c] for r < rows and 0
// for rows <= r < 16, c < len(qt)/16: a block's queries into the
// lanes.
func blockInGeneric(qt, q []float32, stride, rows int) {
	d := len(qt) / BlockRows
	if rows < BlockRows {
		clear(qt)
	}
	for r := range rows {
		for c, x := range q[r*stride : r*stride+d] {
			qt[c*BlockRows+r] = x
		}
	}
}

// blockOutGeneric sets o[r*stride+c] = ot[c*16+r] for r < rows,
// c < len(ot)/16: a block's output lanes back into rows.
func blockOutGeneric(o []float32, stride, rows int, ot []float32) {
	d := len(ot) / BlockRows
	for r := range rows {
		row := o[r*stride : r*stride+d]
		for c := range row {
			row[c] = ot[c*BlockRows+r]
		}
	}
}

// blockKeepGeneric sets st[k*16+r] = -Inf where keep[r*stride+k] == 0, for
// r < rows and k < len(st)/16: a keep-mask into the lanes. Eight flags a
// step: with flags 0 or 1, each masked key is one set bit of the word
// XOR allKept, at the bottom of its byte.
func blockKeepGeneric(st []float32, keep []byte, stride, rows int) {
	n := len(st) / BlockRows
	ninf := float32(math.Inf(-1))
	for r := range rows {
		kr := keep[r*stride : r*stride+n]
		k := 0
		for ; k+8 <= n; k += 8 {
			for w := binary.LittleEndian.Uint64(kr[k:]) ^ allKept; w != 0; w &= w - 1 {
				st[(k+bits.TrailingZeros64(w)/8)*BlockRows+r] = ninf
			}
		}
		for ; k < n; k++ {
			if kr[k] == 0 {
				st[k*BlockRows+r] = ninf
			}
		}
	}
}

// blockKeep16Generic is blockKeepGeneric for a whole block of rows, on the
// keys of whole groups of sixteen, as the assembly kernels take them.
func blockKeep16Generic(st []float32, keep []byte, stride int) {
	n := len(st) / BlockRows &^ 15
	blockKeepGeneric(st[:n*BlockRows], keep, stride, BlockRows)
}

// blockScoresAskGeneric is blockScoresAsk as blockScores (the selected
// implementation's): the asking changes no result.
func blockScoresAskGeneric(st, qt, k []float32, stride int, ask []uint16) {
	BlockScores(st, qt, k, stride)
}

// blockBlendAskGeneric is blockBlendAsk as blockBlend (the selected
// implementation's).
func blockBlendAskGeneric(ot, st, v []float32, stride int, c []float32, ask []uint16) {
	BlockBlend(ot, st, v, stride, c)
}

// allKept is eight true flags of a keep-mask read as one little-endian
// word (package attention's keep-mask scan has the same constant).
const allKept = 0x0101010101010101
