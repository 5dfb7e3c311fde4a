// Package attention computes neural attention on the CPU in float32: it
// scores queries against keys, turns the scores into weights with a
// numerically stable softmax, and blends the values with those weights.
// Calls in a steady state allocate nothing (a Memory's when given a
// reused [Workspace]). There is one entry point per way a model calls
// attention; the paragraphs below say which to use.
//
// [Memory] is for a seq2seq decoder step (an RNN decoder, or
// cross-attention over an encoder's output): [NewMemory] takes one source
// sequence's keys and values as [Matrix] views and a [Scorer] (dot,
// scaled dot, general, additive or concat), precomputes what the scorer
// can from the keys once, and [Memory.Attend] then runs one decoder step,
// a query in and a context vector (and, if asked, the weights) out.
//
// [Memory.AttendMany] runs several queries against one Memory in a single
// pass over its keys and values. It is for beam search, whose hypotheses
// all attend to the same source: one pass per step instead of one per
// beam.
//
// [Batched] is for many queries at once: prompt prefill, encoders,
// batched requests. [Batched.Attend] computes scaled dot-product attention
// over [batch][heads][T][d] [Tensor] views on a pool of worker goroutines
// (or, made by [NewBatchedRunner], on the host's own), with grouped-query
// heads and the options of [BatchOptions]: causal, padding and
// sliding-window masks, bias, softcap, ALiBi and sinks.
//
// [KVCache] is for LLM decoding: it holds the keys and values of past
// tokens, as float32 or as 16-bit floats that halve the bytes a step
// reads, up to a capacity or as a ring for a sliding window. Each decode
// step appends its new rows with [KVCache.Append] and calls
// [Batched.AttendCache], which attends over the rows the cache holds, in
// place. [NewMemoryCache] makes a Memory over one entry and head of a
// KVCache, for a seq2seq decoder that keeps its encoder output there.
//
// [MergeAttention] combines two results over disjoint sets of keys, using
// the log-sum-exp [BatchOutputs] can return. It is for attention split
// into parts computed separately: the chunks of a long context, or a
// shared prefix and each request's own suffix.
//
// The float32 kernels the engine is built from are exported for code that
// needs them elsewhere: [Dot], [Axpy], [Exp] and [Softmax]. Each runs the
// fastest implementation the CPU supports: [Implementation] names the one
// in use, the environment variable ATTENTION_IMPL chooses another, and
// [ImplementationRequest] reports a value of it that was ignored.
//
// Package [github.com/glancelab/attention/onnxattn] runs the ONNX
// Attention operator on this engine, for ONNX runtimes: its inputs and
// outputs are ONNX tensors, and a KVCache can hold the past of a decode
// loop instead of past_key and past_value.
//
// Errors wrap one of [ErrShape] (a [*ShapeError] names the operand that
// does not fit), [ErrArgument], [ErrClosed] or [ErrCapacity], for
// errors.Is.
package attention

import (
	"math"
	"unsafe"

	"github.com/glancelab/attention/internal/kernel"
)

// The kernels are described once, in the table of internal/kernels; the
// code is generated from it in asm/, a separate module so that its
// dependencies (avo) never become ours: asm/amd64 is an avo program for
// AVX2+FMA, asm/arm64 our own NEON emitter, asm/dispatch writes the Go
// fronts that choose among the implementations.
//go:generate go run -C asm ./amd64 -out ../dot_amd64.s -stubs ../dot_amd64.go -pkg attention
//go:generate go run -C asm ./arm64 -out ../dot_arm64.s -stubs ../dot_arm64.go -pkg attention
//go:generate go run -C asm ./dispatch -dir ..

// Memory is the encoder side of attention for one source sequence of T
// states: keys (T×dk), values (T×dv), an optional keep-mask and valid
// length, and the scorer's encoder-side projections, computed once here.
//
// Keys and values are views, not copies: the caller must not change their
// data while the Memory is in use (NewMemoryCache makes a Memory over the
// rows a KVCache holds, read in place). A Memory is read-only after
// NewMemory, so any number of goroutines may call Attend on it at once,
// each with its own Workspace.
type Memory struct {
	scorer   Scorer
	keys     Matrix
	values   Matrix
	proj     []float32 // encoder-side projections: rows [0, valid) of projCols, masked rows unset
	projCols int
	keep     []bool     // nil: every key within valid is attended
	valid    int        // keys [valid, T) are masked
	dq       int        // query dimension
	scratch  int        // scorer workspace, in float32
	views    [5]operand // keys, values and the scorer's: what Attend must not write
	nviews   int        // the views with elements come first
	kv       *cacheHead // non-nil: keys and values are read from a cache's rows (keys and values give their shapes)
}

// An operand names a view a Memory reads, for Attend's overlap check.
type operand struct {
	name string
	m    Matrix
}

// A MemoryOption configures NewMemory or NewMemoryCache; WithKeepMask and
// WithValidLength make them. Options apply in order, a later one of a kind
// replacing an earlier one. The zero MemoryOption changes nothing.
type MemoryOption struct {
	keep              []bool
	valid             int
	setKeep, setValid bool // which of the settings the option makes
}

// WithKeepMask attends only to keys whose entry is true ("true = attend");
// the mask has one entry per key and is copied.
func WithKeepMask(keep []bool) MemoryOption {
	return MemoryOption{keep: keep, setKeep: true}
}

// WithValidLength attends only to the first n keys, as for a padded batch
// entry whose real length is n.
func WithValidLength(n int) MemoryOption {
	return MemoryOption{valid: n, setValid: true}
}

// mergeOptions returns the settings opts make, applied in order.
func mergeOptions(opts []MemoryOption) MemoryOption {
	var c MemoryOption
	for _, o := range opts {
		if o.setKeep {
			c.keep, c.setKeep = o.keep, true
		}
		if o.setValid {
			c.valid, c.setValid = o.valid, true
		}
	}
	return c
}

// NewMemory binds a scorer to one source sequence: keys has a row per
// encoder state (T×dk) and values the matching rows (T×dv). It checks every
// dimension, returning an error wrapping ErrShape or ErrArgument, and
// computes the scorer's encoder-side projections of the keys it may ever
// attend: those below the valid length and kept by the mask. It reads no
// other key, and no value.
//
// Keys of dimension 0 make every projection zero and every score the same,
// so nothing is stored per key; any number of rows of zero-width keys and
// values costs nothing. A projection too large for memory (T·d floats that
// overflow, or exceed what a Go heap can hold) is an error wrapping
// ErrArgument.
func NewMemory(scorer Scorer, keys, values Matrix, opts ...MemoryOption) (*Memory, error) {
	return newMemory("NewMemory", scorer, keys, values, memorySource{}, opts)
}

// memorySource says where a Memory's keys and values live: with cached,
// in a cache's storage, as views of it or with kv their shapes only, which
// are not views the caller can reach (Attend does not check them).
type memorySource struct {
	kv     *cacheHead
	cached bool
}

// newMemory is NewMemory, and with src.cached NewMemoryCache.
func newMemory(op string, scorer Scorer, keys, values Matrix, src memorySource, opts []MemoryOption) (*Memory, error) {
	kv, cached := src.kv, src.cached
	if scorer == nil {
		return nil, argErr(op, "nil Scorer")
	}
	if values.rows != keys.rows {
		return nil, shapeErr(op, "values.Rows", values.rows, keys.rows, "one value per key")
	}
	m := &Memory{scorer: scorer, keys: keys, values: values, valid: keys.rows, kv: kv}
	if err := m.setMask(op, mergeOptions(opts)); err != nil {
		return nil, err
	}
	dq, a, err := scorer.bind(op, keys)
	if err != nil {
		return nil, err
	}
	m.dq = dq
	if err := m.projectKeys(op, a); err != nil {
		return nil, err
	}
	m.scratch = scorer.scratch(m)
	m.setViews(cached)
	return m, nil
}

// setMask checks the valid length and keep-mask of cfg against the keys
// and sets them, the mask as a copy.
func (m *Memory) setMask(op string, cfg MemoryOption) error {
	T := m.keys.rows
	if cfg.setValid {
		if cfg.valid < 0 || cfg.valid > T {
			return argErr(op, "valid length %d outside [0, %d]", cfg.valid, T)
		}
		m.valid = cfg.valid
	}
	if cfg.keep != nil {
		if len(cfg.keep) != T {
			return shapeErr(op, "len(keep)", len(cfg.keep), T, "one entry per key")
		}
		m.keep = append([]bool(nil), cfg.keep...)
	}
	return nil
}

// projectKeys sizes the projections by a of the keys the Memory may
// attend and computes them (see project). There are none when the keys
// have no columns or a no rows.
func (m *Memory) projectKeys(op string, a Matrix) error {
	if m.keys.cols == 0 || a.rows == 0 {
		return nil
	}
	// Both factors are backed by elements: the keys have columns, so
	// rows; a has a row per projection of a key, and keys.cols columns.
	n, ok := floatsFor(m.valid, a.rows)
	if !ok {
		return argErr(op, "projections of %d keys by %d rows do not fit in memory", m.valid, a.rows)
	}
	m.proj, m.projCols = make([]float32, n), a.rows
	m.project(a)
	return nil
}

// setViews records the views with elements that Attend must not write:
// the keys, the values (unless they are a cache's) and the scorer's
// operands.
func (m *Memory) setViews(cached bool) {
	ops := m.scorer.operands()
	for i, v := range [5]operand{{"keys", m.keys}, {"values", m.values}, ops[0], ops[1], ops[2]} {
		if len(v.m.data) > 0 && (i >= 2 || !cached) {
			m.views[m.nviews] = v
			m.nviews++
		}
	}
}

// maxFloats bounds every buffer the engine sizes from its inputs: its byte
// size fits in an int, and in the 2^48 bytes that a Go heap spans at most
// on the 64-bit platforms; asking for more would panic in make.
const maxFloats = min(math.MaxInt/4, 1<<46)

// floatsFor returns a·b, and false if that many floats cannot be
// allocated. a and b are not negative.
func floatsFor(a, b int) (int, bool) {
	if b != 0 && a > maxFloats/b {
		return 0, false
	}
	return a * b, true
}

// project sets the projection rows of the keys the Memory may attend, each
// a·K[i]: one kernel call per key, once per source sequence.
func (m *Memory) project(a Matrix) {
	c := m.projCols
	var buf []float32 // a cache's 16-bit key, widened
	if m.kv != nil {
		buf = make([]float32, m.keys.cols)
	}
	for i := range m.valid {
		if m.keep == nil || m.keep[i] {
			var k []float32
			if m.kv != nil {
				k = m.kv.key(buf, i)
			} else {
				k = m.keys.Row(i)
			}
			kernel.ScoreRows(m.proj[i*c:(i+1)*c], a.rowsFrom(0), a.stride, k)
		}
	}
}

// Len returns T, the number of encoder states.
func (m *Memory) Len() int { return m.keys.rows }

// QueryDim returns the length Attend needs for the query.
func (m *Memory) QueryDim() int { return m.dq }

// ValueDim returns the length of the context Attend writes.
func (m *Memory) ValueDim() int { return m.values.cols }

// Scorer returns the score function the Memory was built with.
func (m *Memory) Scorer() Scorer { return m.scorer }

// Workspace is scratch memory for Attend and AttendMany. Reusing one
// across calls makes them allocation-free; it grows to the largest call it
// has served. A Workspace must not be used by two goroutines at once.
type Workspace struct {
	buf []float32
}

func (w *Workspace) floats(n int) []float32 {
	if cap(w.buf) < n {
		w.buf = make([]float32, n)
	}
	return w.buf[:n]
}

// Attend runs one decoder step for query (the decoder state): it scores
// every attended key, turns the scores into weights with a stable softmax,
// and writes the weighted sum of the values into ctx (length ValueDim). If
// weights is not nil it must have length Len and receives the attention
// weights; otherwise the weights are kept in the workspace. ws may be nil,
// in which case Attend allocates its scratch.
//
// Semantics: masked keys (keep-mask false, or at or past the valid length)
// get weight exactly 0, and their keys and values are never read: Attend
// scores each run of consecutive attended keys with one pass of the
// kernels and blends only their values. If no key is attended, or every
// attended score is -Inf, ctx and weights are all zeros. A NaN in the
// query or in an attended key or value propagates into the result; a +Inf
// score makes every weight NaN. With keys of dimension 0 every key scores
// the same: 0 for the dot scorers; sᵀW·0 for general, which is 0, or NaN
// if the query holds a NaN or an infinity; vᵀtanh(W s) for additive and
// concat. When ctx is empty and weights is nil no output depends on the
// scores, and Attend computes nothing.
//
// Aliasing: ctx and weights must not share an element with each other,
// with the query, or with any view the Memory holds (its keys and values,
// and the scorer's matrices and vector); the query may share elements with
// any input (it may be a key row). Attend checks this on every call, with
// a few pointer comparisons, and returns an error wrapping ErrArgument
// naming the two operands that meet. A slice that only lies in the padding
// between the rows of a strided view meets none of its elements.
//
// Attend returns an error wrapping ErrShape if a length does not match.
// On any error ctx and weights are left untouched.
func (m *Memory) Attend(ctx, weights, query []float32, ws *Workspace) error {
	if err := m.checkAttend(ctx, weights, query); err != nil {
		return err
	}
	if weights == nil && len(ctx) == 0 {
		// Nothing to write. This also keeps T from sizing anything when
		// no element backs it (keys and values of no columns): past here
		// the weights, or value rows of len(ctx) > 0 columns, back T.
		return nil
	}
	if ws == nil {
		ws = new(Workspace)
	}
	tmp, weights := ws.buffers(m.scratch, m.keys.rows, weights)
	m.attend(ctx, weights, query, tmp)
	m.scaleContexts(ctx)
	return nil
}

// checkAttend checks the lengths of Attend's slices, then that the
// outputs share no element with the other slices or the Memory's views.
func (m *Memory) checkAttend(ctx, weights, query []float32) error {
	const op = "Attend"
	if len(query) != m.dq {
		return shapeErr(op, "len(query)", len(query), m.dq, "query dimension")
	}
	if len(ctx) != m.values.cols {
		return shapeErr(op, "len(ctx)", len(ctx), m.values.cols, "value dimension")
	}
	T := m.keys.rows
	if weights != nil && len(weights) != T {
		return shapeErr(op, "len(weights)", len(weights), T, "number of keys")
	}
	return m.checkOverlap(ctx, weights, query)
}

// buffers returns n floats of scratch for the scorer, and the weights
// row: weights itself, or if it is nil T more floats of the workspace.
func (w *Workspace) buffers(n, T int, weights []float32) (tmp, row []float32) {
	need := n
	if weights == nil {
		need += T
	}
	buf := w.floats(need)
	if weights == nil {
		weights = buf[n:]
	}
	return buf[:n], weights
}

// attend runs one decoder step on checked operands: it scores the keys
// below the valid length (those the mask keeps), takes the softmax into
// weights and blends the values into ctx. tmp is the scorer's scratch.
func (m *Memory) attend(ctx, weights, query, tmp []float32) {
	w := weights[:m.valid]
	clear(ctx)
	pq, tmp := m.scorer.prepare(m, query, tmp)
	m.scoreSpan(w, 0, pq, tmp)
	if mx := m.softmaxRow(weights); math.IsInf(float64(mx), -1) {
		return // nothing attended: zero weights, zero context
	}
	m.blend(ctx, w)
}

// softmaxRow turns a row of T scores, -Inf at the masked keys below the
// valid length, into weights: zeros from the valid length on, the softmax
// below it, and +0 at masked keys even when the row is NaN. It returns the
// row's maximum, -Inf when nothing is attended.
func (m *Memory) softmaxRow(row []float32) float32 {
	w := row[:m.valid]
	clear(row[m.valid:])
	mx := softmax(w, w)
	if m.keep != nil && (mx != mx || math.IsInf(float64(mx), 1)) {
		zeroMasked(w, m.keep[:m.valid]) // a NaN row: masked keys still weigh 0
	}
	return mx
}

// scoreSpan sets w[i] to the score of key j0+i where the mask keeps it and
// to -Inf where it does not, scoring each run of kept keys with one call of
// the scorer's kernels, so that no masked key is read.
func (m *Memory) scoreSpan(w []float32, j0 int, pq, tmp []float32) {
	if m.keep == nil {
		m.scorer.score(w, m, j0, pq, tmp)
		return
	}
	keep := m.keep[j0 : j0+len(w)]
	if _, ok := m.scorer.(generalScorer); ok && m.keys.cols > 0 {
		// The general scorer reads only the Memory's own projections
		// (zeros for masked keys): one call over every key, then the
		// mask, costs less than a call per run when the runs are short.
		m.scorer.score(w, m, j0, pq, tmp)
		maskScores(w, keep)
		return
	}
	for i := 0; i < len(w); {
		lo, hi := keptRun(keep, i)
		fillWith(w[i:lo], float32(math.Inf(-1)))
		if lo < hi {
			m.scorer.score(w[lo:hi], m, j0+lo, pq, tmp)
		}
		i = hi
	}
}

// keptRun returns the first run [lo, hi) of kept entries at or after i:
// keep[lo:hi] are all true and keep[hi] is false, or hi = len(keep);
// lo = hi = len(keep) if no entry from i on is kept.
func keptRun(keep []bool, i int) (lo, hi int) {
	for i < len(keep) && !keep[i] {
		i++
	}
	return i, nextMasked(keepBytes(keep), i)
}

// blend adds the weighted values of the attended keys to ctx.
func (m *Memory) blend(ctx, w []float32) {
	var keep []bool
	if m.keep != nil {
		keep = m.keep[:len(w)]
	}
	if m.kv != nil {
		m.kv.blendValues(ctx, w, 0, keep)
		return
	}
	blendKept(ctx, w, m.values.rowsFrom(0), m.values.stride, keep)
}

// blendFrom adds Σ w[i]·v(j0+i) to acc over the value rows of the keys
// keep keeps (all if it is nil), one kernel call per run of them.
func (m *Memory) blendFrom(acc, w []float32, j0 int, keep []bool) {
	if m.kv != nil {
		m.kv.blendValues(acc, w, j0, keep)
		return
	}
	blendKept(acc, w, m.values.rowsFrom(j0), m.values.stride, keep)
}

// checkOverlap returns an error naming the first two operands found to
// share an element: ctx or weights against each other, the query and the
// Memory's views. Each check is an inlined comparison of spans; only a
// view whose span an output meets takes the row-by-row test.
func (m *Memory) checkOverlap(ctx, weights, query []float32) error {
	const op = "Attend"
	switch {
	case overlaps(ctx, weights):
		return argErr(op, "ctx and weights overlap")
	case overlaps(ctx, query):
		return argErr(op, "ctx and query overlap")
	case overlaps(weights, query):
		return argErr(op, "weights and query overlap")
	}
	return m.checkViews(op, ctx, weights)
}

// checkViews returns an error naming the first view of the Memory that
// ctx or weights shares an element with.
func (m *Memory) checkViews(op string, ctx, weights []float32) error {
	for i := range m.nviews {
		v := &m.views[i]
		if overlaps(ctx, v.m.data) && v.m.meets(ctx) {
			return argErr(op, "ctx and %s overlap", v.name)
		}
		if overlaps(weights, v.m.data) && v.m.meets(weights) {
			return argErr(op, "weights and %s overlap", v.name)
		}
	}
	return nil
}

// overlaps reports whether a and b share an element.
func overlaps(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := addr(a), addr(b)
	return a0 < b0+uintptr(len(b))*4 && b0 < a0+uintptr(len(a))*4
}

// addr is the address of x's first element, for comparisons only. Go's
// heap does not move; a stack may, when it grows at a call, so addresses
// are taken and compared within one function with no call in between
// (addr and overlaps are inlined).
func addr(x []float32) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(x))) }
