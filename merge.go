package attention

import "math"

// MergeAttention merges two partial attention results of the same query
// rows, computed over disjoint sets of keys, into the result over their
// union, in place: out and lse receive it. out and out2 hold n rows of dv
// values each, row-major; lse and lse2 hold each row's log-sum-exp (as
// BatchOutputs.LSE gives it), n = len(lse). A sink belongs to one of the
// parts: it is in that part's LSE.
//
// Row by row, with M = max(lse, lse2), the parts weigh
// c = e^{lse−M}/(e^{lse−M} + e^{lse2−M}) and c2 = e^{lse2−M}/(…), the
// output becomes c·out + c2·out2 and lse becomes log(e^{lse} + e^{lse2}),
// computed in float64 from the float32 inputs and rounded to float32 once
// each: the merge adds about one rounding (2u relative, u = 2^-24) of
// c·|out| + c2·|out2| to each output and of |lse| + 1 to the LSE.
//
// Special values: a part whose LSE is −Inf attended nothing and
// contributes nothing, its output not even read (two such parts leave
// out and lse as they are: zeros and −Inf from Batched.Attend). Otherwise
// a NaN or +Inf LSE (a part whose scores were) makes the row's output and
// LSE NaN. A NaN or Inf in an output whose LSE is finite reaches the merged
// output, as a value row does within one call.
//
// Lengths that do not fit return an error wrapping ErrShape (a
// *ShapeError naming the operand), a negative dv or outputs (out, lse)
// that overlap each other or an input (out2, lse2) one wrapping
// ErrArgument; nothing is written then. MergeAttention allocates nothing.
func MergeAttention(out, lse, out2, lse2 []float32, dv int) error {
	if err := checkMerge(out, lse, out2, lse2, dv); err != nil {
		return err
	}
	for i := range lse {
		mergeRow(out[i*dv:(i+1)*dv], &lse[i], out2[i*dv:(i+1)*dv], lse2[i])
	}
	return nil
}

// checkMerge validates a call of MergeAttention.
func checkMerge(out, lse, out2, lse2 []float32, dv int) error {
	const op = "MergeAttention"
	if dv < 0 {
		return argErr(op, "dv = %d is negative", dv)
	}
	n := len(lse)
	rows, _ := mulInt(n, dv)
	switch {
	case len(lse2) != n:
		// The LSE that out's length agrees with is the right one.
		if rows2, ok := mulInt(len(lse2), dv); ok && dv > 0 && len(out) == rows2 {
			return shapeErr(op, "len(lse)", n, len(lse2), "len(lse2) and len(out)/dv")
		}
		return shapeErr(op, "len(lse2)", len(lse2), n, "len(lse)")
	case len(out) != rows:
		return shapeErr(op, "len(out)", len(out), rows, "len(lse)·dv")
	case len(out2) != rows:
		return shapeErr(op, "len(out2)", len(out2), rows, "len(lse)·dv")
	}
	for _, o := range [...]struct {
		a, b   []float32
		na, nb string
	}{{out, lse, "out", "lse"}, {out, out2, "out", "out2"}, {out, lse2, "out", "lse2"}, {lse, out2, "lse", "out2"}, {lse, lse2, "lse", "lse2"}} {
		if overlaps(o.a, o.b) {
			return argErr(op, "%s overlaps %s in memory", o.na, o.nb)
		}
	}
	return nil
}

// mergeRow merges one row of MergeAttention: o and *l receive the merge
// of (o, *l) and (o2, l2).
func mergeRow(o []float32, l *float32, o2 []float32, l2 float32) {
	a, b := float64(*l), float64(l2)
	switch {
	case math.IsInf(b, -1):
		return
	case math.IsInf(a, -1):
		copy(o, o2)
		*l = l2
		return
	case a != a || b != b || math.IsInf(a, 1) || math.IsInf(b, 1):
		fillNaN(o)
		*l = float32(math.NaN())
		return
	}
	// One of the exponentials is 1, the other e^{−|a−b|}.
	m := math.Max(a, b)
	ea, eb := math.Exp(a-m), math.Exp(b-m)
	c, c2 := ea/(ea+eb), eb/(ea+eb)
	for j, x := range o2 {
		o[j] = float32(c*float64(o[j]) + c2*float64(x))
	}
	*l = float32(logAddExp(a, b))
}
