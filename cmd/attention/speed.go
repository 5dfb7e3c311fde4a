package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
)

// The speed check times one decoder step at a typical shape. Its budget is
// small because it ends the demo; `attention bench` is for real numbers.
const (
	speedT      = 1024
	speedD      = 64
	speedIters  = 300 // Attend calls per run
	speedRuns   = 5   // runs per implementation; the median is reported
	speedBudget = 200 * time.Millisecond
)

func writeSpeed(p *printer) error {
	keys, values, query := speedData()
	mem, err := attention.NewMemory(attention.ScoreScaledDot(), keys, values)
	if err != nil {
		return err
	}
	names := attention.Implementations()
	perStep := make([]time.Duration, len(names))
	for i, name := range names {
		d, err := timeImplementation(name, mem, query)
		if err != nil {
			return err
		}
		perStep[i] = d
	}

	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %s/step", name, micros(perStep[i]))
	}
	p.printf("speed (T=%d, d=%d): %s", speedT, speedD, strings.Join(parts, ", "))
	// Implementations lists generic last, so every other path is compared
	// with it.
	if last := len(names) - 1; last > 0 {
		ratios := make([]string, last)
		for i := range last {
			ratios[i] = fmt.Sprintf("%s %.1f× faster than %s", names[i], float64(perStep[last])/float64(perStep[i]), names[last])
		}
		p.printf(" (%s)", strings.Join(ratios, ", "))
	}
	p.printf("\n")
	return nil
}

// speedData fills K, V and q from a fixed seed so every run times the same
// arithmetic.
func speedData() (keys, values attention.Matrix, query []float32) {
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	// The shapes are constants that fit, so NewMatrix cannot fail here.
	keys, _ = attention.NewMatrix(speedT, speedD, fill(speedT*speedD))
	values, _ = attention.NewMatrix(speedT, speedD, fill(speedT*speedD))
	return keys, values, fill(speedD)
}

// timeImplementation returns the median time of one Attend with the named
// kernels selected, restoring the selection the program started with.
func timeImplementation(name string, mem *attention.Memory, query []float32) (time.Duration, error) {
	defer impl.Reset()
	if !impl.Select(name) {
		return 0, fmt.Errorf("implementation %q is not available", name)
	}

	ctx := make([]float32, mem.ValueDim())
	weights := make([]float32, mem.Len())
	var ws attention.Workspace
	step := func() error { return mem.Attend(ctx, weights, query, &ws) }
	if err := step(); err != nil { // warm up caches and the workspace
		return 0, err
	}
	var runs []time.Duration
	start := time.Now()
	for len(runs) < speedRuns && (len(runs) == 0 || time.Since(start) < speedBudget) {
		t0 := time.Now()
		for range speedIters {
			if err := step(); err != nil {
				return 0, err
			}
		}
		runs = append(runs, time.Since(t0)/speedIters)
	}
	slices.Sort(runs)
	return runs[len(runs)/2], nil
}

// micros prints a duration in µs with three significant figures.
func micros(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	switch {
	case us >= 100:
		return fmt.Sprintf("%.0f µs", us)
	case us >= 10:
		return fmt.Sprintf("%.1f µs", us)
	default:
		return fmt.Sprintf("%.2f µs", us)
	}
}
