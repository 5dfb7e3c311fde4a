package attention

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkAttendMasked times a decoder step under keep-masks that mask
// one key in every `every`: each run of kept keys is scored by its own
// kernel call and no masked key is read, so short runs cost calls, long
// ones nothing measurable.
func BenchmarkAttendMasked(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, kind := range []reference.Kind{reference.KindDot, reference.KindGeneral, reference.KindAdditive} {
			for _, every := range []int{2, 5, 64} {
				const T, d = 1024, 64
				b.Run(fmt.Sprintf("score=%s/d=%d/T=%d/every=%d", kindName(kind), d, T, every), func(b *testing.B) {
					p := newProblem(b, testutil.Rand(5), kind, T, d, d, d, d)
					keep := make([]bool, T)
					for i := range keep {
						keep[i] = i%every != 0
					}
					mem, err := NewMemory(p.scorer, p.keys, p.values, WithKeepMask(keep))
					if err != nil {
						b.Fatal(err)
					}
					ctx, ws := make([]float32, d), new(Workspace)
					mem.Attend(ctx, nil, p.ref.Query, ws) // the Workspace grows once, outside the timing
					b.ReportAllocs()
					for b.Loop() {
						mem.Attend(ctx, nil, p.ref.Query, ws)
					}
				})
			}
		}
	})
}

// BenchmarkAttendCacheMemory times a decoder step of scaled-dot attention
// over T = 8192 keys and values of d = 128 (a long source) read from
// float32 matrices (NewMemory) or from an f16 or bf16 KVCache
// (NewMemoryCache): one query (Attend), 8 (beam search, AttendMany's tiled
// path) and 16 (its block path). GB/s count the K and V bytes as stored,
// read once per step: 8·T·d for float32, 4·T·d for 16 bits.
func BenchmarkAttendCacheMemory(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		const T, d = 8192, 128
		for _, beams := range []int{1, 8, 16} {
			for _, src := range []string{"f32", "f16", "bf16"} {
				b.Run(fmt.Sprintf("beams=%d/T=%d/d=%d/src=%s", beams, T, d, src), func(b *testing.B) {
					c := newManyCase(b, testutil.Rand(5), reference.KindScaledDot, beams, T, d, d, d, d)
					var mem *Memory
					var err error
					bytes := 8 * T * d
					if src == "f32" {
						mem, err = NewMemory(c.p.scorer, c.p.keys, c.p.values)
					} else {
						c.p.src = memSource{cache: true, typ: map[string]KVType{"f16": F16, "bf16": BF16}[src]}
						mem, _, err = c.p.memory(b)
						bytes /= 2
					}
					if err != nil {
						b.Fatal(err)
					}
					ctx, ws := make([]float32, beams*d), new(Workspace)
					step := func() {
						if beams == 1 {
							mem.Attend(ctx, nil, c.rows[0], ws)
						} else {
							mem.AttendMany(ctx, nil, c.queries, ws)
						}
					}
					step()
					b.ReportAllocs()
					b.SetBytes(int64(bytes))
					for b.Loop() {
						step()
					}
				})
			}
		}
	})
}
