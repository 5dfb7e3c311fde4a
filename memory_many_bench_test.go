package attention

import (
	"fmt"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkAttendMany times one beam-search step of B beams over T keys of
// dimension d (values of the same dimension): mode=many is one AttendMany
// call, mode=loop the same work as B Attend calls. Both report GB/s of the
// K and V bytes read once (8·T·d per step), so the loop's figure is what a
// single pass would have to reach, and the ratio of the two is the
// speedup; GFLOP/s count 4·T·d per beam. K+V take 1 MiB at T = 1024 (L2),
// 8 MiB at 8192 (L3) and 64 MiB at 65536, more than a 32 MiB L3 holds.
func BenchmarkAttendMany(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, beams := range []int{1, 2, 4, 8, 16} {
			for _, T := range []int{1024, 8192, 65536} {
				const d = 128
				for _, mode := range []string{"loop", "many"} {
					name := fmt.Sprintf("score=scaled-dot/beams=%d/T=%d/d=%d/mode=%s", beams, T, d, mode)
					b.Run(name, func(b *testing.B) { benchBeams(b, reference.KindScaledDot, beams, T, d, mode == "loop") })
				}
			}
		}
	})
}

// benchBeams times one step of the given beams, by AttendMany or (loop)
// by an Attend call per beam.
func benchBeams(b *testing.B, kind reference.Kind, beams, T, d int, loop bool) {
	r := testutil.Rand(5)
	c := newManyCase(b, r, kind, beams, T, d, d, d, d)
	mem, err := NewMemory(c.p.scorer, c.p.keys, c.p.values)
	if err != nil {
		b.Fatal(err)
	}
	ctx, ws := make([]float32, beams*d), new(Workspace)
	step := func() {
		if !loop {
			mem.AttendMany(ctx, nil, c.queries, ws)
			return
		}
		for i, q := range c.rows {
			mem.Attend(ctx[i*d:(i+1)*d], nil, q, ws)
		}
	}
	step() // the Workspace grows once, outside the timing
	b.ReportAllocs()
	b.SetBytes(int64(8 * T * d))
	for b.Loop() {
		step()
	}
	report(b, float64(4*T*d*beams), 0)
}
