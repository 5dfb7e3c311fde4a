package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
)

func runDemo(stdout, _ io.Writer, args []string) error {
	fs := newFlagSet("demo", "", "Walks through one attention step by hand, attends over a toy translation\nand draws its weights, and compares the speed of the kernel implementations.\nIt takes no flags.")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	p := &printer{w: stdout}
	for _, section := range []func(*printer) error{
		writeSetup, writeWorkedExample, writeSecondExample, writeTranslation, writeSpeed,
	} {
		if err := section(p); err != nil {
			return err
		}
		if p.err != nil {
			return p.err
		}
	}
	return nil
}

func writeSetup(p *printer) error {
	p.printf("attention demo\n")
	p.printf("  implementation  %s%s\n", attention.Implementation(), ignoredRequest())
	p.printf("  available       %s\n", strings.Join(attention.Implementations(), ", "))
	p.printf("  cpu             %s\n\n", cpuFeatures())
	return nil
}

// ignoredRequest returns, for the implementation line, the ATTENTION_IMPL
// value the library ignored and why, or "" if it ignored none.
func ignoredRequest() string {
	_, err := attention.ImplementationRequest()
	var ie *attention.ImplementationError
	if !errors.As(err, &ie) {
		return ""
	}
	why := "unknown name"
	if ie.Missing != nil {
		why = "this CPU lacks " + strings.Join(ie.Missing, ", ")
	}
	return fmt.Sprintf(" (%s=%q ignored: %s)", impl.EnvVar, ie.Value, why)
}

// writeWorkedExample replays the seeds' worked example (scores [2, 1, 0],
// values [4, 2, 0]) one operation at a time with the library's kernels, then
// runs the same step as a single Memory.Attend, so the reader can see that
// the engine is nothing more than those steps.
func writeWorkedExample(p *printer) error {
	// A one-dimensional query of 1 against keys 2, 1, 0 makes the dot scores
	// exactly the example's scores.
	query := []float32{1}
	keys, err := attention.NewMatrix(3, 1, []float32{2, 1, 0})
	if err != nil {
		return err
	}
	values, err := attention.NewMatrix(3, 1, []float32{4, 2, 0})
	if err != nil {
		return err
	}
	mem, err := attention.NewMemory(attention.ScoreDot(), keys, values)
	if err != nil {
		return err
	}

	scores := make([]float32, keys.Rows())
	for i := range scores {
		scores[i] = attention.Dot(query, keys.Row(i))
	}
	exps := make([]float32, len(scores))
	attention.Exp(exps, scores)
	weights := make([]float32, len(scores))
	attention.Softmax(weights, scores)

	ctx := make([]float32, mem.ValueDim())
	attended := make([]float32, mem.Len())
	if err := mem.Attend(ctx, attended, query, nil); err != nil {
		return err
	}

	p.printf("One decoder step, by hand (query [1]; keys [2] [1] [0]; values [4] [2] [0]; score = dot)\n")
	p.printf("  1 score    q·h          %s\n", list(scores, short))
	p.printf("  2 exp      e^score      %s\n", exponentials(scores, exps, 3))
	p.printf("  3 sum      Σ e^score    %s = %.3f\n", join(exps, " + ", fixed(3)), sum(exps))
	p.printf("  4 weights  e^score / Σ  %s   sum %.3f\n", list(weights, fixed(3)), sum(weights))
	p.printf("  5 context  Σ w·value    %s = %s = %.2f\n",
		weightedTerms(weights, values), join(products(weights, values), " + ", fixed(2)), ctx[0])
	p.printf("  Memory.Attend, in one call: weights %s, context %.2f\n\n", list(attended, fixed(3)), ctx[0])
	return nil
}

// writeSecondExample is the seeds' step t = 2, given as scores only.
func writeSecondExample(p *printer) error {
	scores := []float32{0.3, 2.1, 0.5}
	exps := make([]float32, len(scores))
	attention.Exp(exps, scores)
	weights := make([]float32, len(scores))
	attention.Softmax(weights, scores)

	p.printf("Another step: scores %s\n", list(scores, short))
	p.printf("  exp      %s\n", exponentials(scores, exps, 3))
	p.printf("  sum      %s = %.3f\n", join(exps, " + ", fixed(3)), sum(exps))
	p.printf("  weights  %s   sum %.2f: the top score gets the biggest share, not all of it\n\n",
		join(weights, " / ", fixed(2)), sum(weights))
	return nil
}

// Number formatting: the demo prints the precision the seeds use, so its
// lines can be read against the worked examples digit for digit.

func fixed(decimals int) func(float32) string {
	return func(v float32) string { return strconv.FormatFloat(float64(v), 'f', decimals, 32) }
}

// short prints the shortest form that reads back as the same float32,
// which for the example scores is the number as written (2, 0.3).
func short(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }

func join(xs []float32, sep string, format func(float32) string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = format(x)
	}
	return strings.Join(s, sep)
}

func list(xs []float32, format func(float32) string) string {
	return "[" + join(xs, " ", format) + "]"
}

func sum(xs []float32) float32 {
	var s float32
	for _, x := range xs {
		s += x
	}
	return s
}

// exponentials writes "e^2 ≈ 7.389   e^0 = 1.000", saying "=" only where the
// printed value is exact.
func exponentials(x, ex []float32, decimals int) string {
	s := make([]string, len(x))
	for i := range x {
		rel := "≈"
		if float64(ex[i]) == math.Trunc(float64(ex[i])) {
			rel = "="
		}
		s[i] = fmt.Sprintf("e^%s %s %s", short(x[i]), rel, fixed(decimals)(ex[i]))
	}
	return strings.Join(s, "   ")
}

// weightedTerms writes "0.665×4 + 0.245×2 + …" for one-column values.
func weightedTerms(w []float32, values attention.Matrix) string {
	s := make([]string, len(w))
	for i := range w {
		s[i] = fixed(3)(w[i]) + "×" + short(values.At(i, 0))
	}
	return strings.Join(s, " + ")
}

func products(w []float32, values attention.Matrix) []float32 {
	out := make([]float32, len(w))
	for i := range w {
		out[i] = w[i] * values.At(i, 0)
	}
	return out
}
