package onnxattn

import (
	"slices"

	"github.com/glancelab/attention"
)

// RotaryAttributes are the attributes of ONNX's RotaryEmbedding (opset
// 23). The zero value is the operator's defaults.
type RotaryAttributes struct {
	Interleaved        bool // interleaved: pairs (2i, 2i+1), else (i, i+rd/2)
	RotaryEmbeddingDim int  // rotary_embedding_dim: rd, the leading components of each head turned; 0 for all
	NumHeads           int  // num_heads: required for a 3D X, which it splits into heads
}

// RotaryInputs are RotaryEmbedding's inputs. PositionIDs is optional.
type RotaryInputs struct {
	X                  *Tensor // [batch][heads][seq][head_size], or [batch][seq][heads·head_size] with NumHeads
	CosCache, SinCache *Tensor // [positions][rd/2] with PositionIDs, else [batch][seq][rd/2]
	PositionIDs        *Tensor // int64 [batch][seq], or nil
}

// RunRotaryEmbedding computes ONNX's RotaryEmbedding: Y, the shape and
// type of X, with components [0, rd) of every head of token (b, s) turned
// by the cosines and sines of its position (row position_ids[b][s] of the
// caches, or row (b, s) of 3D caches without position ids) and the
// components from rd on copied. float32 is the operator's arithmetic bit
// for bit (see attention.Rotary); a float16 X and caches are widened,
// turned in float32 and rounded once. Shapes that do not fit are a
// *ShapeError; a position outside the cache (the reference's negative
// indices, which wrap, among them), an odd rd, or a rank-3 X without
// NumHeads are ErrArgument. Inputs are never written.
func RunRotaryEmbedding(a RotaryAttributes, in RotaryInputs) (*Tensor, error) {
	x := in.X
	if x == nil || in.CosCache == nil || in.SinCache == nil {
		return nil, argErr("RotaryEmbedding needs X, cos_cache and sin_cache")
	}
	for _, t := range []struct {
		name string
		t    *Tensor
	}{{"X", x}, {"cos_cache", in.CosCache}, {"sin_cache", in.SinCache}} {
		if err := checkData(t.name, t.t, Float32, Float16); err != nil {
			return nil, err
		}
		if t.t.DType != x.DType {
			return nil, argErr("%s is %v and X %v: want one type", t.name, t.t.DType, x.DType)
		}
	}
	var B, H, S, D int
	switch len(x.Shape) {
	case 4:
		B, H, S, D = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	case 3:
		if a.NumHeads <= 0 {
			return nil, argErr("num_heads = %d: a 3D X needs it", a.NumHeads)
		}
		B, S, H = x.Shape[0], x.Shape[1], a.NumHeads
		if x.Shape[2]%H != 0 {
			return nil, shapeErr("X", x.Shape, "a hidden size that num_heads = %d divides", H)
		}
		D = x.Shape[2] / H
	default:
		return nil, shapeErr("X", x.Shape, "rank 3 or 4")
	}
	rd := D
	if a.RotaryEmbeddingDim != 0 {
		rd = a.RotaryEmbeddingDim
	}
	switch {
	case rd < 0 || rd%2 != 0:
		return nil, argErr("rotary_embedding_dim = %d: want an even width", rd)
	case rd > D:
		return nil, argErr("rotary_embedding_dim = %d is more than the head size %d", rd, D)
	}
	half := rd / 2
	cosT, sinT := in.CosCache, in.SinCache
	var pos []int
	if p := in.PositionIDs; p != nil {
		if err := checkData("position_ids", p, Int64); err != nil {
			return nil, err
		}
		if len(p.Shape) != 2 || p.Shape[0] != B || p.Shape[1] != S {
			return nil, shapeErr("position_ids", p.Shape, "[%d %d] ([batch seq])", B, S)
		}
		if len(cosT.Shape) != 2 || cosT.Shape[1] != half {
			return nil, shapeErr("cos_cache", cosT.Shape, "[positions %d] with position_ids", half)
		}
		pos = make([]int, len(p.I64))
		for i, v := range p.I64 {
			if v < 0 || v >= int64(cosT.Shape[0]) {
				return nil, argErr("position_ids[%d] = %d outside the caches' %d positions", i, v, cosT.Shape[0])
			}
			pos[i] = int(v)
		}
	} else {
		if len(cosT.Shape) != 3 || cosT.Shape[0] != B || cosT.Shape[1] != S || cosT.Shape[2] != half {
			return nil, shapeErr("cos_cache", cosT.Shape, "[%d %d %d] ([batch seq rd/2]) without position_ids", B, S, half)
		}
		pos = make([]int, B*S)
		for i := range pos {
			pos[i] = i
		}
	}
	if !slices.Equal(sinT.Shape, cosT.Shape) {
		return nil, shapeErr("sin_cache", sinT.Shape, "cos_cache's shape %v", cosT.Shape)
	}
	y := &Tensor{DType: x.DType, Shape: append([]int(nil), x.Shape...)}
	// Y's elements as float32: X widened (a new slice) or copied.
	data, cos, sin := x.Floats(), cosT.Floats(), sinT.Floats()
	if x.DType == Float32 {
		data = slices.Clone(data)
	}
	if len(data) > 0 && rd > 0 && len(cos) > 0 {
		layout := attention.RotateHalf
		if a.Interleaved {
			layout = attention.RotateInterleaved
		}
		rot, err := attention.NewRotaryTable(cos, sin, rd, layout)
		if err != nil {
			return nil, err
		}
		var v attention.Tensor
		if len(x.Shape) == 4 {
			v, err = attention.NewTensor(B, H, S, D, data)
		} else {
			v, err = attention.NewTensorStrided(B, H, S, D, S*H*D, D, H*D, data)
		}
		if err != nil {
			return nil, err
		}
		if err := rot.Apply(v, pos); err != nil {
			return nil, err
		}
	}
	if x.DType == Float16 {
		y.F16 = make([]uint16, len(data))
		for i, f := range data {
			y.F16[i] = Float32ToFloat16(f)
		}
	} else {
		y.F32 = data
	}
	return y, nil
}
