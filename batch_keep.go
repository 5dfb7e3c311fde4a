package attention

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"

	"github.com/glancelab/attention/internal/kernel"
)

// The keep-mask on the block path. Keys a row does not keep get a -Inf
// score in that row's lane, as past a causal frontier, so their weight is
// exactly 0; their value rows are still read by the blend (0·v), which is
// only right while those rows are finite. So the block takes the keys
// before the first masked key whose value row is not finite, and the row
// path, which never reads masked keys, takes the rest.

// allKept is eight true flags read as one little-endian word.
const allKept = 0x0101010101010101

// keepBytes views a keep-mask as bytes (a Go bool is one byte, 0 or 1), so
// eight flags can be tested at once.
func keepBytes(keep []bool) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(keep))), len(keep))
}

// nextMasked returns the first k' >= k with keep[k'] == 0, or len(keep):
// 32 flags a step while all are kept (the AND of four words is allKept
// only then), then a word at a time, where the first zero byte is the
// first set byte of w XOR allKept.
func nextMasked(keep []byte, k int) int {
	for ; k+32 <= len(keep); k += 32 {
		b := keep[k : k+32]
		le := binary.LittleEndian
		if le.Uint64(b)&le.Uint64(b[8:])&le.Uint64(b[16:])&le.Uint64(b[24:]) != allKept {
			break
		}
	}
	for ; k+8 <= len(keep); k += 8 {
		if w := binary.LittleEndian.Uint64(keep[k:]) ^ allKept; w != 0 {
			return k + bits.TrailingZeros64(w)/8
		}
	}
	for ; k < len(keep); k++ {
		if keep[k] == 0 {
			return k
		}
	}
	return len(keep)
}

// keepCut returns the end of the keys, from tk.lo, that the block path
// can take for the rows of task tk under the keep-mask: n, or the first
// key below n that some row masks and whose value row is not finite. Only
// when the value rows are not all finite are the mask rows read, in order,
// each masked key's row checked once. seen holds at least n floats of
// scratch.
func (p *batchPlan) keepCut(tk *batchTask, n int, seen []float32) int {
	b, kh, lo := tk.b, tk.kh, tk.lo
	if p.finiteValues(b, kh, lo, n) {
		return n
	}
	seen = seen[:n]
	clear(seen[lo:])
	cut := n
	for r := range tk.R {
		kr := keepBytes(p.keep(tk.is[r])[:n])
		for k := nextMasked(kr, lo); k < cut; k = nextMasked(kr, k+1) {
			if seen[k] != 0 {
				continue
			}
			seen[k] = 1
			if !p.finiteValues(b, kh, k, k+1) {
				cut = k
			}
		}
	}
	return cut
}

// keepTile sets s[k*16+r] = -Inf where row r of task tk does not keep key
// j0+k, for the tile of block scores s: its mask rows are consecutive for
// the rows of one head, and repeat for each head of a packed group.
func (p *batchPlan) keepTile(s []float32, tk *batchTask, j0 int) {
	Tk := p.k.rows
	if tk.single {
		kernel.BlockKeep(s, keepBytes(p.opt.Keep)[tk.i0*Tk+j0:], Tk, tk.R)
		return
	}
	ninf := float32(math.Inf(-1))
	for r := range tk.R {
		for k, kept := range p.keep(tk.is[r])[j0 : j0+len(s)/kernel.BlockRows] {
			if !kept {
				s[k*kernel.BlockRows+r] = ninf
			}
		}
	}
}
