//go:build purego || !(amd64 || arm64)

package calib

// asmKernels is empty: without assembly only the Go kernels run.
var asmKernels []*Kernels
