// Package peers compares this module's kernels and attention step with
// other ways of doing the same in Go, on the same inputs: naive loops,
// gonum's blas32 (Dot, Gemv, Gemm) with math.Exp, and viterin/vek's SIMD
// vector functions. It is a module of its own so that gonum and vek never
// become dependencies of the attention module.
//
// The benchmarks are named BenchmarkOp/shape/lib=NAME, so that
//
//	./run
//
// (go test -bench, then benchstat -col /lib) prints each library side by
// side with its change against attention's time. TestPeersAgree checks
// first that every library computes the same results.
package peers
