package kernel

import "math"

// rotaryCase turns one to four rows of 2n floats (n from the size, some
// rows strided past their elements) by random angles: the elements past
// 2n and between rows must stay as they were, which the result covers.
func rotaryCase(pairs bool) func(a *kernelArgs, n int) []result {
	return func(a *kernelArgs, n int) []result {
		rows, half := 1+n%4, n
		stride := 2*half + n%3
		x := a.floats(rowsLen(rows, stride, 2*half+n%3), 4)
		cos, sin := a.floats(half, 1), a.floats(half, 1)
		for i := range cos {
			th := float64(cos[i]) * math.Pi
			cos[i], sin[i] = float32(math.Cos(th)), float32(math.Sin(th))
		}
		if pairs {
			RotaryPairs(x, stride, rows, cos, sin)
		} else {
			RotaryHalf(x, stride, rows, cos, sin)
		}
		return []result{{"x", x, nil}}
	}
}

func init() {
	kernelCases["rotaryHalf"] = rotaryCase(false)
	kernelCases["rotaryPairs"] = rotaryCase(true)
}
