package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// Where a call's keys and values live: the K and V tensors of Attend, or
// the rows a KVCache holds (AttendCache), as float32 or 16-bit elements.
// The engine addresses keys by their index j among an entry's keys; the
// functions here map it to stored rows and pick the kernels of the
// element type, a cache's through cacheHead (cache_head.go), which a
// Memory over a cache reads through too. A ring cache's held rows wrap at its capacity, so a run of
// keys may be two runs of rows: every kernel call below is cut there, and
// the multi-row and block paths cut their tiles there (see keyRun).

// keyRows is where a call's keys and values live: the tensors k and v,
// or, if kv is not nil, the rows of that cache (AttendCache), stored as
// kt; k and v then give only their shapes.
type keyRows struct {
	k, v Tensor
	kv   *KVCache
	kt   KVType
}

// keyRun returns the stored row of entry b's key j and how many rows from
// it on are contiguous (key j+n is row r+n for n below it).
func (p *keyRows) keyRun(b, j int) (r, run int) {
	c := p.kv
	if c == nil {
		return j, math.MaxInt
	}
	// cacheHead.run, without building the head: the block path asks for
	// every tile of every task.
	r = c.Start(b) + j
	if r >= c.capacity {
		r -= c.capacity
	}
	return r, c.capacity - r
}

// within returns how many of the n keys from key j of entry b are
// contiguous rows.
func (p *keyRows) within(b, j, n int) int {
	_, run := p.keyRun(b, j)
	return min(n, run)
}

// keys32 returns the float32 key rows of (b, kh) from stored row r to the
// end of the rows the entry holds (see KVCache.heldRows).
func (p *keyRows) keys32(b, kh, r int) []float32 {
	if c := p.kv; c != nil {
		return c.heldKeys32(b, kh)[r*c.dk:]
	}
	return p.k.rowsFrom(b, kh, r)
}

// values32 is keys32 for the value rows.
func (p *keyRows) values32(b, kh, r int) []float32 {
	if c := p.kv; c != nil {
		return c.heldValues32(b, kh)[r*c.dv:]
	}
	return p.v.rowsFrom(b, kh, r)
}

// keys16 and values16 return the 16-bit rows of a cache, from stored row r.
func (p *keyRows) keys16(b, kh, r int) []uint16 {
	return p.kv.heldKeys16(b, kh)[r*p.kv.dk:]
}

func (p *keyRows) values16(b, kh, r int) []uint16 {
	return p.kv.heldValues16(b, kh)[r*p.kv.dv:]
}

// keys8 and values8 return the int8 rows of a cache (each its scale and its
// elements), from stored row r.
func (p *keyRows) keys8(b, kh, r int) []int8 {
	return p.kv.heldKeys8(b, kh)[r*p.kv.rk:]
}

func (p *keyRows) values8(b, kh, r int) []int8 {
	return p.kv.heldValues8(b, kh)[r*p.kv.rv:]
}

// scoreKeys sets s[n] to the dot of q with key j0+n of (b, kh), for
// n < len(s): scoreRows over the keys' rows.
func (p *keyRows) scoreKeys(s []float32, b, kh, j0 int, q []float32) {
	if p.kv != nil {
		h := p.kv.head(b, kh)
		h.scoreKeys(s, j0, q)
		return
	}
	kernel.ScoreRows(s, p.k.rowsFrom(b, kh, j0), p.k.rs, q)
}

// blendValues adds Σ w[n]·v(j0+n) to acc over the value rows of (b, kh)
// from key j0, those keep keeps (all if it is nil), as blendKept does.
func (p *keyRows) blendValues(acc, w []float32, b, kh, j0 int, keep []bool) {
	if p.kv != nil {
		h := p.kv.head(b, kh)
		h.blendValues(acc, w, j0, keep)
		return
	}
	blendKept(acc, w, p.v.rowsFrom(b, kh, j0), p.v.rs, keep)
}

// blendKept adds Σ w[i]·v[i] to acc over the kept rows (all if keep is
// nil), one kernel call per run of consecutive kept rows: masked rows are
// never read.
func blendKept(acc, w, v []float32, stride int, keep []bool) {
	blendKeptWith(acc, w, v, stride, keep, kernel.BlendRows)
}

// blendKeptWith is blendKept over value rows of E, blended by kernel.
func blendKeptWith[E float32 | uint16 | int8](acc, w []float32, v []E, stride int, keep []bool, kernel func(acc, w []float32, v []E, stride int)) {
	if len(acc) == 0 {
		return
	}
	if keep == nil {
		kernel(acc, w, v, stride)
		return
	}
	for i := 0; i < len(keep); {
		if !keep[i] {
			i++
			continue
		}
		k := i + 1
		for k < len(keep) && keep[k] {
			k++
		}
		kernel(acc, w[i:k], v[i*stride:], stride)
		i = k
	}
}

// finiteValues reports whether value rows [j0, j1) of (b, kh) hold only
// finite numbers. A float32 row's dot with itself is finite only then; a
// 16-bit row's sum is too, as long as it does not overflow (binary16
// rows never do; a huge bfloat16 row may say no, as may a huge float32
// one, which only costs speed: its keys take the row path).
func (p *keyRows) finiteValues(b, kh, j0, j1 int) bool {
	dv, rs := p.v.cols, p.v.rs
	for j0 < j1 {
		r, run := p.keyRun(b, j0)
		n := min(j1-j0, run)
		switch p.kt {
		case F32:
			if !finite32(p.values32(b, kh, r), n, dv, rs) {
				return false
			}
		case I8:
			if !finite8(p.values8(b, kh, r), n, rs) {
				return false
			}
		default:
			// The cache's rows are packed (rs = dv): one run of n·dv
			// elements.
			if !finite16(p.values16(b, kh, r)[:n*dv], p.kt) {
				return false
			}
		}
		j0 += n
	}
	return true
}

// finite32 reports whether the n rows of v (d elements, stride apart) are
// finite: one dot over all of them when they are packed, else row by row.
func finite32(v []float32, n, d, stride int) bool {
	if stride == d {
		x := v[:n*d]
		if s := dot(x, x); s-s == 0 {
			return true
		}
	}
	for i := range n {
		x := v[i*stride : i*stride+d]
		if s := dot(x, x); s-s != 0 {
			return false
		}
	}
	return true
}

// finite8 reports whether the n int8 rows of v (stride elements apart)
// are finite: whether their scales are (a row that was not is stored
// with the scale NaN, and a finite scale is at most max float32 / 127).
func finite8(v []int8, n, stride int) bool {
	for i := range n {
		if s := kernel.RowScaleI8(v[i*stride:]); s-s != 0 {
			return false
		}
	}
	return true
}

// onesLen is how many 16-bit elements finite16 sums per kernel call.
const onesLen = 256

// finite16 reports whether the 16-bit elements x (of type t) are all
// finite, by their sums, a kernel call per onesLen of them: an infinity or
// a NaN makes a sum infinite or NaN, and onesLen binary16 values (at most
// 65504 each) cannot overflow one.
func finite16(x []uint16, t KVType) bool {
	var s [1]float32
	var ones [onesLen]float32 // on the stack, not a package variable every program would link
	for i := range ones {
		ones[i] = 1
	}
	for len(x) > 0 {
		n := min(len(x), onesLen)
		if t == F16 {
			kernel.ScoreRowsF16(s[:], x[:n], n, ones[:n])
		} else {
			kernel.ScoreRowsBF16(s[:], x[:n], n, ones[:n])
		}
		if s[0]-s[0] != 0 {
			return false
		}
		x = x[n:]
	}
	return true
}
