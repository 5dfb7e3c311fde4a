package attention

import (
	"errors"
	"slices"
	"testing"

	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/testutil"
)

// TestKVCacheStorage16 checks a cache over the caller's rows: rows written
// into the slices by other code and held with Hold, then rows appended,
// read by AttendCache as a cache with its own storage reads the same rows
// appended (the same bits), Append writing into the caller's slices; on
// every implementation and both 16-bit types.
func TestKVCacheStorage16(t *testing.T) {
	const B, Hkv, H, capacity, d = 2, 2, 4, 40, 24
	testutil.ForEachImpl(t, func(t *testing.T) {
		for _, typ := range []KVType{F16, BF16} {
			r := testutil.Rand(3)
			held := []int{17, 30} // rows the caller wrote, per entry
			k, v := make([]uint16, B*Hkv*capacity*d), make([]uint16, B*Hkv*capacity*d)
			own, err := NewKVCache(B, Hkv, capacity, d, d, typ)
			if err != nil {
				t.Fatal(err)
			}
			narrow := kernel.NarrowF16
			if typ == BF16 {
				narrow = kernel.NarrowBF16
			}
			for b, n := range held {
				kf, vf := testutil.Floats(r, Hkv*n*d, 1), testutil.Floats(r, Hkv*n*d, 1)
				if err := own.Append(b, kf, vf, n); err != nil {
					t.Fatal(err)
				}
				for h := range Hkv {
					at := (b*Hkv + h) * capacity * d
					narrow(k[at:at+n*d], kf[h*n*d:(h+1)*n*d])
					narrow(v[at:at+n*d], vf[h*n*d:(h+1)*n*d])
				}
			}
			c, err := NewKVCache(B, Hkv, capacity, d, d, typ, WithStorage16(k, v))
			if err != nil {
				t.Fatal(err)
			}
			for b, n := range held {
				if err := c.Hold(b, n); err != nil {
					t.Fatal(err)
				}
				if c.Len(b) != n || c.Pos(b) != n {
					t.Fatalf("%v: entry %d holds %d at %d, want %d", typ, b, c.Len(b), c.Pos(b), n)
				}
			}
			// Two new rows each, through Append: into the caller's slices.
			for b := range B {
				kf, vf := testutil.Floats(r, Hkv*2*d, 1), testutil.Floats(r, Hkv*2*d, 1)
				if err := own.Append(b, kf, vf, 2); err != nil {
					t.Fatal(err)
				}
				if err := c.Append(b, kf, vf, 2); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(k, own.k16) || !slices.Equal(v, own.v16) {
				t.Fatalf("%v: the caller's slices are not the rows an own cache stores", typ)
			}
			g1, g2 := make([]float32, d), make([]float32, d)
			for b := range B {
				if c.Len(b) != own.Len(b) || c.Pos(b) != own.Pos(b) {
					t.Fatalf("%v: entry %d holds %d at %d, an own cache %d at %d", typ, b, c.Len(b), c.Pos(b), own.Len(b), own.Pos(b))
				}
				for h := range Hkv {
					for j := range c.Len(b) {
						c.Key(g1, b, h, j)
						own.Key(g2, b, h, j)
						if !slices.Equal(g1, g2) {
							t.Fatalf("%v: key (%d, %d, %d) differs", typ, b, h, j)
						}
					}
				}
			}
			e := NewBatched(2)
			defer e.Close()
			q, _ := NewTensor(B, H, 2, d, testutil.Floats(r, B*H*2*d, 1))
			got, want := make([]float32, B*H*2*d), make([]float32, B*H*2*d)
			gt, _ := NewTensor(B, H, 2, d, got)
			wt, _ := NewTensor(B, H, 2, d, want)
			opt := BatchOptions{Causal: true, Window: 9, Softcap: 3}
			if err := e.AttendCache(BatchOutputs{Out: gt}, q, c, &opt); err != nil {
				t.Fatal(err)
			}
			if err := e.AttendCache(BatchOutputs{Out: wt}, q, own, &opt); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%v: AttendCache over the caller's rows differs from over its own", typ)
			}
		}
	})
}

// TestKVCacheStorage16Errors checks WithStorage16's and Hold's refusals,
// none of which changes the cache.
func TestKVCacheStorage16Errors(t *testing.T) {
	const B, Hkv, capacity, d = 1, 2, 4, 8
	k, v := make([]uint16, B*Hkv*capacity*d), make([]uint16, B*Hkv*capacity*d)
	for _, tc := range []struct {
		name string
		typ  KVType
		opts []KVCacheOption
	}{
		{"float32", F32, []KVCacheOption{WithStorage16(k, v)}},
		{"int8", I8, []KVCacheOption{WithStorage16(k, v)}},
		{"ring", F16, []KVCacheOption{WithStorage16(k, v), WithRing()}},
		{"short k", F16, []KVCacheOption{WithStorage16(k[1:], v)}},
		{"long v", BF16, []KVCacheOption{WithStorage16(k, append(slices.Clone(v), 0))}},
	} {
		if _, err := NewKVCache(B, Hkv, capacity, d, d, tc.typ, tc.opts...); !errors.Is(err, ErrArgument) {
			t.Errorf("%s: err %v, want ErrArgument", tc.name, err)
		}
	}
	own, _ := NewKVCache(B, Hkv, capacity, d, d, F16)
	if err := own.Hold(0, 1); !errors.Is(err, ErrArgument) || own.Len(0) != 0 {
		t.Errorf("Hold on a cache with its own rows: err %v, Len %d", err, own.Len(0))
	}
	c, err := NewKVCache(B, Hkv, capacity, d, d, F16, WithStorage16(k, v))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hold(0, 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		b, n int
	}{{"past the capacity", 0, 2}, {"negative", 0, -1}, {"entry", 1, 1}, {"negative entry", -1, 1}} {
		if err := c.Hold(tc.b, tc.n); !errors.Is(err, ErrArgument) || c.Len(0) != 3 || c.Pos(0) != 3 {
			t.Errorf("Hold %s: err %v, Len %d Pos %d", tc.name, err, c.Len(0), c.Pos(0))
		}
	}
}
