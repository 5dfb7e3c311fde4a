package attention

// AttendCache is Attend with the keys and values a KVCache holds: entry b
// attends its Len(b) held rows, oldest first, read in place in the type
// they are stored in (16-bit rows are widened in registers, or for the
// block kernels into a worker's scratch, a head that fits 512 KiB as
// float32 at a time, else a few rows: never the whole cache), so an f16 or
// bf16 cache costs half the bytes of a float32 one to read.
//
// The call is Attend(dst, q, K, V, opt) for K and V of Tk = the largest
// Len(b) rows, key j of entry b being its held row j (position
// Pos(b)−Len(b)+j), with ValidLen[b] = Len(b) and CausalToValidLen: the
// Tq query rows are the entry's last Tq positions, Pos(b)−Tq to Pos(b)−1,
// so their rows are appended before the call, and query i's causal
// frontier is key Len(b)−Tq+i (+ CausalShift). Every other option keeps
// its meaning, with Tk as above for the shapes of Keep, Bias, Weights and
// Logits; Window, ALiBi and Sinks count in these keys, which in a ring
// are the last Len(b) positions. Shapes: q [B][H][Tq][dk] and
// dst.Out [B][H][Tq][dv] for a cache of B entries, Hkv heads (H a
// multiple of them), dk and dv. opt.ValidLen must be nil: the cache's
// lengths are the valid lengths (ErrArgument otherwise). A nil cache is
// ErrArgument.
//
// Results are within the bounds of Attend for the values as stored: the
// rounding to 16 bits happened in Append (see KVCache). For a float32
// cache whose rows do not wrap they are the bits of Attend over tensors
// holding the same rows; a ring whose held rows wrap at its capacity cuts
// the tiles there, so its last bits may differ.
//
// The cache must not be appended to, truncated or reset during the call.
func (e *Batched) AttendCache(dst BatchOutputs, q Tensor, c *KVCache, opt *BatchOptions) error {
	const op = "Batched.AttendCache"
	if opt == nil {
		opt = &noOptions
	}
	if c == nil {
		return argErr(op, "nil cache")
	}
	if opt.ValidLen != nil {
		return argErr(op, "ValidLen is set: the cache's lengths are the valid lengths")
	}
	if err := c.checkQuery(op, dst.Out, q); err != nil {
		return err
	}
	k, v := c.shapes()
	if err := checkBatch(op, &dst, q, k, v, opt); err != nil {
		return err
	}
	if err := e.attend(planBatch(dst, q, k, v, opt, keySource{c.n, true, c})); err != nil {
		return err
	}
	c.scaleChannels(dst.Out)
	return nil
}

// checkQuery matches q and out against the cache. The cache's shape is
// not the caller's to get wrong in this call, so a mismatch names q or
// out (checkBatch, which matches k and v against q, would name them).
func (c *KVCache) checkQuery(op string, out, q Tensor) error {
	switch B, H, _, dk := q.Shape(); {
	case B != c.batch:
		return shapeErr(op, "q batch", B, c.batch, "cache entries")
	case dk != c.dk:
		return shapeErr(op, "q dim", dk, c.dk, "cache key dimension")
	case c.heads == 0 && H > 0, c.heads > 0 && H%c.heads != 0:
		return shapeErr(op, "q heads", H, c.heads, "a multiple of the cache's KV heads")
	case out.cols != c.dv:
		return shapeErr(op, "out dim", out.cols, c.dv, "cache value dimension")
	}
	return nil
}

// shapes returns views of the shapes of the keys and values a call of
// AttendCache reads: B entries of Hkv heads of Tk = the largest Len rows,
// packed, without data (the engine reads the rows from the cache); their
// row strides are the stored rows' (an I8 row holds its scale too).
func (c *KVCache) shapes() (k, v Tensor) {
	Tk := 0
	for _, n := range c.n {
		Tk = max(Tk, n)
	}
	k = Tensor{batch: c.batch, heads: c.heads, rows: Tk, cols: c.dk, bs: c.entryK, hs: c.headK, rs: c.rk}
	v = Tensor{batch: c.batch, heads: c.heads, rows: Tk, cols: c.dv, bs: c.entryV, hs: c.headV, rs: c.rv}
	return k, v
}
