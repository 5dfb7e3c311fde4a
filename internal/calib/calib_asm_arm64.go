//go:build !purego

package calib

import "golang.org/x/sys/cpu"

var useAsm = cpu.ARM64.HasASIMD

// The shape of the kernels in use: independent chains, lanes per vector
// and floats per read-loop iteration (asm/arm64/calib.go).
var path, chains, lanes, readBlock = "generic", genericChains, 1, 1

func init() {
	if useAsm {
		path, chains, lanes, readBlock = "neon", 16, 4, 64
	}
}

func fma(rounds int, a, b float32) float32 {
	if useAsm {
		return fmaNEON(rounds, a, b)
	}
	return fmaGeneric(rounds, a, b)
}

func readSum(x []float32) float32 {
	if useAsm {
		return readNEON(x)
	}
	return readGeneric(x)
}
