package onnxattn

// checkNonpad checks nonpad_kv_seqlen, if present, and returns its largest
// length (0 without it): the fewest columns a short mask may have (opset 24).
func (d *dims) checkNonpad(n *Tensor) (int, error) {
	if n == nil {
		return 0, nil
	}
	if err := checkData("nonpad_kv_seqlen", n, Int64); err != nil {
		return 0, err
	}
	if len(n.Shape) != 1 || n.Shape[0] != d.B {
		return 0, shapeErr("nonpad_kv_seqlen", n.Shape, "[%d] (batch)", d.B)
	}
	maxValid := 0
	for b, x := range n.I64 {
		if x < 0 || x > int64(d.T) {
			return 0, argErr("nonpad_kv_seqlen[%d] = %d outside [0, %d]", b, x, d.T)
		}
		maxValid = max(maxValid, int(x))
	}
	return maxValid, nil
}

// checkMask checks attn_mask, if present: broadcastable to [batch,
// q_num_heads, q_sequence_length, total_sequence_length], except that its
// last dimension may be short down to maxValid columns.
func (d *dims) checkMask(in Inputs, maxValid int) error {
	m := in.AttnMask
	if m == nil {
		return nil
	}
	if err := checkData("attn_mask", m, Bool, in.Q.DType); err != nil {
		return err
	}
	full := [4]int{d.B, d.Hq, d.Sq, d.T}
	r := len(m.Shape)
	if r < 1 || r > 4 {
		return shapeErr("attn_mask", m.Shape, "rank 1 to 4, broadcastable to %v", full)
	}
	for i, x := range m.Shape[:r-1] {
		if f := full[4-r+i]; x != f && x != 1 {
			return shapeErr("attn_mask", m.Shape, "broadcastable to [batch, q_num_heads, q_sequence_length, total_sequence_length] = %v", full)
		}
	}
	if c := m.Shape[r-1]; c > d.T || c < maxValid {
		return shapeErr("attn_mask", m.Shape, "a last dimension between %d (the valid keys) and %d (total_sequence_length)", maxValid, d.T)
	}
	return nil
}
