package attention

// WithStorage16 makes an F16 or BF16 cache keep its rows in k and v, the
// caller's slices, instead of its own: batch·kvHeads·capacity·dk and
// ·dv elements, laid out as the cache lays its rows out (see KVCache:
// [batch][kvHeads][capacity][d], the layout of ONNX Runtime's present_key
// and present_value), so that rows another program stored there are read
// in place, without a copy (Hold makes an entry hold them). Append writes
// into them. Other lengths, another type, or WithRing are ErrArgument.
// While the cache is in use the caller must not write the rows it holds,
// nor pass them as an output of a call that reads the cache.
func WithStorage16(k, v []uint16) KVCacheOption {
	return KVCacheOption{storage: true, k16: k, v16: v}
}

// checkStorage checks o's storage against a cache of typ with nk and nv
// stored elements.
func checkStorage(op string, typ KVType, nk, nv int, o KVCacheOption) error {
	switch {
	case typ != F16 && typ != BF16:
		return argErr(op, "WithStorage16 needs an F16 or BF16 cache, not %v", typ)
	case o.ring:
		return argErr(op, "WithStorage16 with WithRing")
	case len(o.k16) != nk:
		return argErr(op, "WithStorage16: len(k) = %d, want batch·kvHeads·capacity·dk = %d", len(o.k16), nk)
	case len(o.v16) != nv:
		return argErr(op, "WithStorage16: len(v) = %d, want batch·kvHeads·capacity·dv = %d", len(o.v16), nv)
	}
	return nil
}

// Hold makes entry b of a cache made WithStorage16 hold n more rows: the
// rows its storage has next, at positions Pos(b) to Pos(b)+n−1, as they
// are there (written by the caller). Len(b) and Pos(b) grow by n; nothing
// is written or converted. A negative n, more rows than the capacity
// leaves, an entry out of range, or a cache with its own storage is
// ErrArgument, and changes nothing.
func (c *KVCache) Hold(b, n int) error {
	const op = "KVCache.Hold"
	switch {
	case !c.external:
		return argErr(op, "the cache keeps its own rows (Hold is for WithStorage16)")
	case b < 0 || b >= c.batch:
		return argErr(op, "entry %d of %d", b, c.batch)
	case n < 0 || n > c.capacity-c.n[b]:
		return argErr(op, "%d rows: entry %d holds %d of %d", n, b, c.n[b], c.capacity)
	}
	c.n[b] += n
	c.pos[b] += n
	return nil
}
