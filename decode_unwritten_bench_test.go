//go:build unix

package attention

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkDecodeUnwritten times a grouped decode step (H 32, Hkv 8, one
// query row, d = 128) over K and V rows followed by memory never written,
// as a cache allocated for a long context is while it holds a short one:
// each head has room for unwrittenCap rows in a new mapping, which the
// system backs with pages only where written. The rows are a caller's own
// [Hkv][capacity][d] tensors (kv=tensor) or a KVCache's storage (kv=f32,
// f16). tail=written is the same step after every page of the mapping was
// written once.
//
// The kernels prefetch ahead only within the rows they are given, which
// the engine ends at the rows held (Tensor.rowsFrom, KVCache.heldRows), so
// the two tails should take the same time: prefetched, each line past
// them would cost a page walk that finds no page.
func BenchmarkDecodeUnwritten(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, n := range []int{100, 1000} {
			for _, kind := range []string{"tensor", "f32", "f16"} {
				for _, tail := range []string{"unwritten", "written"} {
					b.Run(fmt.Sprintf("keys=%d/kv=%s/tail=%s", n, kind, tail), func(b *testing.B) {
						benchUnwritten(b, n, kind, tail == "written")
					})
				}
			}
		}
	})
}

const unwrittenCap = 32768

func benchUnwritten(b *testing.B, n int, kind string, written bool) {
	const heads, kvHeads, d = 32, 8, decodeDim
	r := testutil.Rand(5)
	q, _ := NewTensor(1, heads, 1, d, testutil.Floats(r, heads*d, 1))
	out, _ := NewTensor(1, heads, 1, d, make([]float32, heads*d))
	dst := BatchOutputs{Out: out}
	e := NewBatched(1)
	defer e.Close()
	elems := kvHeads * unwrittenCap * d
	if kind == "f16" {
		elems /= 2 // the 16-bit rows, counted in float32s
	}
	kb, vb := testutil.Mapped(b, elems, written), testutil.Mapped(b, elems, written)
	k, v := testutil.Floats(r, kvHeads*n*d, 1), testutil.Floats(r, kvHeads*n*d, 1)
	var step func() error
	var kv [][]float32 // the held rows, for the read the step is set against
	bytes := 0
	if kind == "tensor" {
		hs := unwrittenCap * d
		kt, err := NewTensorStrided(1, kvHeads, n, d, kvHeads*hs, hs, d, kb)
		if err != nil {
			b.Fatal(err)
		}
		vt, _ := NewTensorStrided(1, kvHeads, n, d, kvHeads*hs, hs, d, vb)
		for h := range kvHeads {
			copy(kb[h*hs:][:n*d], k[h*n*d:])
			copy(vb[h*hs:][:n*d], v[h*n*d:])
			kv = append(kv, kb[h*hs:][:n*d], vb[h*hs:][:n*d])
		}
		bytes = 2 * 4 * kvHeads * n * d
		step = func() error { return e.Attend(dst, q, kt, vt, nil) }
	} else {
		typ := F32
		if kind == "f16" {
			typ = F16
		}
		c, err := NewKVCache(1, kvHeads, unwrittenCap, d, d, typ)
		if err != nil {
			b.Fatal(err)
		}
		if typ == F32 {
			c.k32, c.v32 = kb, vb
		} else {
			c.k16, c.v16 = asHalves(kb), asHalves(vb)
		}
		if err := c.Append(0, k, v, n); err != nil {
			b.Fatal(err)
		}
		for h := range kvHeads {
			if typ == F32 {
				kv = append(kv, c.heldKeys32(0, h), c.heldValues32(0, h))
			} else {
				kv = append(kv, asFloats(c.heldKeys16(0, h)), asFloats(c.heldValues16(0, h)))
			}
		}
		bytes = 2 * typ.Size() * kvHeads * n * d
		step = func() error { return e.AttendCache(dst, q, c, nil) }
	}
	benchStep(b, step, kv, bytes, decodeShape{heads: heads, kvHeads: kvHeads, Tq: 1, Tk: n}.flops(), 1)
}

// asHalves views x as twice as many uint16s.
func asHalves(x []float32) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
}
