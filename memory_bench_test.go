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
					b.ReportAllocs()
					for b.Loop() {
						mem.Attend(ctx, nil, p.ref.Query, ws)
					}
				})
			}
		}
	})
}
