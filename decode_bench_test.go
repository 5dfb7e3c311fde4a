package attention

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/glancelab/attention/internal/calib"
	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/testutil"
)

// BenchmarkDecode times the decode step of a language model on
// Batched.Attend: a few new query rows per head against a KV cache of
// kvHeads heads, grouped-query where heads > kvHeads. Such a step does
// about as many FLOPs as it reads bytes, so it is bound by reading K and V,
// and it reports that:
//
//   - GB/s: the bytes of K and V (every key/value head counted once, however
//     many query heads read it) per second of Attend;
//   - read-GB/s: a streaming read of exactly those K and V slices with the
//     calibration read kernels (calib.ReadProbeOf: every byte summed by the
//     widest register set the CPU has, the faster of its one- and
//     four-stream reads, whatever implementation the attention runs), on
//     as many threads as the engine
//     has workers, each reading its share of K and of V;
//   - read-fraction: GB/s over read-GB/s;
//   - GFLOP/s: the multiply-adds of the scores and the blend (2·(dk+dv)
//     FLOPs per query row and key it sees);
//   - roof-fraction: the time the step cannot beat on this machine, the
//     longer of its read at read-GB/s and its FLOPs at the FMA peak (on
//     as many threads, measured alongside the read), over its time. A
//     step whose FLOPs take longer than its read (many query rows a KV
//     head, a core with narrow FMA pipes) cannot reach a read-fraction of
//     1; roof-fraction says how near it is to what it can reach.
//
// The read and the peak are timed in short samples interleaved with the
// timed loop (one before each quarter of b.N, the rest after it), with the
// timer stopped, and the median sample is kept: on a shared, noisy machine
// the reference then meets the same load as the attention it is set
// against, which a limit measured once, minutes before, does not.
//
// Caches: both loops run back to back over the same buffers and never
// flush, so each starts from the state the other leaves, and both measure
// the steady state of repeated passes over that working set. Where K+V
// fits a cache (gqa-1's 8 KiB in L1, gqa-512's 4 MiB in L3) both read it
// warm from there; the 32 MiB shapes fill an L3 of 32 MiB or less (shared
// with the other cores, and on a virtual machine with other tenants), so
// both stream most of it from DRAM, as a model's decode step does once
// the other layers have evicted its cache. Flushing before each sample (or
// reading a buffer of the same size elsewhere) would make the reference
// cold while the attention loop stays warm, or the reverse, and the
// fraction would set unlike states against each other. ns/op is the
// latency of one step; for gqa-1 (a single key) it is the fixed cost of a
// call.
func BenchmarkDecode(b *testing.B) {
	problems := map[string]*decodeProblem{} // shared by the implementations
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, s := range decodeShapes {
			b.Run("shape="+s.name, func(b *testing.B) {
				p := problems[s.name]
				if p == nil {
					p = newDecodeProblem(b, s)
					problems[s.name] = p
				}
				for _, workers := range []int{1, 2} {
					b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchDecode(b, p, workers) })
				}
			})
		}
	})
}

// decodeShape is one decode step: batch 1, keys and values of decodeDim
// columns unless d says otherwise.
type decodeShape struct {
	name           string
	heads, kvHeads int // query heads, key/value heads
	Tq, Tk         int // new rows per head, keys in the cache
	causal         bool
	window         int // a sliding window (BatchOptions.Window), 0 for none
	d              int // head width; 0 for decodeDim
}

// dim is the shape's head width.
func (s decodeShape) dim() int {
	if s.d > 0 {
		return s.d
	}
	return decodeDim
}

// read is how many keys of each head the step reads: the window's.
func (s decodeShape) read() int {
	if s.window > 0 {
		return min(s.Tk, s.window)
	}
	return s.Tk
}

// kvBytes is the size of the K and V the step reads, each key/value head
// once.
func (s decodeShape) kvBytes() int { return 2 * 4 * s.kvHeads * s.read() * s.dim() }

// flops is the step's multiply-adds: a score and a blend of dim
// each for every query row and key it sees. Causal aligns the rows
// bottom-right, so row i sees the keys up to Tk-Tq+i; a window keeps the
// last window of those.
func (s decodeShape) flops() float64 {
	seen := 0
	for i := range s.Tq {
		n := s.Tk
		if s.causal {
			n = max(0, s.Tk-s.Tq+i+1)
		}
		if s.window > 0 {
			n = min(n, s.window)
		}
		seen += n
	}
	return float64(s.heads) * float64(seen) * 2 * 2 * float64(s.dim())
}

const decodeDim = 128

var decodeShapes = []decodeShape{
	{name: "gqa-4k", heads: 32, kvHeads: 8, Tq: 1, Tk: 4096}, // K+V 32 MiB
	// Twice as long: 64 MiB, more than any L3 of this class holds, so that
	// both the step and the read come from DRAM. At 32 MiB an L3 of about
	// that size still serves part of a pass, and more of the read probe's
	// (a tight loop over exactly those bytes) than of the step's.
	{name: "gqa-8k", heads: 32, kvHeads: 8, Tq: 1, Tk: 8192},
	{name: "mqa-32k", heads: 8, kvHeads: 1, Tq: 1, Tk: 32768}, // 32 MiB in one head
	// A speculative verify of 4 tokens: the new rows see the cache and
	// their causal prefix (Causal aligns them bottom-right); the last row
	// reads every key.
	{name: "verify-4k", heads: 32, kvHeads: 8, Tq: 4, Tk: 4096, causal: true},
	{name: "gqa-512", heads: 32, kvHeads: 8, Tq: 1, Tk: 512}, // 4 MiB: a short context
	{name: "gqa-1", heads: 32, kvHeads: 8, Tq: 1, Tk: 1},     // 8 KiB: the cost of a call
	{name: "mha-4k", heads: 8, kvHeads: 8, Tq: 1, Tk: 4096},  // 32 MiB, no grouping
	// No grouping over 64 MiB: each head's one row streams its K and V
	// from DRAM, a read with a quarter of a group's FMAs a byte.
	{name: "mha-16k", heads: 8, kvHeads: 8, Tq: 1, Tk: 16384},
	{name: "gqa-32k", heads: 32, kvHeads: 8, Tq: 1, Tk: 32768}, // 256 MiB: from DRAM
	// A sliding window of 1024 keys over a cache of 32768 (256 MiB), set
	// against the same step over 1024 keys: the keys outside the window
	// are never read.
	{name: "gqa-32k-window-1k", heads: 32, kvHeads: 8, Tq: 1, Tk: 32768, window: 1024},
	{name: "gqa-1k", heads: 32, kvHeads: 8, Tq: 1, Tk: 1024},
	// Seven query heads a group (28 on 4, as in Qwen 2.5 7B): the wide
	// row kernels where there are some. K+V 32 MiB.
	{name: "gqa7-8k", heads: 28, kvHeads: 4, Tq: 1, Tk: 8192},
	// Two and three query heads a group (16 on 8 as in Gemma 2 9B, 24 on
	// 8 as in Llama 3.2 3B), whose row kernels stream K and V with fewer
	// FMAs a byte than four. K+V 32 MiB.
	{name: "gqa2-4k", heads: 16, kvHeads: 8, Tq: 1, Tk: 4096},
	{name: "gqa3-4k", heads: 24, kvHeads: 8, Tq: 1, Tk: 4096},
	// Five and six query heads a group (40 on 8 as in Qwen 2.5 14B and
	// 32B, 12 on 2 as in Qwen 2.5 1.5B): the wide row kernels' five- and
	// six-row forms. K+V 32 and 16 MiB.
	{name: "gqa5-4k", heads: 40, kvHeads: 8, Tq: 1, Tk: 4096},
	{name: "gqa6-8k", heads: 12, kvHeads: 2, Tq: 1, Tk: 8192},
	// Head width 64 (32 query heads on 8, as in Llama 3.2 1B): the
	// multi-row kernels' d = 64 forms. K+V 16 MiB.
	{name: "gqa-4k-d64", heads: 32, kvHeads: 8, Tq: 1, Tk: 4096, d: 64},
}

// decodeProblem holds a shape's packed tensors; kv are the data of k and v.
type decodeProblem struct {
	decodeShape
	q, k, v, out Tensor
	kv           [][]float32 // the K and V the step reads, a slice per head
	opt          BatchOptions
}

func newDecodeProblem(b *testing.B, s decodeShape) *decodeProblem {
	r, d := testutil.Rand(11), s.dim()
	p := &decodeProblem{decodeShape: s, opt: BatchOptions{Causal: s.causal, Window: s.window}}
	mk := func(heads, rows int, data []float32) Tensor {
		t, err := NewTensor(1, heads, rows, d, data)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	n := s.kvHeads * s.Tk * d
	kd, vd := testutil.Floats(r, n, 1), testutil.Floats(r, n, 1)
	p.q = mk(s.heads, s.Tq, testutil.Floats(r, s.heads*s.Tq*d, 1))
	p.k, p.v = mk(s.kvHeads, s.Tk, kd), mk(s.kvHeads, s.Tk, vd)
	for _, x := range [][]float32{kd, vd} {
		for h := range s.kvHeads {
			p.kv = append(p.kv, x[(h*s.Tk+s.Tk-s.read())*d:(h+1)*s.Tk*d])
		}
	}
	p.out = mk(s.heads, s.Tq, make([]float32, s.heads*s.Tq*d))
	return p
}

// readSets splits the slices of K and V between threads: thread i reads
// the i-th of `threads` equal parts of each, as a worker would share them.
func readSets(kv [][]float32, threads int) [][][]float32 {
	sets := make([][][]float32, threads)
	for _, x := range kv {
		n := len(x)
		for i := range sets {
			sets[i] = append(sets[i], x[i*n/threads:(i+1)*n/threads])
		}
	}
	return sets
}

const (
	decodeReadSamples = 5                    // read timings per run, the median kept
	decodeReadSample  = 2 * time.Millisecond // the length of one
)

func benchDecode(b *testing.B, p *decodeProblem, workers int) {
	e := NewBatched(workers)
	defer e.Close()
	dst := BatchOutputs{Out: p.out}
	benchStep(b, func() error { return e.Attend(dst, p.q, p.k, p.v, &p.opt) }, p.kv, p.kvBytes(), p.flops(), workers)
}

// benchStep times step, which reads the bytes of kv and does flops FLOPs,
// against a read of them and the FMA peak on workers threads (see
// BenchmarkDecode).
func benchStep(b *testing.B, step func() error, kv [][]float32, bytes int, flops float64, workers int) {
	// One call sizes the workers' scratch, so the loop is the steady state.
	if err := step(); err != nil {
		b.Fatal(err)
	}
	read := calib.ReadProbeOf(readSets(kv, workers)...)
	read.Rate(decodeReadSample) // sizes the samples
	fma := calib.FMAProbe(workers)
	fma.Rate(decodeReadSample)
	rates := make([]float64, 0, decodeReadSamples)
	peaks := make([]float64, 0, decodeReadSamples)
	sample := func() {
		b.StopTimer()
		rates = append(rates, read.Rate(decodeReadSample))
		peaks = append(peaks, fma.Rate(decodeReadSample))
		b.StartTimer()
	}
	segments := min(b.N, decodeReadSamples-1)
	b.ReportAllocs()
	b.ResetTimer()
	for s := range segments {
		sample()
		n := b.N / segments
		if s < b.N%segments {
			n++
		}
		for range n {
			step()
		}
	}
	for len(rates) < decodeReadSamples {
		sample()
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds()
	if sec == 0 {
		return
	}
	slices.Sort(rates)
	slices.Sort(peaks)
	ref, peak := rates[len(rates)/2], peaks[len(peaks)/2]
	step1 := sec / float64(b.N)
	gbps := float64(bytes) / step1 / 1e9
	b.ReportMetric(gbps, "GB/s")
	b.ReportMetric(ref, "read-GB/s")
	b.ReportMetric(gbps/ref, "read-fraction")
	b.ReportMetric(flops/step1/1e9, "GFLOP/s")
	roof := max(float64(bytes)/ref, flops/peak) / 1e9
	b.ReportMetric(roof/step1, "roof-fraction")
}

// BenchmarkDecodeKernels times the row path's kernels alone over the K and
// V of gqa-4k (32 query heads on 8 KV heads, 4096 keys, d = 128): for
// each KV head, each tile of 512 keys scored for its group's four query
// rows (scoreRowsMulti) and blended (blendRowsMulti, asking for the next
// tile's value rows as tileRows has it do), with the scores as weights
// and no softmax between. It reports what BenchmarkDecode does, so the
// two set side by side show what the engine adds to its kernels' reading
// and arithmetic: where the step runs at about this rate, a faster step
// needs kernels that stream faster, not less bookkeeping.
func BenchmarkDecodeKernels(b *testing.B) {
	const rows, tile = 4, 512
	s := decodeShapes[0]
	if s.name != "gqa-4k" || s.kvHeads*rows != s.heads {
		b.Fatalf("decodeShapes[0] is %s, not gqa-4k", s.name)
	}
	var p *decodeProblem
	testutil.ForEachImplB(b, func(b *testing.B) {
		if p == nil {
			p = newDecodeProblem(b, s)
		}
		sc, acc := make([]float32, rows*tile), make([]float32, rows*decodeDim)
		step := func() error {
			for h := range s.kvHeads {
				q := p.q.data[h*rows*decodeDim:][:rows*decodeDim] // the group's rows, packed
				for j := 0; j < s.Tk; j += tile {
					var next []float32
					if j+tile < s.Tk {
						next = p.v.rowsFrom(0, h, j+tile)
					}
					kernel.ScoreRowsMulti(sc, p.k.rowsFrom(0, h, j), decodeDim, q, rows)
					kernel.BlendRowsMulti(acc, sc, p.v.rowsFrom(0, h, j), decodeDim, rows, next)
				}
			}
			return nil
		}
		benchStep(b, step, p.kv, p.kvBytes(), p.flops(), 1)
	})
}

// BenchmarkDecodeGap times decode steps as a model's layer loop makes
// them: between two steps the caller's goroutine is busy for gap (its
// projections and MLP, say), so that the idle workers' spin runs out and
// they park, and each step's helpers must be woken. With wake the caller
// calls Batched.Wake as the gap begins. ns/op is the step alone (the gap
// is outside the timer); set against BenchmarkDecode's back-to-back steps
// it is the cost of waking the workers.
func BenchmarkDecodeGap(b *testing.B) {
	const gap = 300 * time.Microsecond
	for _, name := range []string{"gqa-512", "gqa-4k"} {
		var s decodeShape
		for _, x := range decodeShapes {
			if x.name == name {
				s = x
			}
		}
		p := newDecodeProblem(b, s)
		for _, workers := range []int{1, 2} {
			for _, wake := range []bool{false, true} {
				if workers == 1 && wake {
					continue // nothing to wake
				}
				b.Run(fmt.Sprintf("shape=%s/gap=%v/workers=%d/wake=%v", name, gap, workers, wake), func(b *testing.B) {
					e := NewBatched(workers)
					defer e.Close()
					dst := BatchOutputs{Out: p.out}
					if err := e.Attend(dst, p.q, p.k, p.v, &p.opt); err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						b.StopTimer()
						if wake {
							e.Wake()
						}
						for t0 := time.Now(); time.Since(t0) < gap; {
						}
						b.StartTimer()
						if err := e.Attend(dst, p.q, p.k, p.v, &p.opt); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkDecodeCache times the decode step of BenchmarkDecode over a
// KVCache of each element type, with AttendCache: a 16-bit cache holds
// half the bytes, and GB/s, read-GB/s and read-fraction count the bytes
// as stored (a read of the 16-bit rows is of those bytes too).
func BenchmarkDecodeCache(b *testing.B) {
	problems := map[string]*cacheDecode{} // shared by the implementations
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, s := range cacheDecodeShapes {
			for _, typ := range kvTypes {
				name := fmt.Sprintf("shape=%s/type=%v", s.name, typ)
				b.Run(name, func(b *testing.B) {
					p := problems[name]
					if p == nil {
						p = newCacheDecode(b, s, typ)
						problems[name] = p
					}
					for _, workers := range []int{1, 2} {
						b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
							e := NewBatched(workers)
							defer e.Close()
							dst := BatchOutputs{Out: p.out}
							benchStep(b, func() error { return e.AttendCache(dst, p.q, p.cache, &p.opt) }, p.kv, p.bytes, p.flops(), workers)
						})
					}
				})
			}
		}
	})
}

var cacheDecodeShapes = []decodeShape{
	{name: "gqa-4k", heads: 32, kvHeads: 8, Tq: 1, Tk: 4096},   // f32 K+V 32 MiB
	{name: "gqa-32k", heads: 32, kvHeads: 8, Tq: 1, Tk: 32768}, // 256 MiB
	{name: "verify-4k", heads: 32, kvHeads: 8, Tq: 4, Tk: 4096, causal: true},
	{name: "mqa-32k", heads: 8, kvHeads: 1, Tq: 1, Tk: 32768}, // eight query heads a group; f32 K+V 32 MiB
	{name: "mha-16k", heads: 8, kvHeads: 8, Tq: 1, Tk: 16384}, // no grouping; f32 K+V 128 MiB, from DRAM
	{name: "gqa2-4k", heads: 16, kvHeads: 8, Tq: 1, Tk: 4096}, // two query heads a group (Gemma 2)
	{name: "gqa3-4k", heads: 24, kvHeads: 8, Tq: 1, Tk: 4096}, // three (Llama 3.2 3B)
	{name: "gqa7-8k", heads: 28, kvHeads: 4, Tq: 1, Tk: 8192}, // seven query heads a group (Qwen 2.5 7B): the wide row kernels
}

// cacheDecode is a decode step over a full cache; kv views its stored
// rows as float32s, for the read they are set against.
type cacheDecode struct {
	decodeShape
	cache  *KVCache
	q, out Tensor
	kv     [][]float32
	bytes  int
	opt    BatchOptions
}

func newCacheDecode(b *testing.B, s decodeShape, typ KVType) *cacheDecode {
	r, d := testutil.Rand(12), s.dim()
	c, err := NewKVCache(1, s.kvHeads, s.Tk, d, d, typ)
	if err != nil {
		b.Fatal(err)
	}
	const chunk = 256
	for j := 0; j < s.Tk; j += chunk {
		n := min(chunk, s.Tk-j)
		if err := c.Append(0, testutil.Floats(r, s.kvHeads*n*d, 1), testutil.Floats(r, s.kvHeads*n*d, 1), n); err != nil {
			b.Fatal(err)
		}
	}
	p := &cacheDecode{decodeShape: s, cache: c, opt: BatchOptions{Causal: s.causal}}
	mk := func(data []float32) Tensor {
		t, err := NewTensor(1, s.heads, s.Tq, d, data)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	p.q = mk(testutil.Floats(r, s.heads*s.Tq*d, 1))
	p.out = mk(make([]float32, s.heads*s.Tq*d))
	for h := range s.kvHeads {
		switch typ {
		case F32:
			p.kv = append(p.kv, c.keys32(0, h), c.values32(0, h))
		case I8:
			p.kv = append(p.kv, asFloats8(c.keys8(0, h)), asFloats8(c.values8(0, h)))
		default:
			p.kv = append(p.kv, asFloats(c.keys16(0, h)), asFloats(c.values16(0, h)))
		}
	}
	for _, x := range p.kv {
		p.bytes += 4 * len(x)
	}
	return p
}

// asFloats views the bytes of x (an even number of elements, from a
// make'd slice, so aligned) as float32s, for a read of those bytes.
func asFloats(x []uint16) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), len(x)/2)
}

// asFloats8 is asFloats for int8 rows (their scales counted among the
// bytes; a whole number of floats when d is a multiple of 4).
func asFloats8(x []int8) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), len(x)/4)
}

// BenchmarkPrefillCache times a prefill (8 heads × 512 query rows × 512
// keys × d = 64, one key/value head per query head) over a cache of each
// type, beside the same call of Attend over float32 tensors: the block
// path, which widens each head's 16-bit rows once per worker (see
// wideHead) for its lanes.
func BenchmarkPrefillCache(b *testing.B) {
	const heads, T, d = 8, 512, 64
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, causal := range []bool{false, true} {
			for _, typ := range append(slices.Clone(kvTypes), kvTensors) {
				name := fmt.Sprintf("causal=%v/type=%v", causal, typ)
				if typ == kvTensors {
					name = fmt.Sprintf("causal=%v/type=tensors", causal)
				}
				b.Run(name, func(b *testing.B) {
					r := testutil.Rand(13)
					q := tensor(b, r, 1, heads, T, d, false, 1)
					k := tensor(b, r, 1, heads, T, d, false, 1)
					v := tensor(b, r, 1, heads, T, d, false, 1)
					out := tensor(b, r, 1, heads, T, d, false, 1)
					opt := &BatchOptions{Causal: causal}
					e := NewBatched(1)
					defer e.Close()
					step := func() error { return e.Attend(BatchOutputs{Out: out}, q, k, v, opt) }
					if typ != kvTensors {
						c, err := NewKVCache(1, heads, T, d, d, typ)
						if err != nil {
							b.Fatal(err)
						}
						if err := c.AppendTensor(0, k, v); err != nil {
							b.Fatal(err)
						}
						step = func() error { return e.AttendCache(BatchOutputs{Out: out}, q, c, opt) }
					}
					if err := step(); err != nil {
						b.Fatal(err)
					}
					pairs := heads * T * T
					if causal {
						pairs = heads * T * (T + 1) / 2
					}
					b.ReportAllocs()
					for b.Loop() {
						step()
					}
					testutil.Report(b, float64(4*pairs*d), 0)
				})
			}
		}
	})
}

// kvTensors stands, in BenchmarkPrefillCache, for Attend over tensors.
const kvTensors KVType = 255
