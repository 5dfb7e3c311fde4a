package onnxattn

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/impl"
)

// FuzzRunCache decodes a call as FuzzRun does (see decodeRun), with
// past_key/past_value forced on and nonpad_kv_seqlen and present_key/
// present_value off, and runs it through Run and, with the past in a
// cache, through RunCache. The length of the bytes picks the cache: F32,
// F16 (for float16 inputs; else F32), an F32 ring, or an F32 cache
// without room for the new rows. Pasts that do not make a small cache
// (wrong ranks, types or lengths, or more than 2^20 elements) are not run
// through RunCache. It fails on
//
//   - a panic;
//   - an error of RunCache that is neither a *ShapeError naming an input
//     (or the cache) by its shape nor one wrapping attention.ErrArgument
//     or, for a cache without room, attention.ErrCapacity;
//   - a failed RunCache that changed the cache;
//   - a call Run accepts and RunCache, with room in the cache, refuses
//     (but for a batch of 0, whose cache holds no past);
//   - then, with an F32 cache, Y or qk_matmul_output other than Run's
//     bits, and with any cache, rows held other than present_key and
//     present_value.
func FuzzRunCache(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	shared := attention.NewBatched(2)
	f.Cleanup(shared.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		b := append(slices.Clone(data), 0, 0)[:max(2, len(data))]
		b[0] = b[0]&^64 | 8 // past_key/past_value, no nonpad_kv_seqlen
		b[1] &^= 4          // no present_key/present_value
		c := decodeRun(b)
		if c.tooBig() {
			return
		}
		names := impl.List()
		impl.Select(names[c.impl%len(names)])
		defer impl.Reset()
		e := shared
		if c.nilEngine {
			e = nil
		}
		want := c.want
		want.Present = true
		ref, refErr := Run(e, c.a, c.in, want)
		kind := len(data) % 4
		cache, Skv := fuzzCache(t, c, kind)
		if cache == nil {
			return
		}
		before := stateOf(cache)
		out, err := RunCache(e, cache, c.a, withoutPast(c.in), c.want)
		if err != nil {
			checkCacheRefusal(t, c, cache, err, kind == 3 && Skv > 0)
			if !stateOf(cache).equal(before) {
				t.Fatalf("%v: the failed call (%v) changed the cache", c, err)
			}
		}
		switch {
		case refErr != nil, c.in.PastKey.Shape[0] == 0:
			// A cache of no entries holds no rows, so its past is 0
			// rows whatever past_key said.
			return
		case kind == 3 && Skv > 0:
			if !errors.Is(err, attention.ErrCapacity) {
				t.Fatalf("%v: a cache without room: err = %v, want ErrCapacity", c, err)
			}
			return
		case err != nil:
			t.Fatalf("%v: Run accepts the call, RunCache refuses it: %v", c, err)
		}
		typ := cache.Type()
		if typ == attention.F32 && (!sameOrNaN(out.Y.Floats(), ref.Y.Floats()) ||
			c.want.QKMatmulOutput && !sameOrNaN(out.QKMatmulOutput.Floats(), ref.QKMatmulOutput.Floats())) {
			t.Fatalf("%v: RunCache's outputs are not Run's bits", c)
		}
		if !sameOrNaN(held(cache, false), ref.PresentKey.Floats()) || !sameOrNaN(held(cache, true), ref.PresentValue.Floats()) {
			t.Fatalf("%v: the %v cache does not hold present_key and present_value", c, typ)
		}
	})
}

// fuzzCache returns a cache of the kind the bytes chose (see FuzzRunCache)
// holding the past of c, and the new rows the call declares (K's
// sequence length); nil if the past does not make a small cache.
func fuzzCache(t *testing.T, c fuzzCase, kind int) (*attention.KVCache, int) {
	pk, pv, K := c.in.PastKey, c.in.PastValue, c.in.K
	if pk == nil || pv == nil || K == nil || len(pk.Shape) != 4 || len(pv.Shape) != 4 || len(K.Shape) < 3 {
		return nil, 0
	}
	if pk.DType != pv.DType || (pk.DType != Float32 && pk.DType != Float16) || pk.dataLen() != pk.Len() || pv.dataLen() != pv.Len() ||
		!slices.Equal(pk.Shape[:3], pv.Shape[:3]) {
		return nil, 0
	}
	Skv := K.Shape[len(K.Shape)-2]
	if len(K.Shape) == 3 {
		Skv = K.Shape[1]
	}
	extra := Skv
	if kind == 3 || Skv < 0 {
		extra = 0
	}
	n := 1.0
	for _, x := range []int{pk.Shape[0], pk.Shape[1], pk.Shape[2] + extra, pk.Shape[3] + pv.Shape[3] + 1} {
		if x < 0 {
			return nil, 0
		}
		n *= float64(max(1, x)) // the entries cost memory even without rows
	}
	if n > 1<<20 {
		return nil, 0
	}
	typ, opts := attention.F32, []attention.KVCacheOption(nil)
	switch {
	case kind == 1 && pk.DType == Float16:
		typ = attention.F16
	case kind == 2 && pk.Shape[2]+extra > 0:
		opts = append(opts, attention.WithRing())
	}
	return cacheFromPast(t, pk, pv, extra, typ, opts...), Skv
}

// checkCacheRefusal fails unless err is a *ShapeError naming an input of
// the call (or the cache, by its held keys) by its shape, wraps
// attention.ErrArgument, or, if full, attention.ErrCapacity.
func checkCacheRefusal(t *testing.T, c fuzzCase, cache *attention.KVCache, err error, full bool) {
	t.Helper()
	var se *ShapeError
	switch {
	case errors.As(err, &se) && se.Input == "cache":
		B, H, _, dk, _ := cache.Shape()
		if P := cache.Len(0); !slices.Equal(se.Shape, []int{B, H, P, dk}) {
			t.Fatalf("%v: %v names the cache as %v, not [%d %d %d %d]", c, err, se.Shape, B, H, P, dk)
		}
	case errors.As(err, &se):
		in := c.in
		in.PastKey, in.PastValue = nil, nil
		checkRefusal(t, fuzzCase{randomCase: randomCase{in: in}}, err)
	case errors.Is(err, attention.ErrArgument), full && errors.Is(err, attention.ErrCapacity):
	default:
		t.Fatalf("%v: error %v (%T) is neither a *ShapeError, an ErrArgument nor, for a full cache, ErrCapacity", c, err, err)
	}
}

// sameOrNaN reports whether two float slices hold the same bits, or NaN
// both (a 16-bit cache quiets a NaN as it stores it).
func sameOrNaN(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool {
		return math.Float32bits(x) == math.Float32bits(y) || x != x && y != y
	})
}
