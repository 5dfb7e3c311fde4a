package attention

import "math"

// The end of a row: its sink, the factor its unnormalised output is
// scaled by, and its log-sum-exp, from the online softmax's running max m
// and running sum l (l = Σ_j e^{s_j − m} over the row's scores).

// rowFinish returns how a row of head h ends with running max m and sum
// l: the factor its unnormalised output and exponentials are scaled by,
// and its LSE (when wanted, else 0). Without a sink the factor is 1/l;
// with one, 1/(l + e^{sink−m}), computed in float64 (where e^{sink−m} may
// overflow to +Inf for a sink that outweighs every score: the factor is
// then 0, the weights' limit). A NaN sum, or a NaN or +Inf sink, gives a
// NaN factor and LSE: the row is NaN. A row with nothing attended (m is
// -Inf) gets factor 0 and the sink, or -Inf, as its LSE.
func (p *batchPlan) rowFinish(h int, m, l float32) (f, lse float32) {
	sink := math.Inf(-1)
	if p.opt.Sinks != nil {
		sink = float64(p.opt.Sinks[h])
	}
	switch {
	case l != l || sink != sink || math.IsInf(sink, 1):
		return float32(math.NaN()), float32(math.NaN())
	case math.IsInf(float64(m), -1):
		return 0, float32(sink)
	}
	if math.IsInf(sink, -1) {
		f = 1 / l
	} else {
		f = float32(1 / (float64(l) + math.Exp(sink-float64(m))))
	}
	if p.lse != nil {
		lse = float32(logAddExp(float64(m)+math.Log(float64(l)), sink))
	}
	return f, lse
}

// logAddExp returns log(e^a + e^b) for a finite or −Inf b, and a finite a.
func logAddExp(a, b float64) float64 {
	hi, lo := math.Max(a, b), math.Min(a, b)
	return hi + math.Log1p(math.Exp(lo-hi))
}

// setLSE stores the LSE of query row i of head h in batch entry b, if the
// LSE is wanted.
func (p *batchPlan) setLSE(b, h, i int, lse float32) {
	if p.lse != nil {
		p.lse[(b*p.q.heads+h)*p.q.rows+i] = lse
	}
}
