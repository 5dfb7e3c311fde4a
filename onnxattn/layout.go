package onnxattn

import (
	"errors"
	"fmt"

	"github.com/glancelab/attention"
)

// view returns data as a [B][H][S][hd] engine tensor: packed for 4D
// inputs, a strided view of [B][S][H·hd] for 3D ones.
func view(data []float32, threeD bool, B, H, S, hd int) (attention.Tensor, error) {
	if !threeD {
		return attention.NewTensor(B, H, S, hd, data)
	}
	row, ok1 := count(H, hd)
	batch, ok2 := count(S, H, hd)
	if !ok1 || !ok2 {
		return attention.Tensor{}, fmt.Errorf("[%d %d %d] does not fit in an int", B, S, H*hd)
	}
	return attention.NewTensorStrided(B, H, S, hd, batch, hd, row, data)
}

// viewInputs gives the engine Q, K and V without copying them: 3D inputs
// become strided views; only float16 ones are copied, to widen them.
func (c *call) viewInputs() error {
	in, d := c.in, c.d
	var err error
	if c.q, err = view(in.Q.Floats(), d.threeD, d.B, d.Hq, d.Sq, d.D); err != nil {
		return viewErr(err, "Q", in.Q)
	}
	c.kf, c.vf = in.K.Floats(), in.V.Floats()
	if c.k, err = view(c.kf, d.threeD, d.B, d.Hkv, d.Skv, d.D); err != nil {
		return viewErr(err, "K", in.K)
	}
	if c.v, err = view(c.vf, d.threeD, d.B, d.Hkv, d.Skv, d.Dv); err != nil {
		return viewErr(err, "V", in.V)
	}
	return nil
}

// appendPast puts the cache (if any) before the new keys and values, so
// that the engine reads present_key/present_value, and returns their data.
func (c *call) appendPast() (kData, vData []float32, err error) {
	var pk, pv []float32
	if c.in.PastKey != nil {
		pk, pv = c.in.PastKey.Floats(), c.in.PastValue.Floats()
	}
	if c.k, kData, err = concat(pk, c.k, c.d.P); err != nil {
		return nil, nil, viewErr(err, "K", c.in.K)
	}
	if c.v, vData, err = concat(pv, c.v, c.d.P); err != nil {
		return nil, nil, viewErr(err, "V", c.in.V)
	}
	return kData, vData, nil
}

// concat returns past (packed [B][H][P][hd]) followed by the rows of x
// along the sequence axis, as a packed tensor and its data. It checks the
// sizes itself, so no input can make it index out of range.
func concat(past []float32, x attention.Tensor, P int) (attention.Tensor, []float32, error) {
	B, H, S, hd := x.Shape()
	T, ok := addInt(P, S)
	n, ok2 := count(B, H, T, hd)
	np, ok3 := count(B, H, P, hd)
	if !ok || !ok2 || !ok3 || len(past) != np {
		return attention.Tensor{}, nil, fmt.Errorf("%d past elements do not make [%d %d %d %d] followed by %d rows", len(past), B, H, P, hd, S)
	}
	data := make([]float32, n)
	if n > 0 { // else B·H may be large with nothing to copy
		for b := range B {
			for h := range H {
				dst := data[(b*H+h)*T*hd:]
				copy(dst[:P*hd], past[(b*H+h)*P*hd:])
				for s := range S {
					copy(dst[(P+s)*hd:(P+s+1)*hd], x.Row(b, h, s))
				}
			}
		}
	}
	t, err := attention.NewTensor(B, H, T, hd, data)
	return t, data, err
}

// maskBias turns attn_mask into the engine's bias: right-aligned to
// [B][Hq][Sq][T], with size-1 dimensions left for the engine to broadcast;
// bool false and the columns a short mask lacks (opset 24) become −Inf.
func maskBias(m *Tensor, d dims) (attention.Tensor, error) {
	r := len(m.Shape)
	s4 := [4]int{1, 1, 1, 1}
	copy(s4[4-r:], m.Shape)
	cols := s4[3]
	if m.DType == Float32 && cols == d.T {
		return attention.NewTensor(s4[0], s4[1], s4[2], d.T, m.F32)
	}
	rows, ok := count(s4[0], s4[1], s4[2])
	n, ok2 := count(rows, d.T)
	if !ok || !ok2 {
		return attention.Tensor{}, fmt.Errorf("a bias of [%d %d %d %d] does not fit in an int", s4[0], s4[1], s4[2], d.T)
	}
	bias := make([]float32, n)
	for row := range rows {
		if n == 0 {
			break // T = 0: rows may be many, with nothing to fill
		}
		dst := bias[row*d.T : (row+1)*d.T]
		for j := range dst {
			switch {
			case j >= cols:
				dst[j] = negInf
			case m.DType == Bool:
				if !m.Bool[row*cols+j] {
					dst[j] = negInf
				}
			case m.DType == Float16:
				dst[j] = Float16ToFloat32(m.F16[row*cols+j])
			default:
				dst[j] = m.F32[row*cols+j]
			}
		}
	}
	return attention.NewTensor(s4[0], s4[1], s4[2], d.T, bias)
}

// viewErr turns the failure of a view of input (or of a buffer sized by
// it) into a *ShapeError naming it. The checks make every view fit; this
// keeps Run's errors of the documented kinds should one ever fail.
func viewErr(err error, input string, t *Tensor) error {
	return shapeErr(input, t.Shape, "a shape whose views fit the engine (%v)", err)
}

// engineErr passes on the engine's errors about values (ErrArgument) and
// ErrClosed, and turns any other, about shapes the checks should have
// refused, into a *ShapeError naming Q.
func engineErr(err error, in Inputs) error {
	if err == nil || errors.Is(err, attention.ErrArgument) || errors.Is(err, attention.ErrClosed) {
		return err
	}
	return viewErr(err, "Q", in.Q)
}
