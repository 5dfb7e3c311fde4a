package attention

import (
	"fmt"
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
		want := oneWorkerOut(t, p)
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
			workersGone(t, before, fmt.Sprintf("spin %v", spin))
		}
	}
}

// Wake changes no result: calls made after it, while the workers it woke
// poll or after they parked again, give the bits of one worker; it does
// nothing on the zero engine, one with one worker, or a closed one; it may
// race with calls and with Close; and workers it woke stop at Close.
func TestWake(t *testing.T) {
	var zero Batched
	zero.Wake()
	NewBatched(1).Wake()
	r := testutil.Rand(37)
	p := newBatchProblem(t, r, batchCase{B: 1, H: 8, Hkv: 2, Tq: 1, Tk: 700, dk: 16, dv: 8})
	want := oneWorkerOut(t, p)
	before := runtime.NumGoroutine()
	e := NewBatched(3)
	e.SetIdleSpin(0) // parked between calls, so that Wake has workers to wake
	// The parked helpers take its two nudges.
	e.Wake()
	for deadline := time.Now().Add(5 * time.Second); e.nudged.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("5 s after Wake, the two parked helpers took %d nudges", e.nudged.Load())
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() { // Wake from elsewhere throughout
		defer close(done)
		for range 200 {
			e.Wake()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	for call := range 20 {
		if call%3 == 0 {
			e.Wake()
		}
		if call%5 == 0 {
			time.Sleep(time.Duration(call%3) * time.Millisecond)
		}
		clear(p.out.data)
		if err := e.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
			t.Fatal(err)
		}
		for i, x := range p.out.data {
			if math.Float32bits(x) != math.Float32bits(want[i]) {
				t.Fatalf("call %d: element %d = %v, with one worker %v", call, i, x, want[i])
			}
		}
	}
	e.Wake()
	e.Close()
	<-done
	e.Wake() // closed: nothing
	workersGone(t, before, "woken")
}

// oneWorkerOut returns p's output as one worker computes it.
func oneWorkerOut(t *testing.T, p *batchProblem) []float32 {
	t.Helper()
	one := NewBatched(1)
	defer one.Close()
	if err := one.Attend(p.outputs(), p.q, p.k, p.v, &p.opt); err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), p.out.data...)
}

// workersGone fails the test if, 5 s after a Close, more goroutines run
// than there were before the engine.
func workersGone(t *testing.T, before int, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%s: %d goroutines 5 s after Close, %d before the engine", what, n, before)
	}
}

// The idle spin follows the gap before a call that used the helpers: 1¼
// of it under 5 ms, DefaultIdleSpin otherwise or at least; SetIdleSpin
// fixes it.
func TestIdleSpinAdapts(t *testing.T) {
	e := NewBatched(2)
	defer e.Close()
	if got := e.idleSpin(); got != DefaultIdleSpin {
		t.Fatalf("a new engine polls for %v, want %v", got, DefaultIdleSpin)
	}
	for _, c := range []struct{ gap, want time.Duration }{
		{time.Millisecond, 1250 * time.Microsecond},
		{10 * time.Microsecond, DefaultIdleSpin},
		{4 * time.Millisecond, 5 * time.Millisecond},
		{20 * time.Millisecond, DefaultIdleSpin},
	} {
		e.lastEnd = time.Second
		e.adaptSpin(time.Second + c.gap)
		if got := e.idleSpin(); got != c.want {
			t.Errorf("after a gap of %v the workers poll for %v, want %v", c.gap, got, c.want)
		}
	}
	e.SetIdleSpin(0)
	e.adaptSpin(e.lastEnd + time.Millisecond)
	if got := e.idleSpin(); got != 0 {
		t.Errorf("after SetIdleSpin(0) the workers poll for %v", got)
	}
}

// TestPrewake checks when a parked worker wakes ahead of the next call:
// a lead of 200 µs and an eighth of the period before it is due, polling
// for twice the lead; never for a period of maxPrewake or more, once the
// call is overdue, or after SetIdleSpin.
func TestPrewake(t *testing.T) {
	e := NewBatched(2)
	defer e.Close()
	if sleep, poll := e.prewakeAt(time.Second); sleep != 0 || poll != 0 {
		t.Fatalf("a new engine's workers wake ahead after %v (poll %v)", sleep, poll)
	}
	const start = time.Second
	for _, c := range []struct {
		period, now, sleep, poll time.Duration
	}{
		// Next call due at start+2·period; the lead is 200 µs + period/8.
		{8 * time.Millisecond, start + 9*time.Millisecond, 5800 * time.Microsecond, 2400 * time.Microsecond},
		{80 * time.Millisecond, start + 90*time.Millisecond, 59800 * time.Microsecond, 20400 * time.Microsecond},
		{8 * time.Millisecond, start + 15*time.Millisecond, 0, 0}, // within the lead
		{8 * time.Millisecond, start + 20*time.Millisecond, 0, 0}, // overdue
		{maxPrewake, start + maxPrewake + time.Millisecond, 0, 0},
	} {
		e.lastStart = 0
		e.adaptSpin(start)
		e.adaptSpin(start + c.period)
		if sleep, poll := e.prewakeAt(c.now); sleep != c.sleep || poll != c.poll {
			t.Errorf("period %v, at %v: sleep %v and poll %v, want %v and %v", c.period, c.now-start, sleep, poll, c.sleep, c.poll)
		}
	}
	e.lastStart = 0
	e.adaptSpin(start)
	e.adaptSpin(start + 8*time.Millisecond)
	e.SetIdleSpin(DefaultIdleSpin)
	if sleep, _ := e.prewakeAt(start + 9*time.Millisecond); sleep != 0 {
		t.Errorf("after SetIdleSpin the workers wake ahead after %v", sleep)
	}
}
