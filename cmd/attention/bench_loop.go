package main

import (
	"fmt"
	"time"

	"github.com/glancelab/attention"
)

// loopLayer is the stand-in for a decoder layer's other work in the loop
// cases: the matrix–vector products of its projections and MLP over
// float32 weights of a layer's size (4096 columns, 64 MiB: more than the
// L3, as a model's weights are), read row after row from where the last
// gap stopped. It is BenchmarkDecodeLoop's loopLayer.
type loopLayer struct {
	w    []float32 // loopRows rows of loopCols
	x, y []float32
	row  int
}

const loopCols, loopRows = 4096, 4096

// work runs the product's rows, sixteen at a time, for at least gap.
func (l *loopLayer) work(gap time.Duration) {
	for t0 := time.Now(); time.Since(t0) < gap; {
		for range 16 {
			l.y[l.row] = attention.Dot(l.w[l.row*loopCols:(l.row+1)*loopCols], l.x)
			l.row = (l.row + 1) % loopRows
		}
	}
}

// loopDecode is one decode step of the loop cases: the query, the output
// and a bf16 KVCache, shared by the cases of every gap and worker count
// (AttendCache only reads the cache).
type loopDecode struct {
	cache  *attention.KVCache
	q, out attention.Tensor
}

// loopState builds what the loop cases share on first use, once for
// every implementation, so that listing the cases costs nothing.
type loopState struct {
	fill    func(int) []float32
	layer   *loopLayer
	decodes map[int]*loopDecode  // by keys
	bufs    map[int][2][]float32 // by keys: K and V for the limit's read, as many bytes as the cache's
}

const loopD, loopHeads, loopKVHeads = 128, 32, 8

func (s *loopState) layerOf() *loopLayer {
	if s.layer == nil {
		s.layer = &loopLayer{w: s.fill(loopRows * loopCols), x: s.fill(loopCols), y: make([]float32, loopRows)}
	}
	return s.layer
}

func (s *loopState) decodeOf(keys int) (*loopDecode, error) {
	if p := s.decodes[keys]; p != nil {
		return p, nil
	}
	c, err := attention.NewKVCache(1, loopKVHeads, keys, loopD, loopD, attention.BF16)
	if err != nil {
		return nil, err
	}
	const chunk = 256
	for j := 0; j < keys; j += chunk {
		n := min(chunk, keys-j)
		if err := c.Append(0, s.fill(loopKVHeads*n*loopD), s.fill(loopKVHeads*n*loopD), n); err != nil {
			return nil, err
		}
	}
	p := &loopDecode{cache: c}
	if p.q, err = attention.NewTensor(1, loopHeads, 1, loopD, s.fill(loopHeads*loopD)); err != nil {
		return nil, err
	}
	p.out, _ = attention.NewTensor(1, loopHeads, 1, loopD, make([]float32, loopHeads*loopD))
	s.decodes[keys] = p
	return p, nil
}

// loopGaps are the other work before each call, BenchmarkDecodeLoop's:
// none, 0.3 ms and 2 ms; --quick runs 0.3 ms alone.
func loopGaps(quick bool) []time.Duration {
	if quick {
		return []time.Duration{300 * time.Microsecond}
	}
	return []time.Duration{0, 300 * time.Microsecond, 2 * time.Millisecond, 10 * time.Millisecond}
}

// loopCases are the grouped-query decode step of cacheCases (32 query
// heads on 8, d = 128) over a bf16 KVCache of 1024 and 4096 keys as a
// model's loop makes it, on 1 and all workers: each call after gap of the
// layer's other work on the calling goroutine (loopLayer; gap=0s calls
// back to back). timeCase times attention's calls alone, one by one, the
// gap outside the timing, and takes the median call, as
// BenchmarkDecodeLoop does. The limit is the plain decode step's
// (cacheCases): a read of the cache's bytes (buffers of that size made for
// the case, split between the workers), or the FMA peak where the step's
// FLOPs at that read's bandwidth would pass it. Read over and over, those
// bytes stay in the caches, where the layer's 64 MiB of weights push the
// cache's own out between two calls, so the fraction falls with the gap by
// what the other work costs the step. Set workers=all against workers=1 at
// the same gap (speedup_vs_one_worker): the default engine should never be
// the slower.
func loopCases(workers []int, quick bool, fill func(int) []float32) []benchCase {
	st := &loopState{fill: fill, decodes: map[int]*loopDecode{}, bufs: map[int][2][]float32{}}
	var cs []benchCase
	for _, keys := range []int{1024, 4096} {
		kvBytes := 2 * attention.BF16.Size() * loopKVHeads * keys * loopD
		for _, gap := range loopGaps(quick) {
			for _, w := range workers {
				cs = append(cs, benchCase{
					group: "loop", name: "AttendCache",
					shape: fmt.Sprintf("decode loop gqa-%dk bf16 cache %d/%d×1×%d×%d gap=%v workers=%d", keys/1024, loopHeads, loopKVHeads, keys, loopD, gap, w),
					t:     keys, d: loopD, heads: loopHeads, workers: w,
					flops: 4 * float64(loopHeads*keys*loopD), bytes: float64(kvBytes), ws: kvBytes / w, ownRead: true,
					reads: func() [][][]float32 { return st.reads(keys, w) },
					gap:   func() { st.layerOf().work(gap) },
					setup: func() (func() error, func(), error) { return st.setup(keys, w) },
				})
			}
		}
	}
	return cs
}

// reads returns the limit's buffers for keys keys on w threads: thread i
// reads the i-th of w parts of K, then of V.
func (s *loopState) reads(keys, w int) [][][]float32 {
	kv, ok := s.bufs[keys]
	if !ok {
		n := attention.BF16.Size() * loopKVHeads * keys * loopD / 4 // K's bytes in floats
		kv = [2][]float32{s.fill(n), s.fill(n)}
		s.bufs[keys] = kv
	}
	sets := make([][][]float32, w)
	for _, x := range kv {
		for i := range sets {
			sets[i] = append(sets[i], x[i*len(x)/w:(i+1)*len(x)/w])
		}
	}
	return sets
}

// setup builds the layer and the step of keys keys on a new engine of w
// workers.
func (s *loopState) setup(keys, w int) (func() error, func(), error) {
	s.layerOf()
	p, err := s.decodeOf(keys)
	if err != nil {
		return nil, nil, err
	}
	e := attention.NewBatched(w)
	dst := attention.BatchOutputs{Out: p.out}
	return func() error { return e.AttendCache(dst, p.q, p.cache, nil) }, e.Close, nil
}
