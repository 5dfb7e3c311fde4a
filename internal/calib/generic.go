package calib

// genericChains is the number of chains fmaGeneric runs, one float each.
const genericChains = 12

// fmaGeneric is the Go form of the FMA kernel: 12 scalar chains of
// acc += a*b (Go fuses the multiply and add only where the CPU allows, so
// this measures what Go code reaches, not the hardware's peak).
func fmaGeneric(rounds int, a, b float32) float32 {
	var c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11 float32
	for range rounds {
		c0 += a * b
		c1 += a * b
		c2 += a * b
		c3 += a * b
		c4 += a * b
		c5 += a * b
		c6 += a * b
		c7 += a * b
		c8 += a * b
		c9 += a * b
		c10 += a * b
		c11 += a * b
	}
	return ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)) + ((c8 + c9) + (c10 + c11))
}

// readGeneric returns Σ x[i] through eight accumulators.
func readGeneric(x []float32) float32 {
	var s [8]float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		s[0] += x[i]
		s[1] += x[i+1]
		s[2] += x[i+2]
		s[3] += x[i+3]
		s[4] += x[i+4]
		s[5] += x[i+5]
		s[6] += x[i+6]
		s[7] += x[i+7]
	}
	for ; i < len(x); i++ {
		s[0] += x[i]
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
