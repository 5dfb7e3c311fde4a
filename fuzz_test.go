package attention

import (
	"errors"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// The fuzz targets decode their bytes into float32 data, run every
// implementation this CPU supports on it, and compare each with the float64
// oracle under the same error bounds as the unit tests. The committed
// corpus in testdata/fuzz runs as ordinary tests everywhere.

// mildBytes returns fuzz data whose values (see decodeFloats) lie within
// ±1/2, bytes 117 to 133 in no short period: over rows of 64 or 128
// columns the scores stay small, so the softmax weighs many keys and one
// wrong product shows in the output, where data of a few large values
// saturate it onto a key or two.
func mildBytes() []byte {
	b := make([]byte, 61)
	for i := range b {
		b[i] = byte(117 + (i*37+11)%17)
	}
	return b
}

func FuzzDot(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, false)
	f.Add([]byte{255, 130, 0, 250}, true)
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		var x, y []float32
		if raw { // arbitrary bit patterns, 8 bytes per pair
			n := len(data) / 8
			x, y = make([]float32, n), make([]float32, n)
			for i := range n {
				x[i] = math.Float32frombits(le32(data[8*i:]))
				y[i] = math.Float32frombits(le32(data[8*i+4:]))
			}
		} else {
			v := testutil.DecodeFloats(data)
			x, y = v[:len(v)/2], v[len(v)/2:len(v)/2*2]
		}
		want, abs := reference.Dot(x, y)
		testutil.EachImpl(func(name string) {
			got := Dot(x, y)
			if !testutil.Close(got, want, reference.DotBound(len(x), abs)) && !testutil.Overflowed(want, abs) {
				t.Fatalf("%s: Dot(%v, %v) = %v, want %v", name, x, y, got, want)
			}
		})
	})
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func FuzzExp(f *testing.F) {
	for _, x := range testutil.Specials {
		f.Add(x, uint8(1))
	}
	f.Add(float32(-15.601058), uint8(17))
	f.Fuzz(func(t *testing.T, x float32, lane uint8) {
		// Put x in lane `lane` of a vector of ones, so every lane position
		// and tail length is exercised.
		n := int(lane%40) + 1
		in := make([]float32, n)
		for i := range in {
			in[i] = 1
		}
		in[n-1] = x
		testutil.EachImpl(func(name string) {
			out := make([]float32, n)
			Exp(out, in)
			if u, ok := expError(x, out[n-1]); !ok {
				t.Fatalf("%s: Exp(%v) = %v (%.3g ulp), want %v", name, x, out[n-1], u, reference.Exp(x))
			}
			if n > 1 && out[0] != float32(math.E) {
				t.Fatalf("%s: Exp(1) beside %v = %v", name, x, out[0])
			}
		})
	})
}

func FuzzSoftmax(f *testing.F) {
	f.Add([]byte{2, 1, 0}, float32(1))
	f.Add([]byte{250, 251, 252, 100}, float32(1))
	f.Add([]byte{0, 255, 3}, float32(1000))
	f.Fuzz(func(t *testing.T, data []byte, scale float32) {
		if scale != scale || math.IsInf(float64(scale), 0) || math.Abs(float64(scale)) > 1e6 {
			return
		}
		x := testutil.DecodeFloats(data)
		for i := range x {
			x[i] *= scale
		}
		want, bound := reference.Softmax(x)
		testutil.EachImpl(func(name string) {
			got := make([]float32, len(x))
			Softmax(got, x)
			for i := range got {
				if !testutil.Close(got[i], want[i], bound[i]) {
					t.Fatalf("%s: Softmax(%v)[%d] = %v, want %v ± %g", name, x, i, got[i], want[i], bound[i])
				}
			}
		})
	})
}

// FuzzAttend builds a decoder step from the fuzzer's bytes: the score kind,
// the shapes, a keep-mask and valid length, and all the data. The shape
// byte widens the step: bit 0 draws every dimension (keys, values, query,
// score) from a range that starts at 0, bits 1-2 pad every row of every
// matrix with that many NaN, so a read outside a row shows, and bit 3 puts
// NaN in the keys and +Inf in the values of masked keys, which are never
// read; bits 4-6, from 1 to 6, read the keys and values from a KVCache
// holding them, cacheSources[bits-1] (an f32, f16 or bf16 cache, packed
// or a wrapped ring); bit 7 makes the keys and values 64 or 128 wide (by
// the low bit of dkB and of dvB). Sizes no scorer takes must give its
// typed error. A shape of 0 is the step the earlier corpus entries were
// found with.
func FuzzAttend(f *testing.F) {
	f.Add(uint8(0), uint8(3), uint8(1), uint8(1), uint8(2), uint8(0), []byte{141, 157, 125, 189, 157, 125, 141})
	f.Add(uint8(4), uint8(5), uint8(3), uint8(2), uint8(9), uint8(0), []byte{1, 2, 3, 250, 5, 6, 7, 8, 9, 10, 200, 12})
	f.Add(uint8(5), uint8(17), uint8(9), uint8(7), uint8(33), uint8(0), []byte{77, 3, 199, 255, 0, 44})
	f.Add(uint8(3), uint8(8), uint8(8), uint8(3), uint8(0), uint8(0), []byte{})
	f.Add(uint8(1), uint8(6), uint8(0), uint8(0), uint8(0x83), uint8(0x0b), []byte{1, 200, 141})
	f.Add(uint8(0), uint8(9), uint8(5), uint8(3), uint8(0x85), uint8(0x28), []byte{77, 3, 199, 255, 0, 44, 124, 60})
	f.Add(uint8(4), uint8(12), uint8(3), uint8(2), uint8(0x02), uint8(0x50), []byte{1, 2, 3, 250, 5, 6, 7, 8, 9, 10, 200, 12})
	f.Fuzz(func(t *testing.T, kindB, tB, dkB, dvB, maskB, shapeB uint8, data []byte) {
		p, _, ok := fuzzProblem(t, fuzzShape{kindB, tB, dkB, dvB, maskB, shapeB}, data)
		if !ok || !oracleSane(reference.Attend(p.seen(t).ref)) {
			return
		}
		testutil.EachImpl(func(name string) { p.check(t, name+" "+p.scorer.String()) })
	})
}

// FuzzAttendMany is FuzzAttend with n queries (the last byte before the
// data, up to 39, so both paths and every block edge) taken from the data
// after the Memory's, in a view whose padding holds NaN; each query is
// compared with the oracle and with its own Attend call.
func FuzzAttendMany(f *testing.F) {
	f.Add(uint8(0), uint8(3), uint8(1), uint8(1), uint8(2), uint8(0), uint8(2), []byte{141, 157, 125, 189, 157, 125, 141})
	f.Add(uint8(4), uint8(5), uint8(3), uint8(2), uint8(9), uint8(2), uint8(9), []byte{1, 2, 3, 250, 5, 6, 7, 8, 9, 10, 200, 12})
	f.Add(uint8(1), uint8(69), uint8(9), uint8(7), uint8(0x83), uint8(8), uint8(17), []byte{77, 3, 199, 255, 0, 44})
	f.Add(uint8(3), uint8(40), uint8(8), uint8(3), uint8(0), uint8(1), uint8(33), []byte{})
	f.Add(uint8(5), uint8(6), uint8(0), uint8(0), uint8(0x83), uint8(0x0b), uint8(16), []byte{1, 200, 141})
	f.Add(uint8(0), uint8(40), uint8(8), uint8(3), uint8(0x85), uint8(0x68), uint8(17), []byte{77, 3, 199, 255, 0, 44, 124, 60})
	f.Add(uint8(1), uint8(69), uint8(9), uint8(7), uint8(0x83), uint8(0x58), uint8(12), []byte{1, 2, 3, 250, 5, 6, 7, 8, 9, 10, 200, 12})
	// Heads of 64 and 128 columns (bit 7 of shapeB) for one to eight
	// queries, over float32 rows and over caches of each storage type,
	// mild data.
	mild := mildBytes()
	for n := 1; n <= 8; n++ {
		for dk := range 2 {
			f.Add(uint8(1), uint8(69), uint8(dk), uint8(dk), uint8(0), uint8(0x80), uint8(n), mild)
		}
	}
	for src := 1; src <= 3; src++ {
		f.Add(uint8(1), uint8(69), uint8(src&1), uint8(src&1), uint8(0), uint8(0x80|src<<4), uint8(1+src), mild)
	}
	f.Fuzz(func(t *testing.T, kindB, tB, dkB, dvB, maskB, shapeB, nB uint8, data []byte) {
		p, d, ok := fuzzProblem(t, fuzzShape{kindB, tB, dkB, dvB, maskB, shapeB}, data)
		if !ok {
			return
		}
		n := int(nB) % 40
		if shapeB&0x80 != 0 {
			// Up to one block of the block kernels past the row ones: the
			// oracle of wide rows is the cost of a run.
			n = int(nB) % 13
		}
		q, rows := d.rows(t, n, len(p.ref.Query))
		c := manyCase{p: p, queries: q, rows: rows}
		seen := manyCase{p: p.seen(t), queries: q, rows: rows}
		for _, want := range seen.oracle() {
			if !oracleSane(want) {
				return
			}
		}
		testutil.EachImpl(func(name string) { c.check(t, name+" "+p.scorer.String()) })
	})
}

// fuzzShape holds the bytes of FuzzAttend's input that choose the step.
type fuzzShape struct{ kind, t, dk, dv, mask, shape uint8 }

// fuzzData hands out the values of a fuzz input in turn, cycled (zeros if
// there are none), and lays rows out with pad NaN after each.
type fuzzData struct {
	vals      []float32
	next, pad int
}

func (d *fuzzData) take(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		if len(d.vals) > 0 {
			x[i] = d.vals[d.next%len(d.vals)]
			d.next++
		}
	}
	return x
}

// rows returns an r×c view of the next values, NaN in the padding, and
// its rows as the oracle sees them.
func (d *fuzzData) rows(t *testing.T, r, c int) (Matrix, [][]float32) {
	stride := c + d.pad
	data := make([]float32, r*stride)
	out := make([][]float32, r)
	for i := range out {
		out[i] = data[i*stride : i*stride+c]
		copy(out[i], d.take(c))
		fillWith(data[i*stride+c:(i+1)*stride], float32(math.NaN()))
	}
	m, err := NewMatrixStrided(r, c, stride, data)
	if err != nil {
		t.Fatal(err)
	}
	return m, out
}

// fuzzProblem builds FuzzAttend's decoder step from in and data (see
// FuzzAttend). Sizes no scorer takes must give its typed error; ok is
// false for them, having checked it.
// seen returns the problem as the oracle sees it: over a cache, with the
// rows as stored (a float32 beyond the range of binary16 is infinite
// there, for example).
func (p problem) seen(t *testing.T) problem {
	if p.src.cache {
		if _, s, err := p.memory(t); err == nil {
			return s
		}
	}
	return p
}

func fuzzProblem(t *testing.T, in fuzzShape, data []byte) (p problem, d *fuzzData, ok bool) {
	kind := kinds[int(in.kind)%len(kinds)]
	T, dk, dv := int(in.t)%70, 1+int(in.dk)%40, 1+int(in.dv)%20
	dq, da := 1+int(in.dk/7)%9, 1+int(in.dv/5)%9
	if in.shape&1 != 0 {
		T, dk, dv = int(in.t)%70, int(in.dk)%41, int(in.dv)%21
		dq, da = int(in.dk/7)%10, int(in.dv/5)%10
	}
	if in.shape&0x80 != 0 {
		// The widths of a model's heads, where the float32 row kernels
		// have blocks of their own.
		dk, dv = 64<<(in.dk&1), 64<<(in.dv&1)
	}
	if isDot(kind) {
		dq = dk
	}
	d = &fuzzData{vals: testutil.DecodeFloats(data), pad: int(in.shape>>1) & 3}
	p.ref.Kind = kind
	p.keys, p.ref.Keys = d.rows(t, T, dk)
	p.values, p.ref.Values = d.rows(t, T, dv)
	p.ref.Query = d.take(dq)
	p.ref.Valid, p.ref.DV = T, dv
	if k := int(in.shape>>4) & 7; k >= 1 && k <= len(cacheSources) {
		p.src = cacheSources[k-1]
	}
	err := p.withScorer(kind, dq, dk, da, func(r, c int) (Matrix, [][]float32) { return d.rows(t, r, c) }, d.take)
	// General needs a row of W per query component, additive and
	// concat a nonempty v.
	if kind == reference.KindGeneral && dq == 0 || (kind == reference.KindAdditive || kind == reference.KindConcat) && da == 0 {
		if !errors.Is(err, ErrArgument) {
			t.Fatalf("%s dq=%d da=%d: scorer err = %v, want ErrArgument", kindName(kind), dq, da, err)
		}
		return p, d, false
	}
	if err != nil {
		t.Fatal(err)
	}
	p.fuzzMasks(in)
	// Concat needs query columns besides the key ones.
	if kind == reference.KindConcat && dq == 0 {
		if _, err := NewMemory(p.scorer, p.keys, p.values, p.opts...); !errors.Is(err, ErrShape) {
			t.Fatalf("concat dq=0 dk=%d: NewMemory err = %v, want ErrShape", dk, err)
		}
		return p, d, false
	}
	return p, d, true
}

// fuzzMasks sets the keep-mask and valid length in.mask asks for and,
// with bit 3 of in.shape, NaN keys and +Inf values at the masked keys.
func (p *problem) fuzzMasks(in fuzzShape) {
	T := len(p.ref.Keys)
	if in.mask&1 != 0 && T > 0 {
		keep := make([]bool, T)
		for i := range keep {
			keep[i] = (int(in.mask)>>(1+i%7))&1 == 0 || i%5 == 0
		}
		p.withKeep(keep)
	}
	if in.mask&0x80 != 0 {
		p.withValid(int(in.mask) % (T + 1))
	}
	if in.shape&8 != 0 {
		for i := range T {
			if i >= p.ref.Valid || p.ref.Keep != nil && !p.ref.Keep[i] {
				fillWith(p.ref.Keys[i], float32(math.NaN()))
				fillWith(p.ref.Values[i], float32(math.Inf(1)))
			}
		}
	}
}

// oracleSane reports whether the oracle's bounds say that no float32
// intermediate can overflow where its float64 ones do not: values beyond
// float32 range in intermediate sums are compared only where that holds.
func oracleSane(want reference.Result) bool {
	for _, b := range want.ScoreBound {
		if math.IsInf(b, 0) || b > 1e30 || math.IsNaN(b) {
			return false
		}
	}
	for _, b := range want.CtxBound {
		if b > 1e30 || math.IsNaN(b) {
			return false
		}
	}
	return true
}

// FuzzBatched builds a batched problem from the fuzzer's bytes: shapes
// (every dimension may be 0; or decode shapes of 64 and 128 columns),
// grouped heads, causal shift, valid lengths, a
// keep-mask, a sliding window, strided views, sinks, ALiBi slopes, the LSE
// output and all the data. Row padding of strided views holds NaN, so a
// read outside a row shows up in the output.
func FuzzBatched(f *testing.F) {
	f.Add(uint8(0), uint8(4), uint8(9), uint8(3), uint8(2), uint8(0), uint8(0), []byte{141, 157, 125, 189})
	f.Add(uint8(13), uint8(33), uint8(200), uint8(16), uint8(7), uint8(0x5b), uint8(0), []byte{1, 2, 250, 77, 3, 199, 255, 0, 44})
	f.Add(uint8(6), uint8(17), uint8(64), uint8(63), uint8(9), uint8(0x7f), uint8(0), []byte{9, 200, 31, 140, 252})
	// Zero sizes: no query rows on two workers; keys and values of
	// dimension 0 on the block path; no keys with strided weights; no heads.
	f.Add(uint8(9), uint8(0), uint8(5), uint8(3), uint8(2), uint8(0), uint8(0), []byte{141})
	f.Add(uint8(8), uint8(20), uint8(7), uint8(0), uint8(0), uint8(0x01), uint8(0), []byte{141, 157})
	f.Add(uint8(9), uint8(3), uint8(0), uint8(4), uint8(3), uint8(0x60), uint8(0), []byte{})
	f.Add(uint8(0xf3), uint8(4), uint8(4), uint8(4), uint8(4), uint8(0), uint8(0), []byte{1})
	// A sliding window over rows cut into chunks of keys (bit 7, odd tkB).
	f.Add(uint8(5), uint8(9), uint8(201), uint8(8), uint8(5), uint8(0x99), uint8(0), []byte{9, 200, 31, 140, 252})
	// Sinks, ALiBi and the LSE (bits 0–2 of the seventh byte), the
	// frontier aligned to ValidLen (bit 3), non-finite slopes let through
	// to be refused (bit 4): on the block path with masks, on the row path
	// with weights, with special sinks.
	f.Add(uint8(13), uint8(33), uint8(200), uint8(16), uint8(7), uint8(0x5b), uint8(0x0f), []byte{1, 2, 250, 77, 3, 199, 255, 0, 44})
	f.Add(uint8(2), uint8(3), uint8(70), uint8(8), uint8(5), uint8(0x29), uint8(0x07), []byte{250, 251, 252, 130, 100, 160})
	f.Add(uint8(4), uint8(9), uint8(20), uint8(4), uint8(3), uint8(0x08), uint8(0x17), []byte{251, 130, 140})
	// And with a window over chunks of keys.
	f.Add(uint8(5), uint8(9), uint8(201), uint8(8), uint8(5), uint8(0x99), uint8(0x07), []byte{9, 200, 31, 140, 252})
	// Decode shapes (bits 5 and 6 of the seventh byte): one to eight
	// query heads a group (dvB/2), heads of 64 or 128 columns (dkB), over
	// two tiles of keys, one row each, mild data; and a causal batch of
	// two with two rows, the LSE, and NaN and Inf among the data.
	mild := mildBytes()
	for g := range 8 {
		for dk := range 2 {
			f.Add(uint8(0), uint8(1), uint8(171), uint8(3*dk), uint8(2*g), uint8(0), uint8(0x60), mild)
		}
	}
	f.Add(uint8(9), uint8(2), uint8(200), uint8(1), uint8(7), uint8(0x01), uint8(0x64), []byte{250, 251, 252, 130, 100, 160, 7})
	f.Fuzz(func(t *testing.T, hB, tqB, tkB, dkB, dvB, flags, more uint8, data []byte) {
		hkv, group, B := 1+int(hB)%2, 1+int(hB/2)%3, int(hB/8)%3
		if hB >= 0xf0 { // no query heads, and for some no key/value heads either
			hkv, group = int(hB)%2, 0
		}
		c := batchCase{
			B: B, H: hkv * group, Hkv: hkv,
			Tq: int(tqB) % 41, Tk: int(tkB), dk: int(dkB) % 25, dv: int(dvB) % 13,
			causal: flags&1 != 0, shift: int(flags>>1)%4 - 1, valid: flags&8 != 0,
			keep: flags&16 != 0, weights: flags&32 != 0, strided: flags&64 != 0,
			sinks: more&1 != 0, alibi: more&2 != 0, lse: more&4 != 0, toValid: more&8 != 0,
		}
		if more&0x60 == 0x60 {
			// Decode shapes: heads of 64 or 128 columns, one to eight query
			// heads a group with a few rows each, over one or two tiles of
			// keys, where the row-major scores, the stream blends and the
			// wide row kernels take the rows.
			B = 1 + int(hB/8)%2
			c.B, c.H = B, hkv*(1+int(dvB/2)%8)
			c.Tq, c.Tk = int(tqB)%5, 3*int(tkB)
			c.dk, c.dv = 64<<(dkB&1), 64<<(dkB>>1&1)
		}
		if flags&128 != 0 {
			// A sliding window, and for odd tkB rows long enough to be
			// cut into chunks of keys.
			if tkB&1 != 0 {
				c.Tk = 9 * int(tkB)
			}
			c.window = 1 + (37*int(dkB)+int(tqB))%(c.Tk+1)
		}
		vals := testutil.DecodeFloats(data)
		next := 0
		take := func() float32 {
			if len(vals) == 0 {
				return 0
			}
			next++
			return vals[(next-1)%len(vals)]
		}
		build := func(H, T, d int) Tensor {
			rs := d
			if c.strided {
				rs = d + 2
			}
			x := make([]float32, B*H*T*rs)
			for i := range x {
				if i%rs < d {
					x[i] = take()
				} else {
					x[i] = float32(math.NaN())
				}
			}
			ts, err := NewTensorStrided(B, H, T, d, H*T*rs, T*rs, rs, x)
			if err != nil {
				t.Fatal(err)
			}
			return ts
		}
		p := &batchProblem{c: c, lenient: true}
		p.q, p.k, p.v = build(c.H, c.Tq, c.dk), build(c.Hkv, c.Tk, c.dk), build(c.Hkv, c.Tk, c.dv)
		p.out = build(c.H, c.Tq, c.dv)
		p.opt = BatchOptions{Causal: c.causal, CausalShift: c.shift, Window: c.window}
		if c.valid {
			p.opt.ValidLen = make([]int, B)
			for b := range B {
				p.opt.ValidLen[b] = (int(tkB) + 7*b + int(flags)) % (c.Tk + 1)
			}
		}
		if c.keep {
			p.opt.Keep = make([]bool, c.Tq*c.Tk)
			for i := range p.opt.Keep {
				p.opt.Keep[i] = (i*int(dvB|1)+int(tqB))%5 != 0
			}
		}
		if c.weights {
			p.w = build(c.H, c.Tq, c.Tk)
		}
		p.opt.CausalToValidLen = c.toValid
		refuse := fuzzPerHead(p, more&16 != 0, take)
		testutil.EachImpl(func(name string) {
			for _, workers := range []int{1, 2} {
				e := NewBatched(workers)
				err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt)
				e.Close()
				switch {
				case refuse && !errors.Is(err, ErrArgument):
					t.Fatalf("%s: %v: non-finite ALiBi slope %v: err = %v, want ErrArgument", name, c, p.opt.ALiBi, err)
				case refuse:
					continue
				case err != nil:
					t.Fatalf("%s: %v: %v", name, c, err)
				}
				p.check(t)
			}
		})
	})
}

// fuzzPerHead sets the sinks, ALiBi slopes and LSE output of a fuzzed
// problem as its case asks, the values from the data: the sinks as they
// come (special values too), the slopes a sixteenth of theirs, a slope that
// is not finite replaced by 1/8 unless raw. It reports whether Attend must
// refuse the call (a slope that is not finite).
func fuzzPerHead(p *batchProblem, raw bool, take func() float32) bool {
	c := p.c
	if c.sinks {
		p.opt.Sinks = make([]float32, c.H)
		for h := range p.opt.Sinks {
			p.opt.Sinks[h] = take()
		}
	}
	refuse := false
	if c.alibi {
		p.opt.ALiBi = make([]float32, c.H)
		for h := range p.opt.ALiBi {
			x := take() / 16
			if x-x != 0 && !raw {
				x = 0.125
			}
			p.opt.ALiBi[h], refuse = x, refuse || x-x != 0
		}
	}
	if c.lse {
		p.lse = make([]float32, c.B*c.H*c.Tq)
		fillNaN(p.lse)
	}
	return refuse
}

// FuzzBatchedScores runs Batched.Attend with the score-stage options (Bias,
// Softcap, ALiBi, CausalToValidLen, Logits) under every implementation and
// compares it with the oracle. The shape and option bits choose the case;
// the data bytes become bias entries at random places, special values
// (NaN, ±Inf, huge, tiny) included.
func FuzzBatchedScores(f *testing.F) {
	f.Add(uint64(1), uint8(0x5a), uint8(0x3f), []byte{255, 250, 0, 130})
	f.Add(uint64(2), uint8(0xc7), uint8(0xa1), []byte{252, 253, 141})
	f.Add(uint64(3), uint8(0x01), uint8(0xf6), []byte{})
	f.Add(uint64(4), uint8(0x7e), uint8(0x9b), []byte{251, 251, 251, 251, 251, 251, 251, 251})
	// Bit 3 of the seed adds a keep-mask: with weights and logits, and
	// with softcap and bias on the block path.
	f.Add(uint64(9), uint8(0x5a), uint8(0x3f), []byte{255, 250, 0, 130})
	f.Add(uint64(10), uint8(0xda), uint8(0xa5), []byte{251, 252})
	// Bit 4 of the seed adds ALiBi and the LSE, bit 5 sinks.
	f.Add(uint64(0x31), uint8(0x5a), uint8(0xbf), []byte{255, 250, 0, 130})
	f.Add(uint64(0x1a), uint8(0xc7), uint8(0x39), []byte{252, 253, 141})
	f.Fuzz(func(t *testing.T, seed uint64, shape, opts uint8, data []byte) {
		r := testutil.Rand(seed)
		hkv := 1 + int(shape&1)
		// Every dimension may be 0: the batch and the query rows now and
		// then, the others at random.
		B, Tq := 1+int(shape>>1&1), 1+3*int(shape>>3&7)
		if seed%11 == 0 {
			B = 0
		}
		if seed%13 == 0 {
			Tq = 0
		}
		c := batchCase{
			B: B, H: hkv * (1 + int(shape>>2&1)), Hkv: hkv,
			Tq: Tq, Tk: 90*int(shape>>6) + r.IntN(41), dk: r.IntN(21), dv: r.IntN(11),
			causal: opts&1 != 0, valid: opts&2 != 0, toValid: opts&4 != 0, weights: opts&8 != 0, logit: opts&16 != 0,
			bias: biasKind(1 + int(opts>>5&3)), shift: r.IntN(5) - 2, keep: seed>>3&1 != 0,
			alibi: seed>>4&1 != 0, lse: seed>>4&1 != 0, sinks: seed>>5&1 != 0,
		}
		if opts&0x80 != 0 {
			c.softcap = []float32{0.5, 3, 50}[seed%3]
		}
		p := newBatchProblem(t, r, c)
		bb, bh, bq, _ := p.bias.Shape()
		for _, x := range testutil.DecodeFloats(data) {
			if p.bias.empty() {
				break
			}
			p.bias.Row(r.IntN(bb), r.IntN(bh), r.IntN(bq))[r.IntN(c.Tk)] = x
		}
		e := NewBatched(1)
		defer e.Close()
		testutil.EachImpl(func(name string) {
			if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
				t.Fatalf("%s %v: %v", name, c, err)
			}
			p.check(t)
		})
	})
}

// FuzzKVCache drives a KVCache and its float32 model (kvModel) with one
// sequence of appends and truncations, two bytes a call, and compares
// them after every call: errors, lengths, positions, every held row, and
// that a failed call changed no byte.
func FuzzKVCache(f *testing.F) {
	// cfg: type (mod 3), ring (bit 2), batch (bit 3), heads (bits 4–5),
	// a model's heads (bits 6 and 7, see wide);
	// ops: pairs (op, argument), op 7 mod 8 an attend (see
	// fuzzAttendCache), else by op mod 4 an append or a truncation;
	// sizes: capacity (bits 0–2 mod 6), dk (bits 3–4), dv (bits 5–7 mod 3).
	f.Add(uint8(0x11), uint8(0x4b), []byte{0, 2, 8, 1, 2, 1, 0, 3, 3, 8})
	f.Add(uint8(0x15), uint8(0x2b), []byte{0, 2, 1, 3, 0, 7, 2, 2, 3, 2, 0, 1, 8, 4})
	f.Add(uint8(0x26), uint8(0x33), []byte{0, 12, 0x80, 1, 1, 2, 3, 0, 2, 1})
	f.Add(uint8(0x1d), uint8(0x0c), []byte{0, 2, 0, 6, 0, 7, 3, 9, 2, 3, 1, 1})
	// Appends, attends (op 7 mod 8), a truncation, a ring wrapping.
	f.Add(uint8(0x11), uint8(0x4b), []byte{0, 5, 7, 0x27, 0, 3, 7, 0xe5, 2, 1, 7, 0x1a})
	f.Add(uint8(0x1d), uint8(0x0c), []byte{0, 7, 0, 7, 7, 0x44, 0, 6, 7, 0xad, 15, 0x12})
	// A model's heads (see wide) over each type, two KV heads, packed and
	// ring: appends of up to seven rows, attends of one to eight query
	// heads a KV head, a truncation, rows with special values.
	var wideOps [2][]byte
	attendAs := func(ops []byte, g, tq int) []byte { // an attend of g query heads a KV head, tq rows each
		for a := range 256 {
			i := len(ops)
			if a%3 == tq-1 && a&4 == 0 && (a>>5+i/2)%8 == g-1 {
				return append(ops, 7, byte(a))
			}
		}
		panic("no such attend")
	}
	wideOps[0] = []byte{0, 7, 1, 7, 0, 7} // 21 rows in batch entry 0
	for _, g := range []int{2, 3, 4, 5} {
		wideOps[0] = attendAs(wideOps[0], g, 1)
	}
	wideOps[1] = []byte{0, 7, 1, 7, 0, 7}
	for _, g := range []int{8, 1} {
		wideOps[1] = attendAs(wideOps[1], g, 1)
	}
	wideOps[1] = attendAs(wideOps[1], 2, 2)
	wideOps[1] = append(wideOps[1], 2, 2, 0, 0xff) // back two rows, then seven with special values
	wideOps[1] = attendAs(wideOps[1], 4, 1)
	for x := range 12 {
		for _, ops := range wideOps {
			f.Add(uint8(0xe0|x), uint8(0x18|x%2<<5|x%4), ops)
		}
	}
	f.Fuzz(func(t *testing.T, cfg, sizes uint8, ops []byte) {
		typ, ring := kvTypes[int(cfg)%len(kvTypes)], cfg&4 != 0
		batch, heads := 1+int(cfg>>3)%2, int(cfg>>4)%3
		capacity, dk, dv := int(sizes&7)%6, int(sizes>>3)&3, int(sizes>>5)%3
		// wide: a model's heads, 64 or 128 columns (sizes bit 5), room
		// for a few tiles of rows, mild values, at most wideAttends
		// attends: the 16-bit row kernels' blocks, through the engine.
		// One input in sixteen, as it costs far more than the others.
		wide := cfg&0xc0 == 0xc0 && sizes&0x18 == 0x18
		if wide {
			capacity, dk = 16*(1+int(sizes&3)), 64<<(sizes>>5&1)
			dv = dk
		}
		attends := 0
		var opts []KVCacheOption
		if ring {
			capacity = max(capacity, 1)
			opts = append(opts, WithRing())
		}
		// Static scales (WithScales), per tensor or, with an odd
		// capacity, per channel: an I8 cache that is not wide with cfg
		// bit 6.
		var ks, vs []float32
		if typ == I8 && cfg&0xc0 == 0x40 {
			ks, vs = []float32{1.0 / 64}, []float32{3.0 / 128}
			if capacity%2 == 1 {
				ks, vs = fuzzScales(heads*dk), fuzzScales(heads*dv)
			}
			opts = append(opts, WithScales(ks, vs))
		}
		c, err := NewKVCache(batch, heads, capacity, dk, dv, typ, opts...)
		if err != nil {
			t.Fatal(err)
		}
		m := newKVModel(batch, heads, capacity, dk, dv, typ, ring)
		m.ks, m.vs = ks, vs
		ops = ops[:min(len(ops), 128)]
		for i := 0; i+1 < len(ops); i += 2 {
			o, a := ops[i], ops[i+1]
			b := int(o>>3) % batch
			before := kvSnapshot(c)
			var want, got error
			if o%8 == 7 {
				if attends++; !wide || attends <= wideAttends {
					fuzzAttendCache(t, c, a, i)
				}
				continue
			}
			switch o % 4 {
			case 0, 1: // an append of 0–7 rows; bit 7: k one element off
				rows := int(a) % 8
				k, v := kvFuzzRows(heads*rows*dk, a, i, wide), kvFuzzRows(heads*rows*dv, a, i+1, wide)
				if o&0x80 != 0 {
					if len(k) > 0 {
						k = k[1:]
					} else {
						k = append(k, 1)
					}
					want = ErrShape
				} else {
					want = m.append(b, k, v, rows)
				}
				got = c.Append(b, k, v, rows)
			case 2: // back by 0–3 rows, maybe before the oldest held one
				n := c.Pos(b) - int(a)%4
				if !m.truncate(b, n) {
					want = ErrArgument
				}
				got = c.Truncate(b, n)
			case 3: // to any small position, maybe negative or ahead
				n := int(a)%16 - 4
				if !m.truncate(b, n) {
					want = ErrArgument
				}
				got = c.Truncate(b, n)
			}
			if !errors.Is(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("call %d (%#02x %#02x): error %v, want %v", i/2, o, a, got, want)
			}
			if got != nil && kvSnapshot(c) != before {
				t.Fatalf("call %d (%#02x %#02x): failed, and changed the cache", i/2, o, a)
			}
			if err := m.check(c); err != nil {
				t.Fatalf("call %d (%#02x %#02x): %v", i/2, o, a, err)
			}
		}
	})
}

// fuzzScales returns n per-channel scales from 1/128 to 7/128.
func fuzzScales(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(1+i%7) / 128
	}
	return s
}

// wideAttends is how many attends an input of FuzzKVCache over a model's
// heads runs.
const wideAttends = 4

// fuzzAttendCache attends over the cache on every implementation and
// checks the outputs against the oracle of the rows it holds (which
// FuzzKVCache checks against its model after every call): a of 1–3 query
// rows per head, one or two query heads per key/value head, bit 2 causal,
// bits 3–4 a window of 0–3 keys, bit 5 sinks, bit 6 ALiBi, bit 7 the LSE.
// Over a model's heads (64 columns or more) bits 5–7 and the salt choose
// one to eight query heads per key/value head, and the window is 17 times
// as long.
func fuzzAttendCache(t *testing.T, c *KVCache, a byte, salt int) {
	B, Hkv, _, dk, dv := c.Shape()
	bc := batchCase{B: B, H: Hkv * (1 + int(a>>1)%2), Hkv: Hkv, Tq: 1 + int(a)%3, dk: dk, dv: dv,
		causal: a&4 != 0, window: int(a>>3) % 4, sinks: a&32 != 0, alibi: a&64 != 0, lse: a&128 != 0}
	if dk >= 64 {
		// Heads of a model: one to eight query heads a KV head, so that
		// every multi-row kernel meets the cache, and windows as long as
		// a tile of rows.
		bc.H = Hkv * (1 + (int(a>>5)+salt/2)%8)
		bc.window *= 17
	}
	bc.Tq = min(bc.Tq, 3)
	k, _ := c.shapes()
	bc.Tk, bc.valid, bc.toValid = k.rows, true, true
	r := testutil.Rand(uint64(salt)<<8 | uint64(a))
	p := newBatchProblem(t, r, bc)
	p.lenient = true
	p.k = tensor(t, r, B, Hkv, bc.Tk, dk, false, 1)
	p.v = tensor(t, r, B, Hkv, bc.Tk, dv, false, 1)
	for b := range B {
		p.opt.ValidLen[b] = c.Len(b)
		for h := range Hkv {
			for j := range c.Len(b) {
				c.Key(p.k.Row(b, h, j), b, h, j)
				c.Value(p.v.Row(b, h, j), b, h, j)
			}
		}
	}
	opt := p.opt
	opt.ValidLen = nil
	testutil.EachImpl(func(name string) {
		e := NewBatched(2)
		defer e.Close()
		if err := e.AttendCache(p.outputs(), p.q, c, &opt); err != nil {
			t.Fatalf("%s: AttendCache: %v", name, err)
		}
		p.check(t)
	})
}

// kvFuzzRows returns n values of a call's rows from its argument byte:
// the fuzz values and the special ones, half of them scaled by 1.1 so that
// 16-bit types round them. Mild, they lie within ±1/2 but for a special
// value where a is 0xff, so that the softmax of long rows weighs many keys.
func kvFuzzRows(n int, a byte, salt int, mild bool) []float32 {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(int(a)*31 + j*17 + salt*7)
		if mild && (a != 0xff || j%97 != 0) {
			b[j] = 117 + b[j]%17
		}
	}
	x := testutil.DecodeFloats(b)
	for j := 1; j < n; j += 2 {
		x[j] *= 1.1
	}
	return x
}
