package reference

import "math"

// score returns the exact score of key h and the bound on a float32
// implementation's error. qt and kt are the query's and the key's terms
// (queryTerms, keyTerms), nil for the kinds without.
func score(p Problem, qt, kt []term, h []float32) (float64, float64) {
	s := p.Query
	switch p.Kind {
	case KindDot:
		d, a := Dot(s, h)
		return d, DotBound(len(h), a)
	case KindScaledDot, KindDotScale:
		f := 1 / math.Sqrt(float64(len(h)))
		if p.Kind == KindDotScale {
			f = float64(p.Scale)
		} else if len(h) == 0 {
			f = 1
		}
		d, a := Dot(s, h)
		// The query is scaled in float32 first (one more rounding each),
		// and the scale itself is a rounded float32.
		return f * d, Gamma(len(h)+2) * math.Abs(f) * a
	case KindGeneral:
		// W·h is computed once per key (rounded, dk terms), then dotted
		// with s (ds terms).
		var sc, ab float64
		for a := range p.W {
			wh, whAbs := kt[a].dot, kt[a].abs
			if math.IsInf(DotBound(len(h), whAbs), 1) {
				return sc, math.Inf(1) // W·h itself may overflow
			}
			sc += float64(s[a]) * wh
			ab += math.Abs(float64(s[a])) * whAbs
		}
		return sc, DotBound(len(s)+len(h), ab)
	case KindAdditive, KindConcat:
		return additive(p, qt, kt)
	}
	panic("reference: unknown kind")
}

// term is a dot product in float64 and the sum of its terms' magnitudes.
type term struct{ dot, abs float64 }

// queryTerms returns W·s, row by row, for the additive kinds (nil for the
// others): the query's half of every key's score, the same for all keys.
func queryTerms(p Problem) []term {
	if p.Kind != KindAdditive && p.Kind != KindConcat {
		return nil
	}
	s := p.Query
	qt := make([]term, len(p.V))
	for a := range qt {
		w := p.W[a]
		if p.Kind == KindConcat {
			w = w[:len(s)]
		}
		qt[a].dot, qt[a].abs = Dot(w, s)
	}
	return qt
}

// keyTerms returns, for every key h, the terms of its score that do not
// depend on the query, row by row, the same for all queries: W·h for
// KindGeneral, U·h for KindAdditive (W's key columns for KindConcat). Nil
// for the other kinds.
func keyTerms(p Problem) [][]term {
	u := p.U
	switch p.Kind {
	case KindGeneral, KindConcat:
		u = p.W
	case KindAdditive:
	default:
		return nil
	}
	kts := make([][]term, len(p.Keys))
	for i, h := range p.Keys {
		kt := make([]term, len(u))
		for a := range kt {
			kt[a].dot, kt[a].abs = Dot(u[a][len(u[a])-len(h):], h)
		}
		kts[i] = kt
	}
	return kts
}

// additive returns the score of a key whose terms are kt for KindAdditive,
// or for KindConcat (whose W holds the query's columns, then the key's),
// and the bound on a float32 implementation's error.
func additive(p Problem, qt, kt []term) (float64, float64) {
	var sc, err, abs float64
	ds, dk := len(p.Query), len(p.Keys[0])
	for a, va := range p.V {
		ws, wsAbs := qt[a].dot, qt[a].abs
		uh, uhAbs := kt[a].dot, kt[a].abs
		z := ws + uh
		// Errors of W·s and U·h, then the rounding of their sum; tanh is
		// 1-Lipschitz, then its own error.
		dz := DotBound(ds, wsAbs) + DotBound(dk, uhAbs) + U*(math.Abs(z)+DotBound(ds, wsAbs)+DotBound(dk, uhAbs))
		t := math.Tanh(z)
		sc += float64(va) * t
		abs += math.Abs(float64(va)) * (math.Abs(t) + dz + TanhAbsErr)
		err += math.Abs(float64(va)) * (dz + TanhAbsErr)
	}
	return sc, err + Gamma(len(p.V))*abs
}

// adjust applies Softcap, Bias and ALiBi to the exact score s of key i,
// whose float32 error bound is e, and returns the new score and bound.
// c·tanh(s/c) is 1-Lipschitz in s; on top come the rounding of s/c
// (computed as s·(1/c), 2u relative), the float32 tanh's error and the
// rounding of the product by c. Adding the bias, then the ALiBi term,
// rounds once more each.
func adjust(p Problem, i int, s, e float64) (float64, float64) {
	if c := float64(p.Softcap); c > 0 {
		x := s / c
		if math.IsNaN(x) {
			return x, e
		}
		t := c * math.Tanh(x)
		// The result lies in [-c, c] whatever the error, and ±Inf map
		// to ±c exactly.
		e = math.Min(e+2*U*math.Abs(s)+c*TanhAbsErr+U*math.Abs(t)+Tiny, 2*c)
		if math.IsInf(s, 0) {
			e = 0
		}
		s = t
	}
	if p.Bias != nil {
		s, e = addTerm(s, e, float64(p.Bias[i]), 0)
	}
	if p.Slope != 0 {
		a, ea := alibiTerm(p, i)
		s, e = addTerm(s, e, a, ea)
	}
	return s, e
}

// addTerm returns s + a and its bound: e, a's own bound ea, and the
// rounding of the float32 sum. An infinite term is exact and so is the sum
// (±Inf, or NaN), whatever the score's error; a score that is already
// infinite or NaN keeps its bound.
func addTerm(s, e, a, ea float64) (float64, float64) {
	if math.IsInf(a, 0) {
		return s + a, 0
	}
	if s += a; math.IsInf(s, 0) || math.IsNaN(s) {
		return s, e
	}
	return s, e + ea + U*(math.Abs(s)+e+ea) + 0x1p-149
}

// alibiTerm returns Slope·(i − Pos), the distance saturated to the range
// of int as the engine's is, and the error bound of its float32 form
// fl(Slope·float32(i − Pos)): two roundings (2u + u²), the float64
// distance's own (2^-52) and that of the saturation's bound, MaxInt, taken
// as a float64 (2^-31 at most), within 3u relative, plus half a subnormal
// spacing; +Inf if the product may overflow float32.
func alibiTerm(p Problem, i int) (float64, float64) {
	d := math.Max(float64(math.MinInt), math.Min(float64(math.MaxInt), float64(i)-float64(p.Pos)))
	a := float64(p.Slope) * d
	if math.Abs(a)*(1+3*U) >= math.MaxFloat32 {
		return a, math.Inf(1)
	}
	return a, 3*U*math.Abs(a) + 0x1p-149
}
