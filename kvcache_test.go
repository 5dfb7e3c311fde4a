package attention

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/glancelab/attention/internal/half"
	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/testutil"
)

// kvModel is the cache as plain float32 rows: per entry, its position and
// the rows it holds, oldest first, each per head and already rounded to
// the cache's type. Tests and FuzzKVCache drive a KVCache and a kvModel
// with the same calls and compare them after each.
type kvModel struct {
	typ                     KVType
	ring                    bool
	heads, capacity, dk, dv int
	pos                     []int
	rows                    [][]kvModelRow
	ks, vs                  []float32 // I8 WithScales: the static scales
}

type kvModelRow struct{ k, v [][]float32 } // [head][d]

func newKVModel(batch, heads, capacity, dk, dv int, typ KVType, ring bool) *kvModel {
	return &kvModel{typ: typ, ring: ring, heads: heads, capacity: capacity, dk: dk, dv: dv,
		pos: make([]int, batch), rows: make([][]kvModelRow, batch)}
}

// round is the stored value of x.
func (m *kvModel) round(x float32) float32 {
	switch m.typ {
	case F16:
		return half.F16ToF32(half.F32ToF16(x))
	case BF16:
		return half.BF16ToF32(half.F32ToBF16(x))
	}
	return x
}

// append mirrors Append with k, v laid out [heads][rows][d], and returns
// the error the cache must give (nil, ErrCapacity).
func (m *kvModel) append(b int, k, v []float32, rows int) error {
	if !m.ring && len(m.rows[b])+rows > m.capacity {
		return ErrCapacity
	}
	for i := range rows {
		r := kvModelRow{k: make([][]float32, m.heads), v: make([][]float32, m.heads)}
		for h := range m.heads {
			r.k[h] = m.roundRow(k[(h*rows+i)*m.dk:][:m.dk], true, h)
			r.v[h] = m.roundRow(v[(h*rows+i)*m.dv:][:m.dv], false, h)
		}
		m.rows[b] = append(m.rows[b], r)
	}
	if over := len(m.rows[b]) - m.capacity; over > 0 {
		m.rows[b] = m.rows[b][over:]
	}
	m.pos[b] += rows
	return nil
}

func (m *kvModel) roundRow(x []float32, key bool, h int) []float32 {
	r := make([]float32, len(x))
	if m.typ == I8 && m.ks != nil {
		// ONNX Runtime's rule, element by element (see WithScales).
		s := m.vs
		if key {
			s = m.ks
		}
		for j, e := range x {
			sj := s[0]
			if len(s) > 1 {
				sj = s[h*len(x)+j]
			}
			if e-e != 0 {
				return slices.Repeat([]float32{float32(math.NaN())}, len(x))
			}
			q := max(-128, min(127, math.RoundToEven(float64(e/sj))))
			r[j] = float32(int8(q)) * sj
		}
		return r
	}
	if m.typ == I8 {
		// The row as the cache stores and returns it: the model checks
		// where rows go, TestKVCacheI8Error how near they come.
		rot := key && len(x)&-len(x) > 1
		copy(r, x)
		if rot {
			kernel.Hadamard(r, len(r), 1)
		}
		q := make([]int8, 4+len(x))
		kernel.NarrowI8(q, r)
		kernel.WidenRowsI8(r, q, len(q), len(r))
		if rot {
			rotateBack(r)
		}
		return r
	}
	for i := range x {
		r[i] = m.round(x[i])
	}
	return r
}

// truncate mirrors Truncate, and reports whether the cache must accept it.
func (m *kvModel) truncate(b, n int) bool {
	drop := m.pos[b] - n
	if drop < 0 || drop > len(m.rows[b]) {
		return false
	}
	m.rows[b] = m.rows[b][:len(m.rows[b])-drop]
	m.pos[b] = n
	return true
}

// check compares everything the cache shows with the model: lengths,
// positions, the ring's start, every held row through Key and Value and
// through the in-place accessors, and that the runs cover the held rows.
func (m *kvModel) check(c *KVCache) error {
	for b := range m.pos {
		held := m.rows[b]
		if c.Len(b) != len(held) || c.Pos(b) != m.pos[b] {
			return fmt.Errorf("entry %d: Len %d Pos %d, want %d %d", b, c.Len(b), c.Pos(b), len(held), m.pos[b])
		}
		wantStart := 0
		if m.capacity > 0 {
			wantStart = (m.pos[b] - len(held)) % m.capacity
		}
		if c.Start(b) != wantStart {
			return fmt.Errorf("entry %d: Start %d, want %d", b, c.Start(b), wantStart)
		}
		start, n1, n2 := c.heldRuns(b)
		if start != wantStart || n1+n2 != len(held) || start+n1 > m.capacity || (n2 > 0 && start+n1 != m.capacity) {
			return fmt.Errorf("entry %d: runs (%d, %d, %d) for %d rows from %d of %d", b, start, n1, n2, len(held), wantStart, m.capacity)
		}
		kr, vr := make([]float32, m.dk), make([]float32, m.dv)
		for i, r := range held {
			slot := (wantStart + i) % max(m.capacity, 1)
			for h := range m.heads {
				c.Key(kr, b, h, i)
				c.Value(vr, b, h, i)
				if !sameRowBits(kr, r.k[h]) || !sameRowBits(vr, r.v[h]) {
					return fmt.Errorf("entry %d head %d row %d: k %v v %v, want %v %v", b, h, i, kr, vr, r.k[h], r.v[h])
				}
				if !sameRowBits(c.storedRow(true, b, h, slot), r.k[h]) || !sameRowBits(c.storedRow(false, b, h, slot), r.v[h]) {
					return fmt.Errorf("entry %d head %d row %d: the in-place rows at %d differ", b, h, i, slot)
				}
			}
		}
	}
	return nil
}

// storedRow widens physical row slot of (b, h) from the in-place
// accessors, keys or values.
func (c *KVCache) storedRow(key bool, b, h, slot int) []float32 {
	d := c.dv
	if key {
		d = c.dk
	}
	out := make([]float32, d)
	if c.typ == I8 {
		src, rs := c.values8(b, h), c.rv
		if key {
			src, rs = c.keys8(b, h), c.rk
		}
		kernel.WidenRowsI8(out, src[slot*rs:], rs, d)
		if key && c.rotate {
			rotateBack(out)
		}
		s := c.channelValues(h)
		if key {
			s = c.channelKeys(h)
		}
		if s != nil {
			mulChannels(out, s, 1)
		}
		return out
	}
	if c.typ == F32 {
		src := c.values32(b, h)
		if key {
			src = c.keys32(b, h)
		}
		copy(out, src[slot*d:][:d])
		return out
	}
	src := c.values16(b, h)
	if key {
		src = c.keys16(b, h)
	}
	c.widen(out, src[slot*d:][:d])
	return out
}

func sameRowBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// kvSnapshot is every byte of a cache's state, to show a failed call
// changed nothing: the bits of every element (a NaN's payload and the
// sign of a zero too), positions and lengths.
func kvSnapshot(c *KVCache) string {
	b := make([]byte, 0, 4*(len(c.k32)+len(c.v32))+2*(len(c.k16)+len(c.v16))+8*(len(c.pos)+len(c.n)))
	for _, x := range [][]float32{c.k32, c.v32} {
		for _, v := range x {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	for _, x := range [][]uint16{c.k16, c.v16} {
		for _, v := range x {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
	}
	for _, x := range [][]int8{c.k8, c.v8} {
		for _, v := range x {
			b = append(b, byte(v))
		}
	}
	for _, x := range [][]int{c.pos, c.n} {
		for _, v := range x {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return string(b)
}

// kvRows returns rows·heads·d values: exact ones, ones that round in 16
// bits, and the special values.
func kvRows(n int, seed int) []float32 {
	x := make([]float32, n)
	specials := []float32{float32(math.NaN()), float32(math.Inf(-1)), 65520, 1e-8, 3e38, float32(math.Copysign(0, -1))}
	for i := range x {
		j := i + 7*seed
		switch {
		case j%11 == 10:
			x[i] = specials[j/11%len(specials)]
		case j%2 == 0:
			x[i] = float32(j%97-48) / 8
		default:
			x[i] = float32(j%89-44) / 3
		}
	}
	return x
}

var kvTypes = []KVType{F32, F16, BF16, I8}

// interleaveHeads returns rows laid out [heads][rows][d] in x as a view of
// a copy laid out [rows][heads][d].
func interleaveHeads(x []float32, heads, rows, d int) Tensor {
	y := make([]float32, len(x))
	for h := range heads {
		for i := range rows {
			copy(y[(i*heads+h)*d:][:d], x[(h*rows+i)*d:][:d])
		}
	}
	t, err := NewTensorStrided(1, heads, rows, d, 0, d, heads*d, y)
	if err != nil {
		panic(err)
	}
	return t
}

func TestKVCacheSequences(t *testing.T) {
	for _, typ := range kvTypes {
		for _, ring := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/ring=%v", typ, ring), func(t *testing.T) {
				const batch, heads, capacity, dk, dv = 2, 3, 5, 4, 3
				var opts []KVCacheOption
				if ring {
					opts = append(opts, WithRing())
				}
				c, err := NewKVCache(batch, heads, capacity, dk, dv, typ, opts...)
				if err != nil {
					t.Fatal(err)
				}
				// viewed takes the same rows through AppendTensor, laid
				// out [rows][heads][d]: rows not back to back, stored one
				// by one rather than a run at a time.
				viewed, _ := NewKVCache(batch, heads, capacity, dk, dv, typ, opts...)
				m := newKVModel(batch, heads, capacity, dk, dv, typ, ring)
				// Appends of 1, 2 and 3 rows, truncations back by 1 and to
				// the start, and, in a ring, past its capacity and more than
				// its capacity at once.
				steps := []struct {
					b, rows, truncate int // truncate: -1 = append rows
				}{
					{0, 1, -1}, {0, 2, -1}, {1, 3, -1}, {0, 0, 2}, {0, 3, -1}, {1, 0, 0},
					{1, 2, -1}, {0, 1, -1}, {0, 2, -1}, {0, 6, -1}, {0, 0, 9}, {1, 1, -1}, {0, 3, -1},
				}
				for i, s := range steps {
					var want, got error
					if s.truncate >= 0 {
						if !m.truncate(s.b, s.truncate) {
							want = ErrArgument
						}
						got = c.Truncate(s.b, s.truncate)
						viewed.Truncate(s.b, s.truncate)
					} else {
						k, v := kvRows(heads*s.rows*dk, i), kvRows(heads*s.rows*dv, i+100)
						want = m.append(s.b, k, v, s.rows)
						got = c.Append(s.b, k, v, s.rows)
						kt, vt := interleaveHeads(k, heads, s.rows, dk), interleaveHeads(v, heads, s.rows, dv)
						if err := viewed.AppendTensor(s.b, kt, vt); (err == nil) != (got == nil) {
							t.Fatalf("step %d %+v: AppendTensor %v, Append %v", i, s, err, got)
						}
					}
					if !errors.Is(got, want) || (want == nil) != (got == nil) {
						t.Fatalf("step %d %+v: error %v, want %v", i, s, got, want)
					}
					if kvSnapshot(viewed) != kvSnapshot(c) {
						t.Fatalf("step %d %+v: AppendTensor of strided rows stored other rows than Append", i, s)
					}
					if err := m.check(c); err != nil {
						t.Fatalf("step %d %+v: %v", i, s, err)
					}
				}
			})
		}
	}
}

func TestKVCacheRingPositions(t *testing.T) {
	c, _ := NewKVCache(1, 1, 3, 1, 1, F32, WithRing())
	for i := range 7 {
		if err := c.Append(0, []float32{float32(i)}, []float32{-float32(i)}, 1); err != nil {
			t.Fatal(err)
		}
	}
	// Positions 4, 5, 6 held, at physical rows 1, 2, 0.
	if c.Pos(0) != 7 || c.Len(0) != 3 || c.Start(0) != 1 {
		t.Fatalf("Pos %d Len %d Start %d, want 7 3 1", c.Pos(0), c.Len(0), c.Start(0))
	}
	if got := c.keys32(0, 0); !slices.Equal(got, []float32{6, 4, 5}) {
		t.Fatalf("physical rows %v, want [6 4 5]", got)
	}
	if err := c.Truncate(0, 3); !errors.Is(err, ErrArgument) {
		t.Fatalf("Truncate to an overwritten position: %v, want ErrArgument", err)
	}
	if err := c.Truncate(0, 5); err != nil || c.Len(0) != 1 || c.Start(0) != 1 {
		t.Fatalf("Truncate(0, 5): %v, Len %d Start %d, want 1 1", err, c.Len(0), c.Start(0))
	}
	// Position 5 goes to physical row 2, overwriting nothing held.
	c.Append(0, []float32{50}, []float32{-50}, 1)
	row := []float32{0}
	c.Key(row, 0, 0, 1)
	if c.Pos(0) != 6 || c.Len(0) != 2 || row[0] != 50 || c.keys32(0, 0)[2] != 50 {
		t.Fatalf("after the rollback: Pos %d Len %d row %v, want 6 2 [50]", c.Pos(0), c.Len(0), row)
	}
}

func TestNewKVCacheErrors(t *testing.T) {
	huge := math.MaxInt/2 + 1
	for _, c := range []struct {
		batch, heads, capacity, dk, dv int
		typ                            KVType
		ring                           bool
	}{
		{-1, 1, 1, 1, 1, F32, false}, {1, -1, 1, 1, 1, F16, false}, {1, 1, -1, 1, 1, F16, false},
		{1, 1, 1, -1, 1, F16, false}, {1, 1, 1, 1, -1, BF16, false}, {1, 1, 1, 1, 1, KVType(4), false},
		{1, 1, 0, 1, 1, F32, true},
		{huge, 2, 1, 1, 1, F16, false}, {1 << 16, 1 << 16, 1 << 16, 1, 0, BF16, false},
		{1, 1, 1 << 30, 1 << 16, 1, F32, false}, {1, 1, 1 << 23, 1 << 23, 1 << 23, F32, false},
		// Rows of no element, but more entries than a heap holds positions of.
		{maxFloats / 2, 1, 1, 0, 0, F32, false},
	} {
		var opts []KVCacheOption
		if c.ring {
			opts = []KVCacheOption{WithRing()}
		}
		if kv, err := NewKVCache(c.batch, c.heads, c.capacity, c.dk, c.dv, c.typ, opts...); !errors.Is(err, ErrArgument) || kv != nil {
			t.Errorf("NewKVCache%+v: %v, want ErrArgument", c, err)
		}
	}
	// Rows of no element in many heads, appended many at a time, take no
	// time: nothing is stored.
	c, err := NewKVCache(1, maxFloats/64, 32, 0, 0, F16)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(0, nil, nil, 32); err != nil || c.Len(0) != 32 {
		t.Fatalf("Append of rows of no element in %d heads: %v, Len %d", maxFloats/64, err, c.Len(0))
	}
	// Zero sizes are caches too: nothing to hold, or rows of no element.
	for _, s := range [][5]int{{0, 1, 1, 1, 1}, {1, 0, 1, 1, 1}, {1, 1, 0, 1, 1}, {1, 1, 3, 0, 0}} {
		c, err := NewKVCache(s[0], s[1], s[2], s[3], s[4], F16)
		if err != nil {
			t.Fatalf("NewKVCache%v: %v", s, err)
		}
		if s[0] > 0 && s[2] > 0 {
			if err := c.Append(0, nil, nil, 0); err != nil || c.Len(0) != 0 {
				t.Fatalf("NewKVCache%v: Append of no row: %v", s, err)
			}
			if err := c.Append(0, make([]float32, s[1]*s[3]), make([]float32, s[1]*s[4]), 1); err != nil || c.Len(0) != 1 {
				t.Fatalf("NewKVCache%v: Append of a row: %v, Len %d", s, err, c.Len(0))
			}
		}
	}
}

func TestKVCacheAppendErrors(t *testing.T) {
	for _, typ := range kvTypes {
		c, _ := NewKVCache(2, 2, 3, 4, 2, typ)
		c.Append(1, kvRows(2*2*4, 1), kvRows(2*2*2, 2), 2)
		before := kvSnapshot(c)
		var shape *ShapeError
		for i, e := range []struct {
			b, rows int
			nk, nv  int
			want    error
			what    string
		}{
			{0, 1, 7, 4, ErrShape, "len(k)"}, {0, 1, 8, 5, ErrShape, "len(v)"}, {0, 1, 0, 0, ErrShape, "len(k)"},
			{0, -1, 0, 0, ErrArgument, ""}, {2, 1, 8, 4, ErrArgument, ""}, {-1, 1, 8, 4, ErrArgument, ""},
			{1, 2, 16, 8, ErrCapacity, ""}, {0, 4, 32, 16, ErrCapacity, ""},
		} {
			err := c.Append(e.b, kvRows(e.nk, i), kvRows(e.nv, i), e.rows)
			if !errors.Is(err, e.want) {
				t.Errorf("%v: case %d: %v, want %v", typ, i, err, e.want)
			}
			if e.what != "" && (!errors.As(err, &shape) || shape.What != e.what) {
				t.Errorf("%v: case %d: %v does not name %s", typ, i, err, e.what)
			}
			if kvSnapshot(c) != before {
				t.Fatalf("%v: case %d: a failed Append changed the cache", typ, i)
			}
		}
		for _, n := range []int{-1, 3, math.MaxInt, math.MinInt} {
			if err := c.Truncate(1, n); !errors.Is(err, ErrArgument) || kvSnapshot(c) != before {
				t.Errorf("%v: Truncate(1, %d): %v, want ErrArgument and no change", typ, n, err)
			}
		}
		if err := c.Truncate(5, 0); !errors.Is(err, ErrArgument) {
			t.Errorf("%v: Truncate of entry 5: %v, want ErrArgument", typ, err)
		}
	}
}

// A ring's position stops short of overflowing.
func TestKVCachePositionOverflow(t *testing.T) {
	c, _ := NewKVCache(1, 1, 2, 1, 1, F32, WithRing())
	c.pos[0] = math.MaxInt - 1
	if err := c.Append(0, []float32{1}, []float32{1}, 1); err != nil {
		t.Fatal(err)
	}
	before := kvSnapshot(c)
	if err := c.Append(0, []float32{1}, []float32{1}, 1); !errors.Is(err, ErrArgument) || kvSnapshot(c) != before {
		t.Fatalf("Append at MaxInt: %v, want ErrArgument and no change", err)
	}
}

// AppendTensor takes the rows as a step's projection lays them out,
// [rows][kvHeads][d], and stores what Append of the packed rows does.
func TestKVCacheAppendTensor(t *testing.T) {
	const heads, rows, dk, dv = 3, 2, 4, 5
	packed, _ := NewKVCache(1, heads, 4, dk, dv, F16)
	viewed, _ := NewKVCache(1, heads, 4, dk, dv, F16)
	k, v := kvRows(rows*heads*dk, 3), kvRows(rows*heads*dv, 4) // [rows][heads][d]
	kt, _ := NewTensorStrided(1, heads, rows, dk, 0, dk, heads*dk, k)
	vt, _ := NewTensorStrided(1, heads, rows, dv, 0, dv, heads*dv, v)
	if err := viewed.AppendTensor(0, kt, vt); err != nil {
		t.Fatal(err)
	}
	kp, vp := make([]float32, 0, len(k)), make([]float32, 0, len(v)) // [heads][rows][d]
	for h := range heads {
		for i := range rows {
			kp = append(kp, kt.Row(0, h, i)...)
			vp = append(vp, vt.Row(0, h, i)...)
		}
	}
	if err := packed.Append(0, kp, vp, rows); err != nil {
		t.Fatal(err)
	}
	if kvSnapshot(packed) != kvSnapshot(viewed) {
		t.Fatal("AppendTensor stored other rows than Append")
	}
	before := kvSnapshot(viewed)
	bad := func(b, h, r, d int) Tensor { x, _ := NewTensor(b, h, r, d, make([]float32, b*h*r*d)); return x }
	for i, c := range []struct {
		k, v Tensor
		what string
	}{
		{bad(2, heads, 1, dk), bad(1, heads, 1, dv), "k batch"},
		{bad(1, heads-1, 1, dk), bad(1, heads, 1, dv), "k heads"},
		{bad(1, heads, 1, dk+1), bad(1, heads, 1, dv), "k cols"},
		{bad(1, heads, 1, dk), bad(1, heads, 1, dv-1), "v cols"},
		{bad(1, heads, 1, dk), bad(1, heads, 2, dv), "v rows"},
	} {
		var shape *ShapeError
		if err := viewed.AppendTensor(0, c.k, c.v); !errors.As(err, &shape) || shape.What != c.what {
			t.Errorf("case %d: %v, want a ShapeError of %s", i, err, c.what)
		}
	}
	if err := viewed.AppendTensor(0, bad(1, heads, 3, dk), bad(1, heads, 3, dv)); !errors.Is(err, ErrCapacity) {
		t.Errorf("past the capacity: %v, want ErrCapacity", err)
	}
	if kvSnapshot(viewed) != before {
		t.Fatal("a failed AppendTensor changed the cache")
	}
}

func TestKVCacheAllocs(t *testing.T) {
	for _, typ := range kvTypes {
		c, _ := NewKVCache(2, 4, 8, 64, 64, typ, WithRing())
		k, v := kvRows(4*2*64, 1), kvRows(4*2*64, 2)
		kt, _ := NewTensor(1, 4, 2, 64, k)
		vt, _ := NewTensor(1, 4, 2, 64, v)
		if n := testing.AllocsPerRun(100, func() {
			if c.Append(1, k, v, 2) != nil || c.AppendTensor(0, kt, vt) != nil || c.Truncate(1, c.Pos(1)-1) != nil {
				panic("append failed")
			}
		}); n != 0 {
			t.Errorf("%v: %v allocations per Append, AppendTensor and Truncate", typ, n)
		}
	}
}

func TestKVCacheAccessorPanics(t *testing.T) {
	c16, _ := NewKVCache(1, 2, 2, 3, 3, BF16)
	c32, _ := NewKVCache(1, 2, 2, 3, 3, F32)
	c16.Append(0, make([]float32, 6), make([]float32, 6), 1)
	row := make([]float32, 3)
	for name, f := range map[string]func(){
		"Key past Len":      func() { c16.Key(row, 0, 0, 1) },
		"Key head":          func() { c16.Key(row, 0, 2, 0) },
		"Value entry":       func() { c16.Value(row, 1, 0, 0) },
		"Key short dst":     func() { c16.Key(row[:2], 0, 0, 0) },
		"Len entry":         func() { c16.Len(1) },
		"keys32 of 16 bits": func() { c16.keys32(0, 0) },
		"values16 of 32":    func() { c32.values16(0, 0) },
		"keys16 head":       func() { c16.keys16(0, 2) },
		"values32 negative": func() { c32.values32(-1, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	if c16.Type() != BF16 || c16.Ring() || F16.String() != "f16" || BF16.Size() != 2 || KVType(9).String() != "KVType(9)" {
		t.Error("Type, Ring, String or Size")
	}
	if b, h, n, dk, dv := c16.Shape(); b != 1 || h != 2 || n != 2 || dk != 3 || dv != 3 {
		t.Error("Shape")
	}
	c16.Reset(0)
	if c16.Len(0) != 0 || c16.Pos(0) != 0 {
		t.Error("Reset")
	}
}

// Distinct entries may be appended to and truncated concurrently: the
// result is what the same calls give one after another.
func TestKVCacheEntriesConcurrently(t *testing.T) {
	const heads, capacity, d = 2, 6, 3
	run := func(c *KVCache, b int) {
		for i := range 20 {
			rows := 1 + i%3
			c.Append(b, kvRows(heads*rows*d, i+b), kvRows(heads*rows*d, i-b), rows)
			c.Truncate(b, c.Pos(b)-i%2)
		}
	}
	serial, _ := NewKVCache(2, heads, capacity, d, d, BF16, WithRing())
	parallel, _ := NewKVCache(2, heads, capacity, d, d, BF16, WithRing())
	run(serial, 0)
	run(serial, 1)
	done := make(chan struct{})
	go func() { run(parallel, 1); close(done) }()
	run(parallel, 0)
	<-done
	if kvSnapshot(serial) != kvSnapshot(parallel) {
		t.Fatal("concurrent appends to distinct entries differ from serial ones")
	}
}

// BenchmarkKVCacheAppend appends the rows of one decode step (tokens=1)
// or of a short prefill chunk (tokens=16) for 8 KV heads of d = 128 to a
// ring cache, in each of its types: f32 is a copy, the 16-bit types
// narrow every element.
func BenchmarkKVCacheAppend(b *testing.B) {
	const heads, d = 8, 128
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, typ := range kvTypes {
			for _, tokens := range []int{1, 16} {
				b.Run(fmt.Sprintf("type=%v/tokens=%d", typ, tokens), func(b *testing.B) {
					c, err := NewKVCache(1, heads, 1024, d, d, typ, WithRing())
					if err != nil {
						b.Fatal(err)
					}
					r := testutil.Rand(uint64(tokens))
					k, v := testutil.Floats(r, heads*tokens*d, 4), testutil.Floats(r, heads*tokens*d, 4)
					b.ReportAllocs()
					for b.Loop() {
						if err := c.Append(0, k, v, tokens); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	})
}
