package onnxattn

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// Empty query sets (q_sequence_length 0, or batch 0) on a shared engine
// with several workers: empty Y and qk_matmul_output, present_key and
// present_value still the concatenation of the cache and the new keys.
func TestEmptyQueriesSharedEngine(t *testing.T) {
	e := attention.NewBatched(2)
	defer e.Close()
	r := testutil.Rand(5)
	for _, c := range []struct{ B, Sq int }{{1, 0}, {2, 0}, {0, 3}, {0, 0}} {
		for mode := range 4 {
			in := Inputs{
				Q: randomTensor(r, Float32, c.B, 2, c.Sq, 4), K: randomTensor(r, Float32, c.B, 2, 3, 4), V: randomTensor(r, Float32, c.B, 2, 3, 5),
				PastKey: randomTensor(r, Float32, c.B, 2, 2, 4), PastValue: randomTensor(r, Float32, c.B, 2, 2, 5),
				AttnMask: NewBool(make([]bool, c.Sq*5), c.Sq, 5),
			}
			a := Attributes{IsCausal: true, QKMatmulOutputMode: mode, Softcap: 2}
			name := fmt.Sprintf("B=%d Sq=%d mode %d", c.B, c.Sq, mode)
			got, err := Run(e, a, in, Want{Present: true, QKMatmulOutput: true})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if fmt.Sprint(got.Y.Shape, got.QKMatmulOutput.Shape) != fmt.Sprint([]int{c.B, 2, c.Sq, 5}, []int{c.B, 2, c.Sq, 5}) || len(got.Y.F32)+len(got.QKMatmulOutput.F32) != 0 {
				t.Fatalf("%s: Y %v qk %v", name, got.Y.Shape, got.QKMatmulOutput.Shape)
			}
			rc := randomCase{a: a, in: in, f: Float32}
			pk, pv := concatRef(in.PastKey, in.K, 2), concatRef(in.PastValue, in.V, 2)
			near(t, rc, "present_key", got.PresentKey, pk)
			near(t, rc, "present_value", got.PresentValue, pv)
		}
	}
}

// concatRef is present_key or present_value in float64: the
// [B][H][P][hd] past (nil: P = 0) followed by x, 4D [B][H][S][hd] or 3D
// [B][S][H·hd].
func concatRef(past, x *Tensor, H int) []float64 {
	B, S, hd := x.Shape[0], x.Shape[len(x.Shape)-2], 0
	if len(x.Shape) == 3 {
		hd = x.Shape[2] / H
	} else {
		hd = x.Shape[3]
	}
	var p []float32
	P := 0
	if past != nil {
		p, P = past.Floats(), past.Shape[2]
	}
	s := x.Floats()
	out := make([]float64, 0, B*H*(P+S)*hd)
	for b := range B {
		for h := range H {
			for _, v := range p[(b*H+h)*P*hd : (b*H+h+1)*P*hd] {
				out = append(out, float64(v))
			}
			for i := range S {
				o := ((b*H+h)*S + i) * hd
				if len(x.Shape) == 3 {
					o = (b*S+i)*H*hd + h*hd
				}
				for _, v := range s[o : o+hd] {
					out = append(out, float64(v))
				}
			}
		}
	}
	return out
}

// A v_head_size of 0 gives an empty Y and leaves qk_matmul_output, in
// every mode, as the reference computes it, also at the query counts the
// engine's block kernels take (8 rows and more).
func TestZeroValueHeadSize(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := attention.NewBatched(2)
		defer e.Close()
		r := testutil.Rand(6)
		for _, Sq := range []int{1, 8, 16, 19} {
			for mode := range 4 {
				for _, threeD := range []bool{false, true} {
					c := randomCase{f: Float32, a: Attributes{QKMatmulOutputMode: mode, Softcap: 3}}
					if threeD {
						c.a.QNumHeads, c.a.KVNumHeads = 2, 1
						c.in = Inputs{Q: randomTensor(r, Float32, 1, Sq, 8), K: randomTensor(r, Float32, 1, 6, 4), V: zeros(1, 6, 0)}
					} else {
						c.in = Inputs{Q: randomTensor(r, Float32, 1, 2, Sq, 4), K: randomTensor(r, Float32, 1, 1, 6, 4), V: zeros(1, 1, 6, 0)}
					}
					got, err := Run(e, c.a, c.in, Want{QKMatmulOutput: true})
					if err != nil {
						t.Fatalf("%v: %v", c, err)
					}
					y, qk := naive(c.a, c.in)
					near(t, c, "Y", got.Y, y)
					near(t, c, "qk_matmul_output", got.QKMatmulOutput, qk)
				}
			}
		}
	})
}

// A fully masked query row gives zeros (the ONNX 1.23 errata), with zero
// weights in mode 3, even where a value row holds NaN or ±Inf: its weights
// are all 0 and no value is blended. The other rows attend the key with
// the non-finite value, so theirs are not finite.
func TestFullyMaskedRowNonFiniteV(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := attention.NewBatched(2)
		defer e.Close()
		r := testutil.Rand(7)
		const T, Dv, masked = 5, 3, 3
		for _, Sq := range []int{4, 8, 16, 21} {
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
				for _, f := range []DType{Bool, Float32} {
					v := randomTensor(r, Float32, 1, 1, T, Dv)
					v.F32[2*Dv+1] = bad
					var mask *Tensor
					if f == Bool {
						keep := make([]bool, Sq*T)
						for i := range keep {
							keep[i] = i/T != masked
						}
						mask = NewBool(keep, Sq, T)
					} else {
						bias := make([]float32, Sq*T)
						for j := range T {
							bias[masked*T+j] = negInf
						}
						mask = NewFloat32(bias, Sq, T)
					}
					in := Inputs{Q: randomTensor(r, Float32, 1, 1, Sq, 4), K: randomTensor(r, Float32, 1, 1, T, 4), V: v, AttnMask: mask}
					got, err := Run(e, Attributes{QKMatmulOutputMode: 3}, in, Want{QKMatmulOutput: true})
					if err != nil {
						t.Fatal(err)
					}
					for i := range Sq {
						y, w := got.Y.F32[i*Dv:(i+1)*Dv], got.QKMatmulOutput.F32[i*T:(i+1)*T]
						if i == masked {
							if fmt.Sprint(y, w) != fmt.Sprint(make([]float32, Dv), make([]float32, T)) {
								t.Fatalf("Sq %d, V holds %v, %v mask: fully masked row: Y %v, weights %v, want zeros", Sq, bad, f, y, w)
							}
						} else if y := float64(y[1]); !math.IsNaN(y) && !math.IsInf(y, 0) {
							t.Fatalf("Sq %d, V holds %v, %v mask: row %d attends the key but Y = %v", Sq, bad, f, i, got.Y.F32[i*Dv:(i+1)*Dv])
						}
					}
				}
			}
		}
	})
}
