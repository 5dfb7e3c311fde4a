package attention

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkDecodeCache times the decode step of BenchmarkDecode over a
// KVCache of each element type, with AttendCache: a 16-bit cache holds
// half the bytes, and GB/s, read-GB/s and read-fraction count the bytes
// as stored (a read of the 16-bit rows is of those bytes too).
func BenchmarkDecodeCache(b *testing.B) {
	problems := map[string]*cacheDecode{} // shared by the implementations
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, s := range cacheDecodeShapes {
			for _, typ := range kvTypes {
				name := fmt.Sprintf("shape=%s/type=%v", s.name, typ)
				b.Run(name, func(b *testing.B) {
					p := problems[name]
					if p == nil {
						p = newCacheDecode(b, s, typ)
						problems[name] = p
					}
					for _, workers := range []int{1, 2} {
						b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
							e := NewBatched(workers)
							defer e.Close()
							dst := BatchOutputs{Out: p.out}
							benchStep(b, func() error { return e.AttendCache(dst, p.q, p.cache, &p.opt) }, p.kv, p.bytes, p.flops(), workers)
						})
					}
				})
			}
		}
	})
}

var cacheDecodeShapes = []decodeShape{
	{name: "gqa-4k", heads: 32, kvHeads: 8, Tq: 1, Tk: 4096},   // f32 K+V 32 MiB
	{name: "gqa-32k", heads: 32, kvHeads: 8, Tq: 1, Tk: 32768}, // 256 MiB
	{name: "verify-4k", heads: 32, kvHeads: 8, Tq: 4, Tk: 4096, causal: true},
	{name: "mqa-32k", heads: 8, kvHeads: 1, Tq: 1, Tk: 32768}, // eight query heads a group; f32 K+V 32 MiB
	{name: "gqa2-4k", heads: 16, kvHeads: 8, Tq: 1, Tk: 4096}, // two query heads a group (Gemma 2)
}

// cacheDecode is a decode step over a full cache; kv views its stored
// rows as float32s, for the read they are set against.
type cacheDecode struct {
	decodeShape
	cache  *KVCache
	q, out Tensor
	kv     [][]float32
	bytes  int
	opt    BatchOptions
}

func newCacheDecode(b *testing.B, s decodeShape, typ KVType) *cacheDecode {
	r := testutil.Rand(12)
	c, err := NewKVCache(1, s.kvHeads, s.Tk, decodeDim, decodeDim, typ)
	if err != nil {
		b.Fatal(err)
	}
	const chunk = 256
	for j := 0; j < s.Tk; j += chunk {
		n := min(chunk, s.Tk-j)
		if err := c.Append(0, testutil.Floats(r, s.kvHeads*n*decodeDim, 1), testutil.Floats(r, s.kvHeads*n*decodeDim, 1), n); err != nil {
			b.Fatal(err)
		}
	}
	p := &cacheDecode{decodeShape: s, cache: c, opt: BatchOptions{Causal: s.causal}}
	mk := func(data []float32) Tensor {
		t, err := NewTensor(1, s.heads, s.Tq, decodeDim, data)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	p.q = mk(testutil.Floats(r, s.heads*s.Tq*decodeDim, 1))
	p.out = mk(make([]float32, s.heads*s.Tq*decodeDim))
	for h := range s.kvHeads {
		if typ == F32 {
			p.kv = append(p.kv, c.keys32(0, h), c.values32(0, h))
			continue
		}
		p.kv = append(p.kv, asFloats(c.keys16(0, h)), asFloats(c.values16(0, h)))
	}
	for _, x := range p.kv {
		p.bytes += 4 * len(x)
	}
	return p
}

// asFloats views the bytes of x (an even number of elements, from a
// make'd slice, so aligned) as float32s, for a read of those bytes.
func asFloats(x []uint16) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), len(x)/2)
}

// BenchmarkPrefillCache times a prefill (8 heads × 512 query rows × 512
// keys × d = 64, one key/value head per query head) over a cache of each
// type, beside the same call of Attend over float32 tensors: the block
// path, which widens each head's 16-bit rows once per worker (see
// wideHead) for its lanes.
func BenchmarkPrefillCache(b *testing.B) {
	const heads, T, d = 8, 512, 64
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, causal := range []bool{false, true} {
			for _, typ := range append([]KVType{F32, F16, BF16}, kvTensors) {
				name := fmt.Sprintf("causal=%v/type=%v", causal, typ)
				if typ == kvTensors {
					name = fmt.Sprintf("causal=%v/type=tensors", causal)
				}
				b.Run(name, func(b *testing.B) {
					r := testutil.Rand(13)
					q := tensor(b, r, 1, heads, T, d, false, 1)
					k := tensor(b, r, 1, heads, T, d, false, 1)
					v := tensor(b, r, 1, heads, T, d, false, 1)
					out := tensor(b, r, 1, heads, T, d, false, 1)
					opt := &BatchOptions{Causal: causal}
					e := NewBatched(1)
					defer e.Close()
					step := func() error { return e.Attend(BatchOutputs{Out: out}, q, k, v, opt) }
					if typ != kvTensors {
						c, err := NewKVCache(1, heads, T, d, d, typ)
						if err != nil {
							b.Fatal(err)
						}
						if err := c.AppendTensor(0, k, v); err != nil {
							b.Fatal(err)
						}
						step = func() error { return e.AttendCache(BatchOutputs{Out: out}, q, c, opt) }
					}
					if err := step(); err != nil {
						b.Fatal(err)
					}
					pairs := heads * T * T
					if causal {
						pairs = heads * T * (T + 1) / 2
					}
					b.ReportAllocs()
					for b.Loop() {
						step()
					}
					report(b, float64(4*pairs*d), 0)
				})
			}
		}
	})
}

// kvTensors stands, in BenchmarkPrefillCache, for Attend over tensors.
const kvTensors KVType = 255
