package attention

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/glancelab/attention/internal/testutil"
)

// However long idle workers poll for the next call, the results are the
// same bits, and Close stops workers that are polling at once rather than
// when their spin runs out.
func TestIdleSpin(t *testing.T) {
	r := testutil.Rand(31)
	// Chunks of keys as work items, and tasks of their own.
	for _, c := range []batchCase{
		{B: 1, H: 8, Hkv: 1, Tq: 1, Tk: 3000, dk: 32, dv: 16, valid: true},
		{B: 2, H: 8, Hkv: 4, Tq: 3, Tk: 300, dk: 16, dv: 8, causal: true},
	} {
		p := newBatchProblem(t, r, c)
		one := NewBatched(1)
		if err := one.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
			t.Fatal(err)
		}
		one.Close()
		want := append([]float32(nil), p.out.data...)
		before := runtime.NumGoroutine()
		for _, spin := range []time.Duration{0, -1, DefaultIdleSpin, time.Hour} {
			e := NewBatched(2)
			e.SetIdleSpin(spin)
			for call := range 3 {
				clear(p.out.data)
				if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
					t.Fatal(err)
				}
				for i, x := range p.out.data {
					if math.Float32bits(x) != math.Float32bits(want[i]) {
						t.Fatalf("%v spin %v call %d: element %d = %v, with one worker %v", c, spin, call, i, x, want[i])
					}
				}
			}
			e.Close()
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Fatalf("spin %v: %d goroutines 5 s after Close, %d before the engine", spin, n, before)
			}
		}
	}
}
