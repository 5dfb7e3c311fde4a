// Package kernel holds every kernel that only the engine of package
// attention calls: the fronts generated from the kernel table in
// internal/kernels (zdispatch_GOARCH.go, a switch on the selected
// implementation and a direct call into its assembly; zdispatch_other.go
// for builds without assembly), the assembly and its stubs
// (zkernel_amd64.s, zkernel_arm64.s; the functions the table makes
// experimental in zkernel_exp_amd64.s, built with the
// attention_experimental tag, and without it zfallback_amd64.go, their
// production fallbacks under the same names), the per-implementation
// traits the engine plans with, the generic Go twin of every kernel, and
// the kernels composed of others (the block softmax, the keep-mask,
// prefetching within bounds, the additive scores in blocks).
//
// The package also holds the one implementation selection of the process
// (see internal/impl), which the fronts of package attention's exported
// family read through Active. It imports nothing of package attention.
package kernel

//go:generate go run -C ../../asm ./amd64 -out ../internal/kernel/zkernel_amd64.s -stubs ../internal/kernel/zkernel_amd64.go -pkg kernel
//go:generate go run -C ../../asm ./amd64 -experimental -out ../internal/kernel/zkernel_exp_amd64.s -stubs ../internal/kernel/zkernel_exp_amd64.go -pkg kernel
//go:generate go run -C ../../asm ./arm64 -out ../internal/kernel/zkernel_arm64.s -stubs ../internal/kernel/zkernel_arm64.go -pkg kernel
//go:generate go run -C ../../asm ./dispatch -dir ../internal/kernel -pkg kernel
