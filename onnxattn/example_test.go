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

// A causal node decoding step by step with its past in a KVCache: the
// prompt's two tokens, then one token a step. Each call appends its K and
// V to the cache and attends over every row held; present_key and
// present_value are the cache itself. A float16 model would keep an F16
// cache, half the bytes, with its K and V stored exactly.
func ExampleRunCache() {
	e := attention.NewBatched(1)
	defer e.Close()
	// One batch entry, one KV head, room for 8 rows of head size 2.
	cache, err := attention.NewKVCache(1, 1, 8, 2, 2, attention.F32)
	if err != nil {
		fmt.Println(err)
		return
	}
	a := onnxattn.Attributes{IsCausal: true}
	step := func(q, k, v []float32) {
		S := len(q) / 2
		out, err := onnxattn.RunCache(e, cache, a, onnxattn.Inputs{
			Q: onnxattn.NewFloat32(q, 1, 1, S, 2),
			K: onnxattn.NewFloat32(k, 1, 1, S, 2),
			V: onnxattn.NewFloat32(v, 1, 1, S, 2),
		}, onnxattn.Want{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d rows held, Y %.4f\n", cache.Len(0), out.Y.F32)
	}
	step([]float32{1, 0, 0, 1}, []float32{1, 0, 0, 1}, []float32{1, 0, 0, 1}) // the prompt
	step([]float32{1, 1}, []float32{1, 1}, []float32{1, 1})                   // a decode step
	step([]float32{0, 2}, []float32{-1, 1}, []float32{0, 0})                  // and another

	// The past comes from the cache: past_key is an error.
	_, err = onnxattn.RunCache(e, cache, a, onnxattn.Inputs{Q: onnxattn.NewFloat32([]float32{1, 1}, 1, 1, 1, 2),
		K: onnxattn.NewFloat32([]float32{1, 1}, 1, 1, 1, 2), V: onnxattn.NewFloat32([]float32{1, 1}, 1, 1, 1, 2),
		PastKey: onnxattn.NewFloat32(nil, 1, 1, 0, 2), PastValue: onnxattn.NewFloat32(nil, 1, 1, 0, 2)}, onnxattn.Want{})
	fmt.Println(err)
	// Output:
	// 2 rows held, Y [1.0000 0.0000 0.3302 0.6698]
	// 3 rows held, Y [0.7517 0.7517]
	// 4 rows held, Y [0.3833 0.6167]
	// attention: invalid argument: onnxattn: past_key and past_value are given: with RunCache the past is the rows the cache holds
}

// One decoder layer's attention block as ONNX Runtime GenAI exports it:
// GroupQueryAttention with rotary inside, over a static cache buffer that
// the past and present share. Each step feeds the token's query, key and
// value rows; the op turns the query and the new key by the token's
// position, writes the new rows into the buffer after each entry's
// seqlens_k, and attends with four query heads on two KV heads.
func ExampleRunGroupQueryAttention() {
	const H, Hkv, D, maxLen = 4, 2, 8, 16
	e := attention.NewBatched(1) // long-lived in a real program
	defer e.Close()
	// The model's rotary caches: cos and sin of p·10000^(−2i/D).
	rot, _ := attention.NewRotary(D, maxLen, 10000, attention.RotateHalf)
	cos, sin := make([]float32, maxLen*D/2), make([]float32, maxLen*D/2)
	for p := range maxLen {
		for i := range D / 2 {
			x := make([]float32, D)
			x[i] = 1
			t, _ := attention.NewTensor(1, 1, 1, D, x)
			_ = rot.Apply(t, []int{p})
			cos[p*D/2+i], sin[p*D/2+i] = x[i], x[i+D/2]
		}
	}
	past := onnxattn.NewFloat32(make([]float32, Hkv*maxLen*D), 1, Hkv, maxLen, D)
	pastV := onnxattn.NewFloat32(make([]float32, Hkv*maxLen*D), 1, Hkv, maxLen, D)
	a := onnxattn.GQAAttributes{NumHeads: H, KVNumHeads: Hkv, DoRotary: true}
	for step := range 3 {
		token := func(n int, f float32) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = f * float32(i%D+1) / D
			}
			return x
		}
		out, err := onnxattn.RunGroupQueryAttention(e, a, onnxattn.GQAInputs{
			Query:               onnxattn.NewFloat32(token(H*D, 1), 1, 1, H*D),
			Key:                 onnxattn.NewFloat32(token(Hkv*D, 1), 1, 1, Hkv*D),
			Value:               onnxattn.NewFloat32(token(Hkv*D, float32(step+1)), 1, 1, Hkv*D),
			PastKey:             past,
			PastValue:           pastV,
			SeqlensK:            onnxattn.NewInt32([]int32{int32(step)}, 1), // the keys after this step, less one
			TotalSequenceLength: onnxattn.NewInt32([]int32{maxLen}),
			CosCache:            onnxattn.NewFloat32(cos, maxLen, D/2),
			SinCache:            onnxattn.NewFloat32(sin, maxLen, D/2),
		}, onnxattn.GQAWant{SharedBuffer: true})
		if err != nil {
			panic(err)
		}
		// The value rows are 1, 2, 3 times one row: the output's last
		// element is a weighted mean of 1, 2, 3 (the newer keys, turned
		// like the query, weigh a little more).
		fmt.Printf("step %d: output %v, last element %.3f\n", step, out.Output.Shape, out.Output.F32[H*D-1])
	}
	// Output:
	// step 0: output [1 1 32], last element 1.000
	// step 1: output [1 1 32], last element 1.517
	// step 2: output [1 1 32], last element 2.068
}
