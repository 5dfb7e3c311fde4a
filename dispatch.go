package attention

import (
	"math"

	"github.com/glancelab/attention/internal/impl"
)

// Implementation returns the name of the kernel implementation in use:
// "generic" (pure Go) or the name of an accelerated path such as "avx2".
// The environment variable ATTENTION_IMPL=generic, read at program start,
// or the build tag purego force the generic path.
func Implementation() string { return impl.Active() }

// Implementations lists every implementation this CPU can run, the default
// first and "generic" last.
func Implementations() []string { return impl.List() }

// additiveBlock is how many keys additiveScores puts through one Exp call.
const additiveBlock = 16

// additiveScores sets dst[i] = Σ_j v[j]*tanh(s[j] + u[i*stride+j]) for
// i < len(dst), j < len(v): additive (Bahdanau) scores of a block of keys
// whose projections U·h are the rows of u, against the projected query
// s = W·q. The exponentials of a block of keys (the expensive part of tanh)
// go through one call of the Exp kernel, so every implementation's Exp
// serves; each tanh is bit-identical to tanh32. tmp needs
// additiveBlock*len(v) floats.
func additiveScores(dst, u []float32, stride int, s, v, tmp []float32) {
	da := len(v)
	for i0 := 0; i0 < len(dst); i0 += additiveBlock {
		n := min(additiveBlock, len(dst)-i0)
		z := tmp[:n*da]
		for r := range n {
			row := u[(i0+r)*stride : (i0+r)*stride+da]
			zr := z[r*da : (r+1)*da]
			for j := range zr {
				x := s[j] + row[j]
				zr[j] = 2 * float32(math.Abs(float64(x)))
			}
		}
		expv(z, z)
		for r := range n {
			row := u[(i0+r)*stride : (i0+r)*stride+da]
			zr := z[r*da : (r+1)*da]
			for j, e := range zr {
				zr[j] = tanhFinish(s[j]+row[j], e)
			}
			dst[i0+r] = dot(v, zr)
		}
	}
}
