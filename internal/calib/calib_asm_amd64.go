//go:build !purego

package calib

// asmKernels are the assembly sets of amd64, widest first; their
// requirements are the "// Requires:" lines of calib_amd64.s (a test
// checks them).
var asmKernels = []*Kernels{
	{name: "avx512", bits: 512, requires: []string{"AVX", "AVX512F", "AVX512VL", "SSE"},
		chains: 16, lanes: 16, fma: fmaAVX512,
		reads: []readKernel{{"readAVX512", 128, readAVX512, readSum}, {"readOneAVX512", 128, readOneAVX512, readSum},
			{"pairsAVX512", 256, pairsAVX512, readPairs}}},
	{name: "avx2", bits: 256, requires: []string{"AVX", "FMA3", "SSE"},
		chains: 12, lanes: 8, fma: fmaAVX2,
		reads: []readKernel{{"readAVX2", 64, readAVX2, readSum}, {"readOneAVX2", 128, readOneAVX2, readSum},
			{"pairsAVX2", 128, pairsAVX2, readPairs}}},
}
