//go:build !purego

package calib

// asmKernels is the assembly set of arm64 (Advanced SIMD, the only vector
// width Go's arm64 targets have); its requirements are those the NEON
// implementation declares.
var asmKernels = []*Kernels{
	{name: "neon", bits: 128, requires: []string{"ASIMD"},
		chains: 16, lanes: 4, fma: fmaNEON, reads: []readKernel{{"readNEON", 64, readNEON, readSum}}},
}
