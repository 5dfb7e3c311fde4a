package attention

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glancelab/attention/internal/testutil"
)

// loopLayer is the stand-in for a decoder layer's other work: the
// matrix–vector products of its projections and MLP over float32 weights
// of a layer's size (4096 columns, 64 MiB: more than the L3, as a model's
// weights are), read row after row from where the last gap stopped.
type loopLayer struct {
	w    []float32 // rows of loopCols
	x, y []float32
	row  int
}

const loopCols, loopRows = 4096, 4096

func newLoopLayer() *loopLayer {
	r := testutil.Rand(13)
	return &loopLayer{w: testutil.Floats(r, loopRows*loopCols, 1), x: testutil.Floats(r, loopCols, 1), y: make([]float32, loopRows)}
}

// work runs the product's rows, sixteen at a time, for at least gap.
func (l *loopLayer) work(gap time.Duration) {
	for t0 := time.Now(); time.Since(t0) < gap; {
		for range 16 {
			l.y[l.row] = Dot(l.w[l.row*loopCols:(l.row+1)*loopCols], l.x)
			l.row = (l.row + 1) % loopRows
		}
	}
}

// BenchmarkDecodeLoop times the decode step inside a model's loop: 32
// query heads on 8 KV heads over a bfloat16 cache, each call preceded on
// the calling goroutine by gap of the layer's other work (loopLayer).
// ns/op and attn-µs are attention's time per call alone, the timer stopped
// for the other work; loop-µs is the whole iteration. Set workers=2
// against workers=1 at the same gap: the default engine should never be
// slower than one worker, whatever the gap.
func BenchmarkDecodeLoop(b *testing.B) {
	layer := newLoopLayer()
	for _, Tk := range []int{1024, 4096} {
		s := decodeShape{name: fmt.Sprintf("gqa-%dk-bf16", Tk/1024), heads: 32, kvHeads: 8, Tq: 1, Tk: Tk}
		p := newCacheDecode(b, s, BF16)
		for _, gap := range []time.Duration{0, 300 * time.Microsecond, 2 * time.Millisecond} {
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("shape=%s/gap=%v/workers=%d", s.name, gap, workers), func(b *testing.B) {
					e := NewBatched(workers)
					defer e.Close()
					dst := BatchOutputs{Out: p.out}
					step := func() {
						if err := e.AttendCache(dst, p.q, p.cache, &p.opt); err != nil {
							b.Fatal(err)
						}
					}
					step() // sizes the workers' scratch
					calls := make([]time.Duration, 0, b.N)
					b.ReportAllocs()
					b.ResetTimer()
					t0 := time.Now()
					for range b.N {
						if gap > 0 {
							b.StopTimer()
							layer.work(gap)
							b.StartTimer()
						}
						c0 := time.Now()
						step()
						calls = append(calls, time.Since(c0))
					}
					b.StopTimer()
					slices.Sort(calls)
					b.ReportMetric(float64(calls[len(calls)/2])/1e3, "attn-µs")
					b.ReportMetric(float64(time.Since(t0))/1e3/float64(b.N), "loop-µs")
				})
			}
		}
	}
}
