package attention

import (
	"errors"
	"fmt"
	"math"
	"os"
	"testing"
	"unsafe"

	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// memSource is where a problem's Memory reads its keys and values: its
// matrices (the zero memSource, NewMemory), or a KVCache of type typ
// holding the rows (NewMemoryCache), in a ring whose held rows wrap at its
// capacity with ring.
type memSource struct {
	cache bool
	typ   KVType
	ring  bool
}

func (s memSource) String() string {
	switch {
	case !s.cache:
		return ""
	case s.ring:
		return fmt.Sprintf(" (%v ring cache)", s.typ)
	}
	return fmt.Sprintf(" (%v cache)", s.typ)
}

// memSources are the sources a test's problems take in turn: every
// every-th problem (all for every 0 or 1), the others skipped, so that a
// heavy test runs over the caches in about the time of a fraction of it.
type memSources struct {
	list  []memSource
	every int
}

// pick returns the source of the i-th problem, and false if the problem
// is skipped.
func (v memSources) pick(i int) (memSource, bool) {
	e := max(v.every, 1)
	return v.list[(i/e)%len(v.list)], i%e == 0
}

var (
	matrices     = memSources{list: []memSource{{}}}
	cacheSources = []memSource{
		{true, F32, false}, {true, F16, false}, {true, BF16, false},
		{true, F32, true}, {true, F16, true}, {true, BF16, true},
	}
	// sampledCaches takes the caches in turn for one in every eight of a
	// heavy test's problems (the arm64 suite runs under an emulator):
	// each cache still meets every scorer, masks and both paths.
	sampledCaches = memSources{list: cacheSources, every: 8}
)

// memory returns the problem's Memory, read from its source, and the
// problem as the oracle must see it: over a cache, with the rows as the
// cache stores them, widened.
func (p problem) memory(t testing.TB) (*Memory, problem, error) {
	t.Helper()
	if !p.src.cache {
		m, err := NewMemory(p.scorer, p.keys, p.values, p.opts...)
		return m, p, err
	}
	c := p.cacheOf(t)
	p.ref.Keys, p.ref.Values = heldRows(c, 1, 1)
	m, err := NewMemoryCache(p.scorer, c, 1, 1, p.opts...)
	return m, p, err
}

// cacheOf returns a cache of the problem's source type holding its keys
// and values as entry 1, head 1 of two entries and two heads; entry 0 is
// empty and head 0 of entry 1 holds NaN, so that rows read from the wrong
// place show. A ring has a capacity of T rows and takes 1+T/3 rows of NaN
// before the problem's (none for T = 0), so that from T = 2 on its held rows wrap; a
// cache that is no ring has room for three rows more than it holds.
func (p problem) cacheOf(t testing.TB) *KVCache {
	t.Helper()
	T, dk, dv := p.keys.Rows(), p.keys.Cols(), p.values.Cols()
	capacity, junk := T+3, 0
	var opts []KVCacheOption
	if p.src.ring {
		capacity, junk = max(T, 1), min(T, 1+T/3)
		opts = append(opts, WithRing())
	}
	c, err := NewKVCache(2, 2, capacity, dk, dv, p.src.typ, opts...)
	if err != nil {
		t.Fatal(err)
	}
	nan := float32(math.NaN())
	if err := c.Append(1, filled(2*junk*dk, nan), filled(2*junk*dv, nan), junk); err != nil {
		t.Fatal(err)
	}
	k, v := filled(2*T*dk, nan), filled(2*T*dv, nan)
	for i := range T {
		copy(k[(T+i)*dk:], p.ref.Keys[i])
		copy(v[(T+i)*dv:], p.ref.Values[i])
	}
	if err := c.Append(1, k, v, T); err != nil {
		t.Fatal(err)
	}
	if p.src.ring && T > 1 && c.Start(1)+T <= capacity {
		t.Fatalf("ring of %d rows from row %d does not wrap", T, c.Start(1))
	}
	return c
}

// heldRows returns the key and value rows (b, h) of c holds, widened.
func heldRows(c *KVCache, b, h int) (keys, values [][]float32) {
	_, _, _, dk, dv := c.Shape()
	keys, values = make([][]float32, c.Len(b)), make([][]float32, c.Len(b))
	for i := range keys {
		keys[i], values[i] = make([]float32, dk), make([]float32, dv)
		c.Key(keys[i], b, h, i)
		c.Value(values[i], b, h, i)
	}
	return keys, values
}

// The Memory tests that compare with the oracle, over caches of every
// type, packed and in wrapped rings, the oracle fed the stored rows: the
// light ones on every source, the heavy ones (AttendMany's) on a sample
// of their cases, which take the sources in turn.
func TestMemoryCacheMatchesReference(t *testing.T) {
	for _, src := range cacheSources {
		t.Run(src.String()[2:len(src.String())-1], func(t *testing.T) {
			via := memSources{list: []memSource{src}}
			testAttendMatchesReference(t, via)
			testAttendMasks(t, via)
			testAttendFullyMasked(t, via)
			testAttendNaNPropagates(t, via)
		})
	}
}

func TestMemoryCacheManyMatchesReference(t *testing.T) {
	testAttendManyMatchesReference(t, sampledCaches)
}

func TestMemoryCacheManyTileEdges(t *testing.T) { testAttendManyTileEdges(t, sampledCaches) }

func TestMemoryCacheManyRandomShapes(t *testing.T) {
	testAttendManyRandomShapes(t, memSources{list: cacheSources, every: 2})
}

// Over a float32 cache whose rows do not wrap, a Memory gives the bits of
// NewMemory over packed matrices of the same rows: Attend and AttendMany
// on both of its paths, with and without masks, for every scorer.
func TestMemoryCacheF32Bits(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(61)
		for _, kind := range kinds {
			for _, T := range []int{1, 9, 130} {
				for _, masked := range []bool{false, true} {
					c := newManyCase(t, r, kind, 17, T, 24, 32, 20, 16)
					if masked {
						c.withMasks(r, T)
					}
					c.p.src = memSource{cache: true, typ: F32}
					cm, p, err := c.p.memory(t)
					if err != nil {
						t.Fatal(err)
					}
					keys := mustMatrix(t, T, 32, flat(p.ref.Keys))
					values := mustMatrix(t, T, 20, flat(p.ref.Values))
					mm, err := NewMemory(p.scorer, keys, values, p.opts...)
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("%s T=%d masked=%v", p.scorer, T, masked)
					sameMemoryBits(t, name, cm, mm, c.queries)
				}
			}
		}
	})
}

func flat(rows [][]float32) []float32 {
	var x []float32
	for _, r := range rows {
		x = append(x, r...)
	}
	return x
}

// sameMemoryBits checks that a and b give the same bits for every query alone
// (Attend) and for the first n of them at once (AttendMany), n of 1, 3
// (the tiled path) and 17 (a block and the tiled path).
func sameMemoryBits(t *testing.T, name string, a, b *Memory, queries Matrix) {
	t.Helper()
	T, dv := a.Len(), a.ValueDim()
	eq := func(what string, x, y []float32) {
		t.Helper()
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%s: %s[%d] = %v, NewMemory gives %v", name, what, i, x[i], y[i])
			}
		}
	}
	for i := range queries.Rows() {
		ca, cb, wa, wb := make([]float32, dv), make([]float32, dv), make([]float32, T), make([]float32, T)
		if err := errors.Join(a.Attend(ca, wa, queries.Row(i), nil), b.Attend(cb, wb, queries.Row(i), nil)); err != nil {
			t.Fatal(err)
		}
		eq(fmt.Sprintf("Attend query %d ctx", i), ca, cb)
		eq(fmt.Sprintf("Attend query %d weights", i), wa, wb)
	}
	for _, n := range []int{1, 3, 17} {
		q := queries.rowRange(0, n)
		ca, cb, wa, wb := make([]float32, n*dv), make([]float32, n*dv), make([]float32, n*T), make([]float32, n*T)
		if err := errors.Join(a.AttendMany(ca, wa, q, nil), b.AttendMany(cb, wb, q, nil)); err != nil {
			t.Fatal(err)
		}
		eq(fmt.Sprintf("AttendMany n=%d ctx", n), ca, cb)
		eq(fmt.Sprintf("AttendMany n=%d weights", n), wa, wb)
	}
}

// Steady-state Attend and AttendMany over a cache allocate nothing, on
// every path and cache type.
func TestMemoryCacheAllocatesNothing(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(62)
		for _, src := range cacheSources {
			for _, kind := range kinds {
				c := newManyCase(t, r, kind, 17, 100, 16, 16, 24, 8)
				c.withMasks(r, 100)
				c.p.src = src
				mem, _, err := c.p.memory(t)
				if err != nil {
					t.Fatal(err)
				}
				ws := new(Workspace)
				ctx, w := make([]float32, 17*24), make([]float32, 17*100)
				step := func() {
					mem.Attend(ctx[:24], nil, c.rows[0], ws)
					mem.Attend(ctx[:24], w[:100], c.rows[1], ws)
					mem.AttendMany(ctx[:3*24], nil, c.queries.rowRange(0, 3), ws)
					mem.AttendMany(ctx, w, c.queries, ws)
					mem.AttendMany(ctx, nil, c.queries, ws)
				}
				step()
				if a := testing.AllocsPerRun(2, step); a != 0 {
					t.Fatalf("%s%v: %v allocations per step", c.p.scorer, src, a)
				}
			}
		}
	})
}

// A nil cache, an entry or head out of range and a nil scorer are
// ErrArgument, shapes the scorer does not take ErrShape, never a panic;
// outputs that meet the scorer's operands are still refused.
func TestMemoryCacheErrors(t *testing.T) {
	c, err := NewKVCache(2, 3, 8, 4, 5, F16)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Append(1, make([]float32, 3*2*4), make([]float32, 3*2*5), 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		scorer Scorer
		c      *KVCache
		b, h   int
		want   error
	}{
		{"nil cache", ScoreDot(), nil, 0, 0, ErrArgument},
		{"b = -1", ScoreDot(), c, -1, 0, ErrArgument},
		{"b = batch", ScoreDot(), c, 2, 0, ErrArgument},
		{"h = -1", ScoreDot(), c, 0, -1, ErrArgument},
		{"h = heads", ScoreDot(), c, 0, 3, ErrArgument},
		{"nil scorer", nil, c, 1, 0, ErrArgument},
	} {
		noPanic(t, tc.name, func() {
			if m, err := NewMemoryCache(tc.scorer, tc.c, tc.b, tc.h); !errors.Is(err, tc.want) || m != nil {
				t.Fatalf("%s: got %v, %v; want an error wrapping %v", tc.name, m, err, tc.want)
			}
		})
	}
	W := mustMatrix(t, 3, 5, make([]float32, 15)) // dk is 4
	g, _ := ScoreGeneral(W)
	if _, err := NewMemoryCache(g, c, 1, 2); !errors.Is(err, ErrShape) {
		t.Fatalf("general with W of 5 columns over keys of 4: %v, want ErrShape", err)
	}
	if _, err := NewMemoryCache(ScoreDot(), c, 1, 0, WithValidLength(3)); !errors.Is(err, ErrArgument) {
		t.Fatalf("valid length 3 of 2 keys: %v, want ErrArgument", err)
	}
	W = mustMatrix(t, 3, 4, make([]float32, 12))
	g, _ = ScoreGeneral(W)
	m, err := NewMemoryCache(g, c, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	buf := W.rowsFrom(0)
	if err := m.Attend(buf[:5], nil, make([]float32, 3), nil); !errors.Is(err, ErrArgument) {
		t.Fatalf("ctx in W: %v, want ErrArgument", err)
	}
	if m.Len() != 2 || m.QueryDim() != 3 || m.ValueDim() != 5 {
		t.Fatalf("Len, QueryDim, ValueDim = %d, %d, %d; want 2, 3, 5", m.Len(), m.QueryDim(), m.ValueDim())
	}
}

// Keys at or past the valid length are never read, in a cache of every
// type whose storage ends at an inaccessible page just before the first
// of them: NewMemoryCache, Attend and AttendMany (both paths) for every
// scorer. The rows of a head are packed, so a masked row inside the valid
// length cannot sit on a page of its own; TestMemoryNeverReadsMasked
// covers keep-masks over matrices, through the same kernels.
func TestMemoryCacheNeverReadsPastValid(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	const T, valid, dk, dv = 70, 61, 9, 13
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(63)
		for _, typ := range []KVType{F32, F16, BF16, I8} {
			for _, kind := range kinds {
				c := newManyCase(t, r, kind, 17, T, 6, dk, dv, 5)
				c.p.withValid(valid)
				c.p.src = memSource{cache: true, typ: typ}
				kc := c.p.cacheOf(t)
				c.p.ref.Keys, c.p.ref.Values = heldRows(kc, 1, 1)
				guardPast(t, kc, valid)
				clear(c.p.ref.Keys[valid:]) // never read
				clear(c.p.ref.Values[valid:])
				name := fmt.Sprintf("%s %v cache", c.p.scorer, typ)
				readsNoHiddenPage(t, name, Matrix{}, Matrix{}, func() {
					mem, err := NewMemoryCache(c.p.scorer, kc, 1, 1, c.p.opts...)
					if err != nil {
						t.Fatal(err)
					}
					want := c.oracle()
					ctx, w := make([]float32, 17*dv), make([]float32, 17*T)
					for _, n := range []int{1, 3, 17} {
						if err := mem.AttendMany(ctx[:n*dv], w[:n*T], c.queries.rowRange(0, n), nil); err != nil {
							t.Fatal(err)
						}
						for i := range n {
							checkRow(t, fmt.Sprintf("%s n=%d query %d", name, n, i), ctx[i*dv:(i+1)*dv], w[i*T:(i+1)*T], want[i])
						}
					}
				})
			}
		}
	})
}

// guardPast moves the storage of c (one whose head 1 of entry 1 is its
// last, rows from 0) so that the key and value rows of that head from row
// n on lie on an inaccessible page, and the rows before it keep their
// contents.
func guardPast(t *testing.T, c *KVCache, n int) {
	t.Helper()
	if c.typ == F32 {
		c.k32 = guardTail(t, c.k32, len(c.k32)-c.headK+n*c.dk)
		c.v32 = guardTail(t, c.v32, len(c.v32)-c.headV+n*c.dv)
		return
	}
	if c.typ == I8 {
		c.k8 = guardTail8(t, c.k8, len(c.k8)-c.headK+n*c.rk)
		c.v8 = guardTail8(t, c.v8, len(c.v8)-c.headV+n*c.rv)
		return
	}
	c.k16 = guardTail16(t, c.k16, len(c.k16)-c.headK+n*c.dk)
	c.v16 = guardTail16(t, c.v16, len(c.v16)-c.headV+n*c.dv)
}

// guardTail8 is guardTail for int8 elements.
func guardTail8(t *testing.T, x []int8, keep int) []int8 {
	t.Helper()
	if len(x)-keep > os.Getpagesize() || keep == 0 {
		t.Fatalf("%d hidden elements after %d do not fit a guard page", len(x)-keep, keep)
	}
	n := (keep + 3) / 4
	g := testutil.Guarded(t, n, true)
	u := unsafe.Slice((*int8)(unsafe.Pointer(&g[0])), 4*n)[4*n-keep:]
	copy(u, x[:keep])
	return unsafe.Slice(&u[0], len(x))
}

// guardTail returns a copy of x[:keep] that ends at an inaccessible
// page, extended to len(x) over that page, whose elements cannot be read.
func guardTail(t *testing.T, x []float32, keep int) []float32 {
	t.Helper()
	if 4*(len(x)-keep) > os.Getpagesize() || keep == 0 {
		t.Fatalf("%d hidden elements after %d do not fit a guard page", len(x)-keep, keep)
	}
	g := testutil.Guarded(t, keep, true)
	copy(g, x[:keep])
	return unsafe.Slice(&g[0], len(x))
}

// guardTail16 is guardTail for 16-bit elements.
func guardTail16(t *testing.T, x []uint16, keep int) []uint16 {
	t.Helper()
	if 2*(len(x)-keep) > os.Getpagesize() || keep == 0 {
		t.Fatalf("%d hidden elements after %d do not fit a guard page", len(x)-keep, keep)
	}
	n := (keep + 1) / 2
	g := testutil.Guarded(t, n, true)
	u := unsafe.Slice((*uint16)(unsafe.Pointer(&g[0])), 2*n)[2*n-keep:]
	copy(u, x[:keep])
	return unsafe.Slice(&u[0], len(x))
}

// Value rows wider than a kernel call's budget take the one-row blend on
// the tiled path, over matrices and over caches of each type.
func TestAttendManyWideValues(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(64)
		for i, src := range []memSource{{}, cacheSources[1], cacheSources[3], cacheSources[5]} {
			kind := kinds[i%len(kinds)]
			c := newManyCase(t, r, kind, 2, 4, 4, 3, kernel.MaxCall+3, 2)
			c.withMasks(r, 4)
			c.p.src = src
			c.check(t, fmt.Sprintf("%s dv=%d", c.p.scorer, kernel.MaxCall+3))
		}
	})
}

// Over an I8 cache the block path turns a block's queries in its score
// tile, which is shorter than sixteen rows where the keys are wider than
// 512 (the tile is then fewer keys than a row has columns): AttendMany
// over such widths still matches the oracle and Attend.
func TestMemoryCacheWideI8Block(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(5)
		for _, d := range []int{512, 640, 1024} {
			c := newManyCase(t, r, reference.KindScaledDot, 20, 40, d, d, 48, 8)
			c.p.src = memSource{cache: true, typ: I8}
			c.check(t, fmt.Sprintf("d=%d", d))
		}
	})
}
