package onnxattn

import "github.com/glancelab/attention"

// dims are the sizes of one call. Once check has passed, the extent of
// every tensor and buffer of the call fits in an int (see sizes.fit), so
// products of these dimensions within one of them cannot overflow.
type dims struct {
	threeD                    bool
	B, Hq, Hkv, Sq, Skv, P, T int
	D, Dv                     int
	nY, nQK                   int  // elements of Y and of qk_matmul_output (0 if not wanted)
	cached                    bool // the past is the rows of a KVCache (RunCache)
}

// headDims checks Q, K and V and returns the sizes they declare: all but
// the past and total lengths.
func headDims(a Attributes, in Inputs) (dims, error) {
	if err := checkQKVData(in); err != nil {
		return dims{}, err
	}
	Q, K, V := in.Q.Shape, in.K.Shape, in.V.Shape
	switch r := len(Q); {
	case r != 3 && r != 4:
		return dims{}, shapeErr("Q", Q, "rank 3 [batch, q_sequence_length, q_num_heads·head_size] or 4 [batch, q_num_heads, q_sequence_length, head_size]")
	case len(K) != r:
		return dims{}, shapeErr("K", K, "rank %d like Q", r)
	case len(V) != r:
		return dims{}, shapeErr("V", V, "rank %d like Q", r)
	}
	var d dims
	var err error
	if len(Q) == 3 {
		d, err = dims3D(a, Q, K, V)
	} else {
		d, err = dims4D(a, Q, K, V)
	}
	if err != nil {
		return d, err
	}
	if d.Hkv == 0 || d.Hq%d.Hkv != 0 {
		return d, shapeErr("Q", Q, "q_num_heads (%d) a multiple of kv_num_heads (%d)", d.Hq, d.Hkv)
	}
	return d, nil
}

// checkQKVData checks that Q, K and V are present and hold float data, Q
// and K of one type.
func checkQKVData(in Inputs) error {
	for _, x := range []struct {
		name string
		t    *Tensor
	}{{"Q", in.Q}, {"K", in.K}, {"V", in.V}} {
		if x.t == nil {
			return argErr("input %s is required", x.name)
		}
		if err := checkData(x.name, x.t, Float32, Float16); err != nil {
			return err
		}
	}
	if in.K.DType != in.Q.DType {
		return argErr("K is %v, want %v like Q", in.K.DType, in.Q.DType)
	}
	return nil
}

// dims3D returns the sizes of 3D inputs, whose hidden axes the head
// counts of the attributes split.
func dims3D(a Attributes, Q, K, V []int) (dims, error) {
	d := dims{threeD: true}
	qh, kvh := a.QNumHeads, a.KVNumHeads
	if qh == 0 || kvh == 0 {
		return d, argErr("3D inputs need q_num_heads and kv_num_heads (got %d and %d)", qh, kvh)
	}
	if Q[2]%qh != 0 {
		return d, shapeErr("Q", Q, "a hidden size divisible by q_num_heads = %d", qh)
	}
	d.B, d.Sq, d.Hq, d.D = Q[0], Q[1], qh, Q[2]/qh
	if n, ok := mulInt(kvh, d.D); !ok || K[2] != n {
		return d, shapeErr("K", K, "hidden size kv_num_heads·head_size = %d·%d", kvh, d.D)
	}
	if V[2]%kvh != 0 {
		return d, shapeErr("V", V, "a hidden size divisible by kv_num_heads = %d", kvh)
	}
	d.Hkv, d.Skv, d.Dv = kvh, K[1], V[2]/kvh
	if K[0] != d.B {
		return d, shapeErr("K", K, "[%d, kv_sequence_length, %d] (Q is %v)", d.B, K[2], Q)
	}
	if V[0] != d.B || V[1] != d.Skv {
		return d, shapeErr("V", V, "[%d, %d, %d] (batch and kv_sequence_length like K %v)", d.B, d.Skv, V[2], K)
	}
	return d, nil
}

// dims4D returns the sizes of 4D inputs, which carry their head counts;
// head-count attributes, if set, must agree with them.
func dims4D(a Attributes, Q, K, V []int) (dims, error) {
	d := dims{B: Q[0], Hq: Q[1], Sq: Q[2], D: Q[3], Hkv: K[1], Skv: K[2], Dv: V[3]}
	if K[0] != d.B || K[3] != d.D {
		return d, shapeErr("K", K, "[%d, kv_num_heads, kv_sequence_length, %d] (Q is %v)", d.B, d.D, Q)
	}
	if V[0] != d.B || V[1] != d.Hkv || V[2] != d.Skv {
		return d, shapeErr("V", V, "[%d, %d, %d, v_head_size] (K is %v)", d.B, d.Hkv, d.Skv, K)
	}
	if a.QNumHeads != 0 && a.QNumHeads != d.Hq {
		return d, shapeErr("Q", Q, "%d heads in dimension 1 (q_num_heads)", a.QNumHeads)
	}
	if a.KVNumHeads != 0 && a.KVNumHeads != d.Hkv {
		return d, shapeErr("K", K, "%d heads in dimension 1 (kv_num_heads)", a.KVNumHeads)
	}
	return d, nil
}

// checkPast checks past_key and past_value against K and V, or the cache
// if there is one (see checkCache), and records the past length.
func (d *dims) checkPast(in Inputs, cache *attention.KVCache) error {
	if cache != nil {
		return d.checkCache(in, cache)
	}
	if (in.PastKey == nil) != (in.PastValue == nil) {
		return argErr("past_key and past_value come as a pair")
	}
	if in.PastKey == nil {
		return nil
	}
	if err := checkData("past_key", in.PastKey, in.K.DType); err != nil {
		return err
	}
	if err := checkData("past_value", in.PastValue, in.V.DType); err != nil {
		return err
	}
	pk, pv := in.PastKey.Shape, in.PastValue.Shape
	if len(pk) != 4 || pk[0] != d.B || pk[1] != d.Hkv || pk[3] != d.D {
		return shapeErr("past_key", pk, "[%d, %d, past_sequence_length, %d] (batch, kv_num_heads, head_size)", d.B, d.Hkv, d.D)
	}
	d.P = pk[2]
	if len(pv) != 4 || pv[0] != d.B || pv[1] != d.Hkv || pv[2] != d.P || pv[3] != d.Dv {
		return shapeErr("past_value", pv, "[%d, %d, %d, %d] (past_key is %v, v_head_size %d)", d.B, d.Hkv, d.P, d.Dv, pk, d.Dv)
	}
	return nil
}
