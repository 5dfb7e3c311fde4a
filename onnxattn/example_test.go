package onnxattn_test

import (
	"fmt"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/onnxattn"
)

// A causal Attention node in the 4D layout: one batch entry, one head, two
// queries and three keys of dimension 2. With no cache the causal offset
// is 0 (top-left aligned), so the first query sees key 0 only and the
// second keys 0 and 1; key 2 is never attended.
func ExampleRun() {
	e := attention.NewBatched(1) // long-lived in a real program
	defer e.Close()
	q := onnxattn.NewFloat32([]float32{1, 0, 0, 1}, 1, 1, 2, 2)
	k := onnxattn.NewFloat32([]float32{1, 0, 0, 1, 1, 1}, 1, 1, 3, 2)
	v := onnxattn.NewFloat32([]float32{1, 2, 3}, 1, 1, 3, 1)
	out, err := onnxattn.Run(e, onnxattn.Attributes{IsCausal: true, QKMatmulOutputMode: 3},
		onnxattn.Inputs{Q: q, K: k, V: v}, onnxattn.Want{QKMatmulOutput: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("Y %v %.4f\n", out.Y.Shape, out.Y.F32)
	fmt.Printf("weights %v %.4f\n", out.QKMatmulOutput.Shape, out.QKMatmulOutput.F32)

	// A mask that does not broadcast is an error naming the shapes.
	_, err = onnxattn.Run(e, onnxattn.Attributes{}, onnxattn.Inputs{Q: q, K: k, V: v,
		AttnMask: onnxattn.NewBool(make([]bool, 9), 3, 3)}, onnxattn.Want{})
	fmt.Println(err)
	// Output:
	// Y [1 1 2 1] [1.0000 1.6698]
	// weights [1 1 2 3] [1.0000 0.0000 0.0000 0.3302 0.6698 0.0000]
	// onnxattn: attn_mask has shape [3 3], want broadcastable to [batch, q_num_heads, q_sequence_length, total_sequence_length] = [1 1 2 3]
}
