package attention

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// Benchmarks run once per implementation (impl=NAME), so generic and SIMD
// are compared in the same run; names are benchstat-friendly. Each reports
// its throughput: GB/s through b.SetBytes, plus GFLOP/s or ns/elem.

func BenchmarkDot(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, n := range []int{128, 1024, 4096, 65536} {
			b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
				r := testutil.Rand(1)
				x, y := testutil.Floats(r, n, 1), testutil.Floats(r, n, 1)
				b.SetBytes(int64(8 * n))
				var s float32
				for b.Loop() {
					s += Dot(x, y)
				}
				sink = s
				testutil.Report(b, 2*float64(n), float64(n))
			})
		}
	})
}

func BenchmarkAxpy(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, n := range []int{64, 1024, 4096, 65536} {
			b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
				r := testutil.Rand(2)
				x, y := testutil.Floats(r, n, 1), testutil.Floats(r, n, 1)
				b.SetBytes(int64(12 * n)) // read x and y, write y
				for b.Loop() {
					Axpy(1e-3, x, y)
				}
				testutil.Report(b, 2*float64(n), float64(n))
			})
		}
	})
}

func BenchmarkExp(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, n := range []int{64, 4096} {
			b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
				x := testutil.Floats(testutil.Rand(3), n, 80)
				dst := make([]float32, n)
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					Exp(dst, x)
				}
				testutil.Report(b, 0, float64(n))
			})
		}
	})
}

func BenchmarkSoftmax(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, n := range []int{128, 1024, 4096, 8192} {
			b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
				x := testutil.Floats(testutil.Rand(4), n, 10)
				dst := make([]float32, n)
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					Softmax(dst, x)
				}
				testutil.Report(b, 0, float64(n))
			})
		}
	})
}

// BenchmarkSoftmaxMasked times Softmax over n=4096 scores of which a
// fraction, scattered, is masked (-Inf), as a keep-mask or padding inside
// a packed batch gives.
func BenchmarkSoftmaxMasked(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		const n = 4096
		for _, pct := range []int{10, 50} {
			b.Run(fmt.Sprintf("n=%d/masked=%d%%", n, pct), func(b *testing.B) {
				r := testutil.Rand(4)
				x := testutil.Floats(r, n, 10)
				for i := range x {
					if r.IntN(100) < pct {
						x[i] = float32(math.Inf(-1))
					}
				}
				dst := make([]float32, n)
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					Softmax(dst, x)
				}
				testutil.Report(b, 0, float64(n))
			})
		}
	})
}

// BenchmarkAttend times one decoder step over T keys of dimension d (values
// of the same dimension) for each scorer. FLOPs count the score and blend
// passes, 4·T·d, plus the additive scorers' tanh row (counted as 2 per
// element), so scorers compare by time per step, not by GFLOP/s alone.
func BenchmarkAttend(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, kind := range kinds {
			for _, d := range []int{64, 128} {
				for _, T := range []int{128, 1024, 8192} {
					name := fmt.Sprintf("score=%s/d=%d/T=%d", kindName(kind), d, T)
					b.Run(name, func(b *testing.B) {
						r := testutil.Rand(5)
						p := newProblem(b, r, kind, T, d, d, d, d)
						mem, err := NewMemory(p.scorer, p.keys, p.values)
						if err != nil {
							b.Fatal(err)
						}
						ctx, ws := make([]float32, d), new(Workspace)
						mem.Attend(ctx, nil, p.ref.Query, ws) // the Workspace grows once, outside the timing
						b.ReportAllocs()
						b.SetBytes(int64(8 * T * d)) // K (or its projection) and V
						for b.Loop() {
							mem.Attend(ctx, nil, p.ref.Query, ws)
						}
						testutil.Report(b, float64(4*T*d), float64(T))
					})
				}
			}
		}
	})
}

func kindName(k reference.Kind) string {
	return [...]string{"dot", "scaled-dot", "dot-scale", "general", "additive", "concat"}[k]
}

var sink float32

// BenchmarkBatched times multi-head attention over [1][heads][Tq][d] with
// Tk keys, for 1 and 2 workers. FLOPs count 4·d per attended (query, key)
// pair (two for Q·Kᵀ, two for P·V), so a causal or masked run reports the
// work it actually does. The keep-mask shape drops every key with
// probability 1/10, independently per query; the weights shape also writes
// the [heads][Tq][Tk] weights.
func BenchmarkBatched(b *testing.B) {
	shapes := []struct {
		name                  string
		heads, Tq, Tk, d      int
		causal, keep, weights bool
	}{
		{"prefill", 8, 512, 512, 64, false, false, false},
		{"prefill-causal", 8, 512, 512, 64, true, false, false},
		{"prefill-keep", 8, 512, 512, 64, false, true, false},
		{"prefill-weights", 8, 512, 512, 64, false, false, true},
		{"decode", 8, 1, 4096, 128, false, false, false},
		{"chunked", 8, 64, 2048, 128, true, false, false},
	}
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, s := range shapes {
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/h=%d/Tq=%d/Tk=%d/d=%d/workers=%d", s.name, s.heads, s.Tq, s.Tk, s.d, workers), func(b *testing.B) {
					r := testutil.Rand(9)
					q := tensor(b, r, 1, s.heads, s.Tq, s.d, false, 1)
					k := tensor(b, r, 1, s.heads, s.Tk, s.d, false, 1)
					v := tensor(b, r, 1, s.heads, s.Tk, s.d, false, 1)
					out := tensor(b, r, 1, s.heads, s.Tq, s.d, false, 1)
					opt := &BatchOptions{Causal: s.causal}
					dst := BatchOutputs{Out: out}
					if s.weights {
						w := tensor(b, r, 1, s.heads, s.Tq, s.Tk, false, 1)
						dst.Weights = &w
					}
					if s.keep {
						opt.Keep = make([]bool, s.Tq*s.Tk)
						for i := range opt.Keep {
							opt.Keep[i] = r.IntN(10) > 0
						}
					}
					e := NewBatched(workers)
					defer e.Close()
					pairs := 0
					for i := range s.Tq {
						switch {
						case s.causal:
							pairs += min(s.Tk, i+s.Tk-s.Tq+1)
						case s.keep:
							for _, k := range opt.Keep[i*s.Tk : (i+1)*s.Tk] {
								if k {
									pairs++
								}
							}
						default:
							pairs += s.Tk
						}
					}
					b.ReportAllocs()
					for b.Loop() {
						e.Attend(dst, q, k, v, opt)
					}
					testutil.Report(b, float64(4*s.heads*pairs*s.d), 0)
				})
			}
		}
	})
}

// BenchmarkBatchedScoreStage measures what Softcap and Bias add to a
// prefill; "none" is the plain fast path for comparison.
func BenchmarkBatchedScoreStage(b *testing.B) {
	const heads, T, d = 8, 512, 64
	testutil.ForEachImplB(b, func(b *testing.B) {
		r := testutil.Rand(9)
		q := tensor(b, r, 1, heads, T, d, false, 1)
		k := tensor(b, r, 1, heads, T, d, false, 1)
		v := tensor(b, r, 1, heads, T, d, false, 1)
		out := tensor(b, r, 1, heads, T, d, false, 1)
		bias := tensor(b, r, 1, 1, T, T, false, 1)
		slopes, sinks := testutil.Floats(r, heads, 0.5), testutil.Floats(r, heads, 1)
		for _, c := range []struct {
			name string
			opt  BatchOptions
		}{
			{"none", BatchOptions{}},
			{"softcap", BatchOptions{Softcap: 30}},
			{"bias", BatchOptions{Bias: &bias}},
			{"softcap+bias", BatchOptions{Softcap: 30, Bias: &bias}},
			{"alibi", BatchOptions{ALiBi: slopes}},
			{"sinks", BatchOptions{Sinks: sinks}},
		} {
			b.Run(fmt.Sprintf("%s/h=%d/T=%d/d=%d", c.name, heads, T, d), func(b *testing.B) {
				e := NewBatched(1)
				defer e.Close()
				b.ReportAllocs()
				for b.Loop() {
					e.Attend(BatchOutputs{Out: out}, q, k, v, &c.opt)
				}
				testutil.Report(b, float64(4*heads*T*T*d), 0)
			})
		}
	})
}

// BenchmarkBatchedLayout runs a prefill with the heads packed ([H][T][d])
// and interleaved ([T][H][d], as a fused QKV projection leaves them): the
// interleaved rows lie H·d floats apart, a power of two, so the rows of
// one tile share few L1 sets, which the block kernels' runs must allow
// for.
func BenchmarkBatchedLayout(b *testing.B) {
	const heads, T = 8, 512
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, d := range []int{64, 128} {
			for _, layout := range []string{"packed", "interleaved"} {
				b.Run(fmt.Sprintf("%s/h=%d/T=%d/d=%d", layout, heads, T, d), func(b *testing.B) {
					r := testutil.Rand(9)
					mk := func() Tensor {
						data := testutil.Floats(r, heads*T*d, 1)
						hs, rs := T*d, d
						if layout == "interleaved" {
							hs, rs = d, heads*d
						}
						x, err := NewTensorStrided(1, heads, T, d, heads*T*d, hs, rs, data)
						if err != nil {
							b.Fatal(err)
						}
						return x
					}
					q, k, v, out := mk(), mk(), mk(), mk()
					e := NewBatched(1)
					defer e.Close()
					for b.Loop() {
						e.Attend(BatchOutputs{Out: out}, q, k, v, nil)
					}
					testutil.Report(b, float64(4*heads*T*T*d), 0)
				})
			}
		}
	})
}

// BenchmarkAttendMasked times a decoder step under keep-masks that mask
// one key in every `every`: each run of kept keys is scored by its own
// kernel call and no masked key is read, so short runs cost calls, long
// ones nothing measurable.
func BenchmarkAttendMasked(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, kind := range []reference.Kind{reference.KindDot, reference.KindGeneral, reference.KindAdditive} {
			for _, every := range []int{2, 5, 64} {
				const T, d = 1024, 64
				b.Run(fmt.Sprintf("score=%s/d=%d/T=%d/every=%d", kindName(kind), d, T, every), func(b *testing.B) {
					p := newProblem(b, testutil.Rand(5), kind, T, d, d, d, d)
					keep := make([]bool, T)
					for i := range keep {
						keep[i] = i%every != 0
					}
					mem, err := NewMemory(p.scorer, p.keys, p.values, WithKeepMask(keep))
					if err != nil {
						b.Fatal(err)
					}
					ctx, ws := make([]float32, d), new(Workspace)
					mem.Attend(ctx, nil, p.ref.Query, ws) // the Workspace grows once, outside the timing
					b.ReportAllocs()
					for b.Loop() {
						mem.Attend(ctx, nil, p.ref.Query, ws)
					}
				})
			}
		}
	})
}

// BenchmarkAttendCacheMemory times a decoder step of scaled-dot attention
// over T = 8192 keys and values of d = 128 (a long source) read from
// float32 matrices (NewMemory) or from an f16 or bf16 KVCache
// (NewMemoryCache): one query (Attend), 8 (beam search, AttendMany's tiled
// path) and 16 (its block path). GB/s count the K and V bytes as stored,
// read once per step: 8·T·d for float32, 4·T·d for 16 bits.
func BenchmarkAttendCacheMemory(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		const T, d = 8192, 128
		for _, beams := range []int{1, 8, 16} {
			for _, src := range []string{"f32", "f16", "bf16"} {
				b.Run(fmt.Sprintf("beams=%d/T=%d/d=%d/src=%s", beams, T, d, src), func(b *testing.B) {
					c := newManyCase(b, testutil.Rand(5), reference.KindScaledDot, beams, T, d, d, d, d)
					var mem *Memory
					var err error
					bytes := 8 * T * d
					if src == "f32" {
						mem, err = NewMemory(c.p.scorer, c.p.keys, c.p.values)
					} else {
						c.p.src = memSource{cache: true, typ: map[string]KVType{"f16": F16, "bf16": BF16}[src]}
						mem, _, err = c.p.memory(b)
						bytes /= 2
					}
					if err != nil {
						b.Fatal(err)
					}
					ctx, ws := make([]float32, beams*d), new(Workspace)
					step := func() {
						if beams == 1 {
							mem.Attend(ctx, nil, c.rows[0], ws)
						} else {
							mem.AttendMany(ctx, nil, c.queries, ws)
						}
					}
					step()
					b.ReportAllocs()
					b.SetBytes(int64(bytes))
					for b.Loop() {
						step()
					}
				})
			}
		}
	})
}

// BenchmarkAttendMany times one beam-search step of B beams over T keys of
// dimension d (values of the same dimension): mode=many is one AttendMany
// call, mode=loop the same work as B Attend calls. Both report GB/s of the
// K and V bytes read once (8·T·d per step), so the loop's figure is what a
// single pass would have to reach, and the ratio of the two is the
// speedup; GFLOP/s count 4·T·d per beam. K+V take 1 MiB at T = 1024 (L2),
// 8 MiB at 8192 (L3) and 64 MiB at 65536, more than a 32 MiB L3 holds.
func BenchmarkAttendMany(b *testing.B) {
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, beams := range []int{1, 2, 4, 8, 16} {
			for _, T := range []int{1024, 8192, 65536} {
				const d = 128
				for _, mode := range []string{"loop", "many"} {
					name := fmt.Sprintf("score=scaled-dot/beams=%d/T=%d/d=%d/mode=%s", beams, T, d, mode)
					b.Run(name, func(b *testing.B) { benchBeams(b, reference.KindScaledDot, beams, T, d, mode == "loop") })
				}
			}
		}
	})
}

// benchBeams times one step of the given beams, by AttendMany or (loop)
// by an Attend call per beam.
func benchBeams(b *testing.B, kind reference.Kind, beams, T, d int, loop bool) {
	r := testutil.Rand(5)
	c := newManyCase(b, r, kind, beams, T, d, d, d, d)
	mem, err := NewMemory(c.p.scorer, c.p.keys, c.p.values)
	if err != nil {
		b.Fatal(err)
	}
	ctx, ws := make([]float32, beams*d), new(Workspace)
	step := func() {
		if !loop {
			mem.AttendMany(ctx, nil, c.queries, ws)
			return
		}
		for i, q := range c.rows {
			mem.Attend(ctx[i*d:(i+1)*d], nil, q, ws)
		}
	}
	step() // the Workspace grows once, outside the timing
	b.ReportAllocs()
	b.SetBytes(int64(8 * T * d))
	for b.Loop() {
		step()
	}
	testutil.Report(b, float64(4*T*d*beams), 0)
}
