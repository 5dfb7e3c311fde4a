//go:build !purego

package calib

import "golang.org/x/sys/cpu"

var useAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasAVX

// The shape of the kernels in use: independent chains, lanes per vector
// and floats per read-loop iteration (asm/amd64/calib.go).
var path, chains, lanes, readBlock = "generic", genericChains, 1, 1

func init() {
	if useAsm {
		path, chains, lanes, readBlock = "avx2", 12, 8, 64
	}
}

func fma(rounds int, a, b float32) float32 {
	if useAsm {
		return fmaAVX2(rounds, a, b)
	}
	return fmaGeneric(rounds, a, b)
}

func readSum(x []float32) float32 {
	if useAsm {
		return readAVX2(x)
	}
	return readGeneric(x)
}
