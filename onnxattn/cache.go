package onnxattn

import (
	"errors"
	"fmt"

	"github.com/glancelab/attention"
)

// RunCache is Run for a node whose past lives in c, an
// [attention.KVCache] the caller keeps across calls (a decode loop),
// instead of in past_key/past_value tensors: K and V are appended to c
// (entry b of the cache is batch entry b) and the engine attends over the
// rows c then holds, read in place in c's type (see
// [attention.Batched.AttendCache]). Nothing grows with the past: Run
// concatenates the whole past with the new rows into
// present_key/present_value every call and widens a float16 past, where
// RunCache converts only the kv_sequence_length new rows (float16 K and V
// are widened, then stored in c's type) and allocates only the outputs, a
// float16 Q widened, and the bias of a mask that is bool, float16 or
// short.
//
// The result is Run's for past_key/past_value holding the rows c holds
// (its float32 values, widened if c is [attention.F16] or
// [attention.BF16]), with present_key and present_value the rows c holds
// afterwards: the past length P is c.Len(b), which must be the same for
// every entry ([attention.ErrArgument] otherwise; 0 for a batch of 0), the
// causal offset is P, and attn_mask covers P + kv_sequence_length columns.
// An [attention.F32] cache, or an F16 one for float16 inputs, stores K and
// V exactly; an F16 or BF16 cache for float32 inputs rounds them as it
// stores them, so the past of later calls is the rounded rows. The outputs
// are within Run's bounds of those values; with an F32 cache whose rows do
// not wrap (not a ring), Y and qk_matmul_output are Run's bits.
//
// Arguments: c must not be nil; past_key, past_value and nonpad_kv_seqlen
// must be absent (the specification does not combine nonpad_kv_seqlen,
// for a cache kept outside the operator, with a past) and want.Present
// false: present_key and present_value are c itself, which the caller
// reads with [attention.KVCache.Key], [attention.KVCache.Value],
// [attention.KVCache.Len] and [attention.KVCache.Pos]. All these are
// attention.ErrArgument. A cache whose batch, KV heads or head sizes do
// not match K and V is a *ShapeError naming K or V; a ShapeError about
// the past length names "cache" with the shape of its held keys, [batch,
// kv_num_heads, P, head_size]. Every check comes before c changes. A cache
// without room for the kv_sequence_length new rows returns the
// [attention.ErrCapacity] of [attention.KVCache.Append] (a ring too: one
// that would overwrite rows of the past is refused). A failed call leaves
// c as it was: rows appended before an error of the engine
// ([attention.ErrClosed]) are truncated away.
//
// c must not be used by anything else during the call.
func RunCache(e *attention.Batched, c *attention.KVCache, a Attributes, in Inputs, want Want) (Outputs, error) {
	switch {
	case c == nil:
		return Outputs{}, argErr("RunCache needs a KV cache")
	case in.PastKey != nil || in.PastValue != nil:
		return Outputs{}, argErr("past_key and past_value are given: with RunCache the past is the rows the cache holds")
	case want.Present:
		return Outputs{}, argErr("present_key and present_value are wanted: with RunCache they are the cache itself, read them from it")
	case in.NonpadKVSeqlen != nil:
		return Outputs{}, argErr("nonpad_kv_seqlen is given: it is for a cache kept outside the operator, not with a past")
	}
	d, err := check(a, in, want, c)
	if err != nil {
		return Outputs{}, err
	}
	cl := &call{a: a, in: in, d: d, cache: c}
	if err := cl.viewInputs(); err != nil {
		return Outputs{}, err
	}
	if err := cl.appendCache(); err != nil {
		return Outputs{}, err
	}
	var out Outputs
	if err := cl.results(e, &out, want.QKMatmulOutput); err != nil {
		cl.unappend(d.B)
		return Outputs{}, err
	}
	return out, nil
}

// checkCache checks the cache against K and V and records the past
// length, the rows every entry holds.
func (d *dims) checkCache(in Inputs, c *attention.KVCache) error {
	batch, heads, _, dk, dv := c.Shape()
	if batch != d.B || heads != d.Hkv || dk != d.D {
		return shapeErr("K", in.K.Shape, "batch %d, kv_num_heads %d and head_size %d like the KV cache (K has %d, %d and %d)",
			batch, heads, dk, d.B, d.Hkv, d.D)
	}
	if dv != d.Dv {
		return shapeErr("V", in.V.Shape, "v_head_size %d like the KV cache (V has %d)", dv, d.Dv)
	}
	d.cached = true
	for b := range batch {
		if n := c.Len(b); b == 0 {
			d.P = n
		} else if n != d.P {
			return argErr("the KV cache's entry 0 holds %d rows and entry %d %d: the past has one length for the batch", d.P, b, n)
		}
	}
	return nil
}

// appendCache appends the new rows of every batch entry to the cache, as
// strided views of K and V. On a failure it truncates away the rows it
// appended, so the cache is as it was.
func (c *call) appendCache() error {
	d, kv := c.d, c.cache
	_, _, capacity, _, _ := kv.Shape()
	if kv.Ring() && d.Skv > capacity-d.P {
		// Append would overwrite rows of the past, which the call attends.
		return fmt.Errorf("%w: onnxattn: the ring cache holds %d of %d rows: %d more would overwrite the past", attention.ErrCapacity, d.P, capacity, d.Skv)
	}
	// Both layouts hold an entry's rows in Skv·Hkv·head_size elements,
	// which fit (K and V do).
	nk, _ := count(d.Skv, d.Hkv, d.D)
	nv, _ := count(d.Skv, d.Hkv, d.Dv)
	for b := range d.B {
		kt, err := view(c.kf[b*nk:], d.threeD, 1, d.Hkv, d.Skv, d.D)
		if err != nil {
			c.unappend(b)
			return viewErr(err, "K", c.in.K)
		}
		vt, err := view(c.vf[b*nv:], d.threeD, 1, d.Hkv, d.Skv, d.Dv)
		if err != nil {
			c.unappend(b)
			return viewErr(err, "V", c.in.V)
		}
		if err := kv.AppendTensor(b, kt, vt); err != nil {
			c.unappend(b)
			if errors.Is(err, attention.ErrShape) { // the checks match the shapes
				return viewErr(err, "K", c.in.K)
			}
			return err // ErrCapacity, or ErrArgument for a position that would overflow
		}
	}
	return nil
}

// unappend truncates entries 0 to n−1 back to before the rows the call
// appended. No row of the past was overwritten (appendCache refuses that
// for a ring), so the cache is as it was.
func (c *call) unappend(n int) {
	for b := range n {
		_ = c.cache.Truncate(b, c.cache.Pos(b)-c.d.Skv)
	}
}
