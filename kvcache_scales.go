package attention

import (
	"math"

	"github.com/glancelab/attention/internal/kernel"
)

// WithScales makes an I8 cache quantise with static scales instead of a
// scale per row: ONNX Runtime's int8 KV cache (GroupQueryAttention with
// kv_cache_bit_width 8 and k_quant_type, v_quant_type PER_TENSOR or
// PER_CHANNEL), so that a cache it wrote can be read exactly and decoding
// can go on from it with the same numbers. k and v hold one scale for
// every element (per tensor), or kvHeads·dk and kvHeads·dv scales, head
// h's at [h·dk, (h+1)·dk) (per channel): ONNX Runtime's k_scale and
// v_scale. The cache copies them.
//
// Stored element x is then the integer nearest x/s (ties to even),
// clamped to [−128, 127], s its scale; it stands for that integer times
// s. The key rows are not rotated (the scales are for the rows as they
// are), and as for every I8 row, a row with a NaN or an infinity is stored
// as NaN (ONNX Runtime would clamp an infinity). Rows already quantised go
// in with AppendI8. Per-channel key scales are folded into the queries and
// per-channel value scales into the outputs, as ONNX Runtime's own kernels
// do: a result is within the float32 bounds for the rows as stored. An
// element whose x/s lies in [−128.5, 127.5] is stored within s/2 of x, and
// the bound KVCache states holds with that error; one beyond is clamped,
// as ONNX Runtime clamps it, and errs by what the clamp takes (static
// scales are the caller's to fit the rows).
//
// Scales must be finite and positive, and only an I8 cache takes them: a
// wrong count, a scale that is not, or another type is ErrArgument from
// NewKVCache.
func WithScales(k, v []float32) KVCacheOption {
	return KVCacheOption{scales: true, ks: k, vs: v}
}

// Scaled reports whether the cache was made WithScales.
func (c *KVCache) Scaled() bool { return c.ks != nil }

// checkScales checks the static scales of option o for a cache of typ
// with kvHeads heads of rows of dk and dv elements.
func checkScales(op string, typ KVType, heads, dk, dv int, o KVCacheOption) error {
	if typ != I8 {
		return argErr(op, "static scales for a %v cache: only an I8 cache takes them", typ)
	}
	for _, s := range []struct {
		x    []float32
		name string
		d    int
	}{{o.ks, "key", dk}, {o.vs, "value", dv}} {
		if n := len(s.x); n != 1 && n != elems(heads, s.d) {
			return argErr(op, "%d %s scales: want 1 (per tensor) or kvHeads·d = %d (per channel)", n, s.name, heads*s.d)
		}
		for i, x := range s.x {
			if !(x > 0 && x <= math.MaxFloat32) {
				return argErr(op, "%s scale %d is %v: scales must be finite and positive", s.name, i, x)
			}
		}
	}
	return nil
}

// staticScales returns the static scales of head h's rows of keys or
// values: the one scale, or 1 and the head's per-channel scales.
func (c *KVCache) staticScales(key bool, h int) (float32, []float32) {
	s, d := c.vs, c.dv
	if key {
		s, d = c.ks, c.dk
	}
	if len(s) == 1 {
		return s[0], nil
	}
	return 1, s[h*d : (h+1)*d]
}

// channelKeys returns the per-channel key scales of KV head h (nil if the
// keys have none, or no element): the engine multiplies the queries by
// them. One scale is per tensor, even where the heads have one element
// between them.
func (c *KVCache) channelKeys(h int) []float32 {
	if len(c.ks) <= 1 {
		return nil
	}
	return c.ks[h*c.dk : (h+1)*c.dk]
}

// channelValues is channelKeys for the values: the engine multiplies the
// outputs by them.
func (c *KVCache) channelValues(h int) []float32 {
	if len(c.vs) <= 1 {
		return nil
	}
	return c.vs[h*c.dv : (h+1)*c.dv]
}

// AppendI8 is Append for rows already quantised with the static scales of
// a cache made WithScales: k holds them as [kvHeads][rows][dk] (len
// kvHeads·rows·dk), v as [kvHeads][rows][dv], each element standing for
// itself times its scale. That is the layout of one batch entry of ONNX
// Runtime's int8 present_key and present_value ([batch][kvHeads][seq][d]),
// whose first seqlens_k+1 rows an entry holds. The rows are stored as
// they are. A cache without static scales is ErrArgument; lengths,
// capacity and b are checked as by Append, and a failed AppendI8 changes
// nothing.
func (c *KVCache) AppendI8(b int, k, v []int8, rows int) error {
	const op = "KVCache.AppendI8"
	if c.ks == nil {
		return argErr(op, "the cache has no static scales (WithScales): its rows' scales are their own")
	}
	if err := c.checkRowsLen(op, len(k), len(v), rows); err != nil {
		return err
	}
	return c.appendRows(op, b, rows, func(h, i, ko, vo, n int) {
		ks, _ := c.staticScales(true, h)
		vs, _ := c.staticScales(false, h)
		for r := range n {
			kr := c.k8[ko+r*c.rk:][:c.rk]
			vr := c.v8[vo+r*c.rv:][:c.rv]
			kernel.PutScaleI8(kr, ks)
			kernel.PutScaleI8(vr, vs)
			copy(kr[4:], k[(h*rows+i+r)*c.dk:][:c.dk])
			copy(vr[4:], v[(h*rows+i+r)*c.dv:][:c.dv])
		}
	})
}

// mulChannels multiplies element c of each of the lanes rows of x, laid
// out column by column (x[c·lanes+r] is row r's element c), by s[c]: the
// per-channel key scales folded into a query, or a block's lanes.
func mulChannels(x, s []float32, lanes int) {
	for c, f := range s {
		for r := range lanes {
			x[c*lanes+r] *= f
		}
	}
}

// scaleChannels multiplies each row of out (query heads of group KV heads
// each) by its KV head's per-channel value scales, if the cache has them.
func (c *KVCache) scaleChannels(out Tensor) {
	if len(c.vs) <= 1 || out.data == nil {
		return
	}
	B, H, T, d := out.Shape()
	group := H / c.heads
	for b := range B {
		for h := range H {
			s := c.channelValues(h / group)
			for i := range T {
				mulChannels(out.Row(b, h, i)[:d], s, 1)
			}
		}
	}
}
