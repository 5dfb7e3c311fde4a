package calib

import (
	"math"
	"unsafe"
)

// genericChains is the number of chains fmaGeneric runs, one float each:
// six cover the add latency (3 or 4 cycles) on two scalar add pipes, and
// with their products and a take 13 of the 15 registers Go allocates
// (more, and the compiler spills them to the stack every round).
const genericChains = 6

// fmaGeneric is the Go form of the FMA kernel: 6 scalar chains of
// acc += a*b, which measure what scalar Go code reaches (Go fuses the
// multiply and the add only where the architecture's baseline has an FMA).
// Each chain multiplies by its own copy of b from an array, which the
// compiler cannot see through: written with b itself, the chains are the
// same expression, and it merges them into one chain and one product, a
// sixth of the work counted.
func fmaGeneric(rounds int, a, b float32) float32 {
	var bs [genericChains]float32
	for i := range bs {
		bs[i] = b
	}
	var c0, c1, c2, c3, c4, c5 float32
	for range rounds {
		c0 += a * bs[0]
		c1 += a * bs[1]
		c2 += a * bs[2]
		c3 += a * bs[3]
		c4 += a * bs[4]
		c5 += a * bs[5]
	}
	return ((c0 + c1) + (c2 + c3)) + (c4 + c5)
}

// readGeneric returns Σ x[i] through eight accumulators, local variables
// the compiler keeps in registers (an array of them would live in memory,
// and every add would wait on a store).
func readGeneric(x []float32) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(x); i += 8 {
		y := x[i : i+8 : i+8]
		s0 += y[0]
		s1 += y[1]
		s2 += y[2]
		s3 += y[3]
		s4 += y[4]
		s5 += y[5]
		s6 += y[6]
		s7 += y[7]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// xorGeneric returns the xor of the bits of x's elements, as a float32's
// bits, reading them eight bytes at a time into four chains: scalar float
// adds (readGeneric) issue on two ports, one element each, while scalar
// loads come three a cycle, so Go code reading pairs of floats (a dot
// product) outran readGeneric's limit by a third.
func xorGeneric(x []float32) float32 {
	var r uint32
	if len(x) > 0 && uintptr(unsafe.Pointer(&x[0]))%8 != 0 {
		r, x = math.Float32bits(x[0]), x[1:]
	}
	w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(x))), len(x)/2)
	var a0, a1, a2, a3 uint64
	i := 0
	for ; i+4 <= len(w); i += 4 {
		y := w[i : i+4 : i+4]
		a0 ^= y[0]
		a1 ^= y[1]
		a2 ^= y[2]
		a3 ^= y[3]
	}
	for ; i < len(w); i++ {
		a0 ^= w[i]
	}
	a := a0 ^ a1 ^ a2 ^ a3
	r ^= uint32(a) ^ uint32(a>>32)
	if len(x)%2 == 1 {
		r ^= math.Float32bits(x[len(x)-1])
	}
	return math.Float32frombits(r)
}
