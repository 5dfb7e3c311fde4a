package onnxattn

// ScatterAttributes are the attributes of ONNX's TensorScatter (opset 24);
// the zero value is the operator's defaults.
type ScatterAttributes struct {
	// Axis is the sequence axis; negative counts from the end. 0, which
	// the operator forbids (the batch axis), stands for its default, −2.
	Axis int
	// Mode is "linear" (or "", the default) or "circular": positions
	// taken modulo the cache's sequence length.
	Mode string
}

// ScatterInputs are TensorScatter's inputs; WriteIndices is optional.
type ScatterInputs struct {
	PastCache, Update *Tensor
	WriteIndices      *Tensor // int64 [batch]: where each entry's update goes; zeros if nil
}

// RunTensorScatter computes ONNX's TensorScatter: present_cache, a copy of
// past_cache in which, for every index p over the dimensions before the
// sequence axis (batch b first) and every s below the update's sequence
// length, the slice at (p, write_indices[b]+s) is update's slice at
// (p, s); in circular mode the position is taken modulo the cache's
// sequence length (the position only: the specification's pseudocode
// applies the modulo to the whole index, which no case can tell apart and
// which looks unintended). Any element type. Shapes that do not fit are a
// *ShapeError; a bad axis or mode, or in linear mode a write index that is
// negative or runs past the cache, ErrArgument (the specification leaves
// both undefined).
func RunTensorScatter(a ScatterAttributes, in ScatterInputs) (*Tensor, error) {
	past := in.PastCache
	if past == nil {
		return nil, argErr("TensorScatter needs past_cache and update")
	}
	out := past.clone()
	if err := TensorScatterInPlace(a, out, in.Update, in.WriteIndices); err != nil {
		return nil, err
	}
	return out, nil
}

// TensorScatterInPlace is RunTensorScatter writing into cache itself, the
// in-place KV update the operator models: a decode loop keeps one cache
// buffer of max_sequence_length rows, scatters each step's rows into it,
// and hands it to Run as K or V with nonpad_kv_seqlen = write_indices + the
// update's length, so that no call copies the past. Every check comes
// before the first write; on an error cache is unchanged.
func TensorScatterInPlace(a ScatterAttributes, cache, update, writeIndices *Tensor) error {
	if cache == nil || update == nil {
		return argErr("TensorScatter needs past_cache and update")
	}
	types := []DType{Float32, Float16, Bool, Int64, Int32}
	if err := checkData("past_cache", cache, types...); err != nil {
		return err
	}
	if err := checkData("update", update, cache.DType); err != nil {
		return err
	}
	r := len(cache.Shape)
	if r < 2 {
		return shapeErr("past_cache", cache.Shape, "rank 2 or more (a batch and a sequence axis)")
	}
	axis := a.Axis
	if axis == 0 {
		axis = -2
	}
	if axis < 0 {
		axis += r
	}
	if axis <= 0 || axis >= r {
		return argErr("axis = %d: want a sequence axis in [1, %d) or [−%d, −1]", a.Axis, r, r-1)
	}
	circular := false
	switch a.Mode {
	case "", "linear":
	case "circular":
		circular = true
	default:
		return argErr("mode = %q: want \"linear\" or \"circular\"", a.Mode)
	}
	if len(update.Shape) != r {
		return shapeErr("update", update.Shape, "rank %d, past_cache's", r)
	}
	for i := range r {
		if i != axis && update.Shape[i] != cache.Shape[i] {
			return shapeErr("update", update.Shape, "past_cache's shape %v but for axis %d", cache.Shape, axis)
		}
	}
	maxSeq, seq, B := cache.Shape[axis], update.Shape[axis], cache.Shape[0]
	if seq > maxSeq {
		return shapeErr("update", update.Shape, "at most past_cache's %d positions on axis %d", maxSeq, axis)
	}
	wi := make([]int, B)
	if w := writeIndices; w != nil {
		if err := checkData("write_indices", w, Int64); err != nil {
			return err
		}
		if len(w.Shape) != 1 || w.Shape[0] != B {
			return shapeErr("write_indices", w.Shape, "[%d] ([batch])", B)
		}
		for b, v := range w.I64 {
			switch {
			case circular && seq > 0 && (v < 0 || v >= int64(maxSeq)):
				return argErr("write_indices[%d] = %d outside [0, %d)", b, v, maxSeq)
			case !circular && (v < 0 || v > int64(maxSeq-seq)):
				return argErr("write_indices[%d] = %d: %d positions from there pass the cache's %d", b, v, seq, maxSeq)
			}
			wi[b] = int(v)
		}
	}
	if cache.Len() == 0 || seq == 0 {
		return nil
	}
	// inner: elements of a slice after the axis; outer: the indices p
	// before it, per batch entry.
	inner := 1
	for _, d := range cache.Shape[axis+1:] {
		inner *= d
	}
	outer := 1
	for _, d := range cache.Shape[1:axis] {
		outer *= d
	}
	rows := scatterRows{wi: wi, outer: outer, maxSeq: maxSeq, seq: seq, inner: inner, circular: circular}
	switch cache.DType {
	case Float32:
		scatter(rows, cache.F32, update.F32)
	case Float16:
		scatter(rows, cache.F16, update.F16)
	case Bool:
		scatter(rows, cache.Bool, update.Bool)
	case Int64:
		scatter(rows, cache.I64, update.I64)
	case Int32:
		scatter(rows, cache.I32, update.I32)
	}
	return nil
}

// scatterRows is where a TensorScatter writes: per batch entry b its write
// index wi[b], outer slices per entry (the dimensions between the batch and
// the sequence axis), maxSeq positions of the cache and seq of the update,
// inner elements a position.
type scatterRows struct {
	wi                        []int
	outer, maxSeq, seq, inner int
	circular                  bool
}

// scatter copies update's slices into cache where r says.
func scatter[E any](r scatterRows, cache, update []E) {
	for b, w := range r.wi {
		for p := range r.outer {
			q := b*r.outer + p
			for s := range r.seq {
				pos := w + s
				if r.circular {
					pos %= r.maxSeq
				}
				dst, src := (q*r.maxSeq+pos)*r.inner, (q*r.seq+s)*r.inner
				copy(cache[dst:dst+r.inner], update[src:src+r.inner])
			}
		}
	}
}
