package onnxattn

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkGQA is a decode step of GroupQueryAttention's token phase: 32
// query heads on 8 KV heads of 128, 4096 past keys in a static buffer
// shared with the present (no copy of the past), float32, with rotary
// (rows=gqa). Beside it the same step through the library's own calls
// (rows=attendcache): Rotary.Apply on the query, KVCache.AppendRotary of
// the new row into an F32 cache, Batched.AttendCache. The GQA call should
// take within 10% of the library's.
func BenchmarkGQA(b *testing.B) {
	const H, Hkv, D, past = 32, 8, 128, 4096
	const T = past + 1
	r := testutil.Rand(1)
	cos, sin := make([]float32, T*D/2), make([]float32, T*D/2)
	rot, err := attention.NewRotary(D, T, 10000, attention.RotateHalf)
	if err != nil {
		b.Fatal(err)
	}
	// The table NewRotary computed, as the caches ONNX Runtime is given.
	one := make([]float32, D)
	for p := range T {
		for i := range D / 2 {
			clear(one)
			one[i] = 1
			x, _ := attention.NewTensor(1, 1, 1, D, one)
			_ = rot.Apply(x, []int{p})
			cos[p*D/2+i], sin[p*D/2+i] = one[i], one[i+D/2]
		}
	}
	q := testutil.Floats(r, H*D, 1)
	k, v := testutil.Floats(r, Hkv*D, 1), testutil.Floats(r, Hkv*D, 1)
	pk, pv := testutil.Floats(r, Hkv*T*D, 1), testutil.Floats(r, Hkv*T*D, 1)
	for _, workers := range []int{1, 2} {
		e := attention.NewBatched(workers)
		b.Run(fmt.Sprintf("rows=gqa/workers=%d", workers), func(b *testing.B) {
			in := GQAInputs{
				Query: NewFloat32(q, 1, 1, H*D), Key: NewFloat32(k, 1, 1, Hkv*D), Value: NewFloat32(v, 1, 1, Hkv*D),
				PastKey: NewFloat32(pk, 1, Hkv, T, D), PastValue: NewFloat32(pv, 1, Hkv, T, D),
				SeqlensK: NewInt32([]int32{past}, 1), TotalSequenceLength: NewInt32([]int32{T}),
				CosCache: NewFloat32(cos, T, D/2), SinCache: NewFloat32(sin, T, D/2),
			}
			a := GQAAttributes{NumHeads: H, KVNumHeads: Hkv, DoRotary: true}
			for b.Loop() {
				if _, err := RunGroupQueryAttention(e, a, in, GQAWant{SharedBuffer: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=gqa-float16/workers=%d", workers), func(b *testing.B) {
			// The same call on float16 tensors: the past is widened each call.
			in := GQAInputs{
				Query: toFloat16(NewFloat32(q, 1, 1, H*D)), Key: toFloat16(NewFloat32(k, 1, 1, Hkv*D)), Value: toFloat16(NewFloat32(v, 1, 1, Hkv*D)),
				PastKey: toFloat16(NewFloat32(pk, 1, Hkv, T, D)), PastValue: toFloat16(NewFloat32(pv, 1, Hkv, T, D)),
				SeqlensK: NewInt32([]int32{past}, 1), TotalSequenceLength: NewInt32([]int32{T}),
				CosCache: toFloat16(NewFloat32(cos, T, D/2)), SinCache: toFloat16(NewFloat32(sin, T, D/2)),
			}
			a := GQAAttributes{NumHeads: H, KVNumHeads: Hkv, DoRotary: true}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := RunGroupQueryAttention(e, a, in, GQAWant{SharedBuffer: true}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rows=attendcache/workers=%d", workers), func(b *testing.B) {
			c, err := attention.NewKVCache(1, Hkv, T, D, D, attention.F32)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Append(0, pk[:Hkv*past*D], pv[:Hkv*past*D], past); err != nil {
				b.Fatal(err)
			}
			qs := make([]float32, H*D)
			out := make([]float32, H*D)
			qt, _ := attention.NewTensor(1, H, 1, D, qs)
			ot, _ := attention.NewTensor(1, H, 1, D, out)
			for b.Loop() {
				copy(qs, q)
				if err := rot.Apply(qt, []int{past}); err != nil {
					b.Fatal(err)
				}
				_ = c.Truncate(0, past)
				if err := c.AppendRotary(0, k, v, 1, rot); err != nil {
					b.Fatal(err)
				}
				if err := e.AttendCache(attention.BatchOutputs{Out: ot}, qt, c, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		e.Close()
	}
}
