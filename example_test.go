package attention_test

import (
	"fmt"
	"math"
	"sync"

	"github.com/glancelab/attention"
)

// The seed example: scores [2, 1, 0] become weights that sum to one.
func ExampleSoftmax() {
	scores := []float32{2, 1, 0}
	weights := make([]float32, len(scores))
	attention.Softmax(weights, scores)
	fmt.Printf("%.3f\n", weights)

	// -Inf masks a position: its weight is exactly zero.
	attention.Softmax(weights, []float32{2, float32(math.Inf(-1)), 0})
	fmt.Printf("%.3f\n", weights)
	// Output:
	// [0.665 0.245 0.090]
	// [0.881 0.000 0.119]
}

// One decoder step with dot-product scores: keys chosen so the scores are
// [2, 1, 0], values [4, 2, 0], so the context is 0.665·4 + 0.245·2 = 3.15.
func ExampleMemory_Attend() {
	keys, _ := attention.NewMatrix(3, 1, []float32{2, 1, 0})
	values, _ := attention.NewMatrix(3, 1, []float32{4, 2, 0})
	mem, err := attention.NewMemory(attention.ScoreDot(), keys, values)
	if err != nil {
		panic(err)
	}
	var ws attention.Workspace // reuse across steps: no allocations
	ctx := make([]float32, mem.ValueDim())
	weights := make([]float32, mem.Len())
	if err := mem.Attend(ctx, weights, []float32{1}, &ws); err != nil {
		panic(err)
	}
	fmt.Printf("weights %.3f context %.2f\n", weights, ctx)
	// Output: weights [0.665 0.245 0.090] context [3.15]
}

// Three beams of a beam search step against one source sequence, in one
// pass over its keys and values: the seed example's keys and values, asked
// with the queries 1, 0 and -1, one row per beam.
func ExampleMemory_AttendMany() {
	keys, _ := attention.NewMatrix(3, 1, []float32{2, 1, 0})
	values, _ := attention.NewMatrix(3, 1, []float32{4, 2, 0})
	mem, err := attention.NewMemory(attention.ScoreDot(), keys, values)
	if err != nil {
		panic(err)
	}
	const beams = 3
	queries, _ := attention.NewMatrix(beams, mem.QueryDim(), []float32{1, 0, -1})
	var ws attention.Workspace // reuse across steps: no allocations
	ctx := make([]float32, beams*mem.ValueDim())
	weights := make([]float32, beams*mem.Len()) // or nil
	if err := mem.AttendMany(ctx, weights, queries, &ws); err != nil {
		panic(err)
	}
	for b := range beams {
		fmt.Printf("beam %d: weights %.3f context %.3f\n", b, weights[b*mem.Len():(b+1)*mem.Len()], ctx[b])
	}
	// Output:
	// beam 0: weights [0.665 0.245 0.090] context 3.150
	// beam 1: weights [0.333 0.333 0.333] context 2.000
	// beam 2: weights [0.090 0.245 0.665] context 0.850
}

// encoder returns three encoder states of dimension 2 and their values.
func encoder() (keys, values attention.Matrix) {
	keys, _ = attention.NewMatrix(3, 2, []float32{
		1, 0, // "the"
		0, 1, // "cat"
		1, 1, // "sat"
	})
	values, _ = attention.NewMatrix(3, 2, []float32{
		1, 0,
		0, 1,
		0.5, 0.5,
	})
	return keys, values
}

func step(mem *attention.Memory, query []float32) {
	ctx := make([]float32, mem.ValueDim())
	weights := make([]float32, mem.Len())
	if err := mem.Attend(ctx, weights, query, nil); err != nil {
		panic(err)
	}
	fmt.Printf("%s: weights %.3f context %.3f\n", mem.Scorer(), weights, ctx)
}

// Scaled dot-product scores, sᵀh/√d, with a keep-mask that hides "the".
func ExampleScoreScaledDot() {
	keys, values := encoder()
	mem, err := attention.NewMemory(attention.ScoreScaledDot(), keys, values,
		attention.WithKeepMask([]bool{false, true, true}))
	if err != nil {
		panic(err)
	}
	step(mem, []float32{2, 0})
	// Output: scaled-dot: weights [0.000 0.196 0.804] context [0.402 0.598]
}

// The bilinear ("general") score sᵀ W h; W·h is computed once per key in
// NewMemory.
func ExampleScoreGeneral() {
	keys, values := encoder()
	W, _ := attention.NewMatrix(2, 2, []float32{
		0, 1, // a query along x looks for keys along y
		1, 0,
	})
	general, err := attention.ScoreGeneral(W)
	if err != nil {
		panic(err)
	}
	mem, err := attention.NewMemory(general, keys, values)
	if err != nil {
		panic(err)
	}
	step(mem, []float32{2, 0})
	// Output: general: weights [0.063 0.468 0.468] context [0.298 0.702]
}

// The additive (Bahdanau) score vᵀ tanh(W s + U h), with a 3-dimensional
// attention layer; U·h is computed once per key in NewMemory.
func ExampleScoreAdditive() {
	keys, values := encoder()
	W, _ := attention.NewMatrix(3, 2, []float32{1, 0, 0, 1, 1, 1})
	U, _ := attention.NewMatrix(3, 2, []float32{1, 0, 0, 1, -1, 1})
	v := []float32{1, -1, 0.5}
	additive, err := attention.ScoreAdditive(W, U, v)
	if err != nil {
		panic(err)
	}
	mem, err := attention.NewMemory(additive, keys, values)
	if err != nil {
		panic(err)
	}
	step(mem, []float32{0.5, -0.5})
	// Output: additive: weights [0.470 0.257 0.273] context [0.607 0.393]
}

// Luong's concat score vᵀ tanh(W [s; h]): W's first columns take the query,
// the rest the key. Only the first two keys are valid here.
func ExampleScoreConcat() {
	keys, values := encoder()
	W, _ := attention.NewMatrix(2, 4, []float32{
		1, 0, 1, 0,
		0, 1, 0, -1,
	})
	concat, err := attention.ScoreConcat(W, []float32{1, 1})
	if err != nil {
		panic(err)
	}
	mem, err := attention.NewMemory(concat, keys, values, attention.WithValidLength(2))
	if err != nil {
		panic(err)
	}
	step(mem, []float32{1, 1})
	// Output: concat: weights [0.724 0.276 0.000] context [0.724 0.276]
}

// Batched attention over views into one fused projection output: each
// token's row holds [q head 0 | q head 1 | k | v] (d = 1), and both query
// heads share the single key/value head (multi-query attention). Head 0
// asks with q = 1, so its scores are the keys [2, 1, 0]; head 1 asks with
// q = 0 and weighs the keys it sees alike. Causal: token i sees keys 0..i,
// and token 2 of head 0 is the seed example again, 3.15. Besides the
// output, BatchOutputs asks here for the weights.
func ExampleBatched_Attend() {
	const T = 3
	qkv := []float32{
		1, 0, 2, 4, // token 0
		1, 0, 1, 2, // token 1
		1, 0, 0, 0, // token 2
	}
	const row = 4 // floats per token
	q, _ := attention.NewTensorStrided(1, 2, T, 1, T*row, 1, row, qkv)
	k, _ := attention.NewTensorStrided(1, 1, T, 1, T*row, 0, row, qkv[2:])
	v, _ := attention.NewTensorStrided(1, 1, T, 1, T*row, 0, row, qkv[3:])
	outData := make([]float32, 2*T)
	out, _ := attention.NewTensor(1, 2, T, 1, outData)
	wData := make([]float32, 2*T*T) // optional: the weights, [1][2][T][T]
	w, _ := attention.NewTensor(1, 2, T, T, wData)

	e := attention.NewBatched(1) // long-lived: its scratch is reused
	defer e.Close()
	dst := attention.BatchOutputs{Out: out, Weights: &w}
	if err := e.Attend(dst, q, k, v, &attention.BatchOptions{Scale: 1, Causal: true}); err != nil {
		panic(err)
	}
	fmt.Printf("head 0: %.3f\nhead 1: %.3f\n", outData[:T], outData[T:])
	fmt.Printf("weights of head 0, token 2: %.3f\n", w.Row(0, 0, 2))
	// Output:
	// head 0: [4.000 3.462 3.150]
	// head 1: [4.000 3.000 2.000]
	// weights of head 0, token 2: [0.665 0.245 0.090]
}

// A decode step with two workers, whose idle workers park at once instead
// of polling for the next call (DefaultIdleSpin): for a service that would
// rather give the cores back between steps than have the next step wait
// for its helpers to wake. The results are the same bits either way. Here
// one query head reads the seed example's keys [2, 1, 0] over 39999 tokens,
// cut into chunks the two workers share; the keys repeat, so the weights
// do too, and the context is the seed example's 3.15.
func ExampleBatched_SetIdleSpin() {
	const T = 39999
	kData, vData := make([]float32, T), make([]float32, T)
	for j := range T {
		kData[j] = float32(2 - j%3)     // 2, 1, 0, 2, 1, 0, ...
		vData[j] = float32(4 - 2*(j%3)) // 4, 2, 0, ...
	}
	q, _ := attention.NewTensor(1, 1, 1, 1, []float32{1})
	k, _ := attention.NewTensor(1, 1, T, 1, kData)
	v, _ := attention.NewTensor(1, 1, T, 1, vData)
	outData := make([]float32, 1)
	out, _ := attention.NewTensor(1, 1, 1, 1, outData)

	e := attention.NewBatched(2)
	defer e.Close()
	e.SetIdleSpin(0)
	if err := e.Attend(attention.BatchOutputs{Out: out}, q, k, v, &attention.BatchOptions{Scale: 1}); err != nil {
		panic(err)
	}
	fmt.Printf("context: %.2f\n", outData[0])
	// Output:
	// context: 3.15
}

// A model's layer loop on two workers: each layer wakes the workers as
// it begins, so that they are polling, not parked, when its attention
// comes after the work before it (the projections, here left out). Each
// layer's single query head reads the seed example's keys [2, 1, 0] and
// values [4, 2, 0], scaled by the layer's number; the context scales with
// them.
func ExampleBatched_Wake() {
	e := attention.NewBatched(2)
	defer e.Close()
	q, _ := attention.NewTensor(1, 1, 1, 1, []float32{1})
	k, _ := attention.NewTensor(1, 1, 3, 1, []float32{2, 1, 0})
	outData := make([]float32, 1)
	out, _ := attention.NewTensor(1, 1, 1, 1, outData)
	for layer := 1; layer <= 3; layer++ {
		e.Wake()
		// ... the layer's projections would run here ...
		v, _ := attention.NewTensor(1, 1, 3, 1, []float32{4 * float32(layer), 2 * float32(layer), 0})
		if err := e.Attend(attention.BatchOutputs{Out: out}, q, k, v, &attention.BatchOptions{Scale: 1}); err != nil {
			panic(err)
		}
		fmt.Printf("layer %d: context %.2f\n", layer, outData[0])
	}
	// Output:
	// layer 1: context 3.15
	// layer 2: context 6.30
	// layer 3: context 9.45
}

// A framework that keeps worker goroutines of its own runs a Batched
// call's work on them: here a pool of two goroutines fed by a channel, and
// a runner that sends it the tasks and waits for them all. One query head
// reads 39999 keys repeating the seed example's [2, 1, 0], cut into
// chunks that the runner's two tasks share (a call of less work runs on
// the caller alone, without the runner); the context is the seed
// example's 3.15, and the bits are those of one worker.
func ExampleNewBatchedRunner() {
	work := make(chan func())
	for range 2 {
		go func() {
			for f := range work {
				f()
			}
		}()
	}
	defer close(work)
	asked := 0
	run := func(n int, task func(i int)) {
		asked = n
		var wg sync.WaitGroup
		wg.Add(n)
		for i := range n {
			work <- func() { defer wg.Done(); task(i) }
		}
		wg.Wait() // every task has returned
	}

	const T = 39999
	kData, vData := make([]float32, T), make([]float32, T)
	for j := range T {
		kData[j] = float32(2 - j%3)     // 2, 1, 0, 2, 1, 0, ...
		vData[j] = float32(4 - 2*(j%3)) // 4, 2, 0, ...
	}
	q, _ := attention.NewTensor(1, 1, 1, 1, []float32{1})
	k, _ := attention.NewTensor(1, 1, T, 1, kData)
	v, _ := attention.NewTensor(1, 1, T, 1, vData)
	attend := func(e *attention.Batched) float32 {
		defer e.Close()
		outData := make([]float32, 1)
		out, _ := attention.NewTensor(1, 1, 1, 1, outData)
		if err := e.Attend(attention.BatchOutputs{Out: out}, q, k, v, &attention.BatchOptions{Scale: 1}); err != nil {
			panic(err)
		}
		return outData[0]
	}
	got := attend(attention.NewBatchedRunner(2, run))
	fmt.Printf("context: %.2f, tasks asked: %d\n", got, asked)
	fmt.Println("same bits as one worker:", math.Float32bits(got) == math.Float32bits(attend(attention.NewBatched(1))))
	// Output:
	// context: 3.15, tasks asked: 2
	// same bits as one worker: true
}

// The seed example's keys [2, 1, 0] attended in two chunks, [2] and
// [1, 0], each call also writing its rows' log-sum-exp; MergeAttention
// then combines the chunks into attention over all three keys: the context
// 3.15 again, and log(e² + e¹ + e⁰) as the LSE.
func ExampleMergeAttention() {
	e := attention.NewBatched(1)
	defer e.Close()
	q, _ := attention.NewTensor(1, 1, 1, 1, []float32{1})
	keys, values := []float32{2, 1, 0}, []float32{4, 2, 0}
	attend := func(j0, j1 int) ([]float32, []float32) {
		k, _ := attention.NewTensor(1, 1, j1-j0, 1, keys[j0:j1])
		v, _ := attention.NewTensor(1, 1, j1-j0, 1, values[j0:j1])
		outData, lse := make([]float32, 1), make([]float32, 1)
		out, _ := attention.NewTensor(1, 1, 1, 1, outData)
		if err := e.Attend(attention.BatchOutputs{Out: out, LSE: lse}, q, k, v, &attention.BatchOptions{Scale: 1}); err != nil {
			panic(err)
		}
		return outData, lse
	}
	out, lse := attend(0, 1)
	out2, lse2 := attend(1, 3)
	fmt.Printf("chunks: %.3f (LSE %.4f), %.3f (LSE %.4f)\n", out[0], lse[0], out2[0], lse2[0])
	if err := attention.MergeAttention(out, lse, out2, lse2, 1); err != nil {
		panic(err)
	}
	fmt.Printf("merged: %.3f (LSE %.4f)\n", out[0], lse[0])
	// Output:
	// chunks: 4.000 (LSE 2.0000), 1.462 (LSE 1.3133)
	// merged: 3.150 (LSE 2.4076)
}

// A cache of 16-bit keys and values for one sequence with two KV heads:
// each decode step appends its token's rows, and the rows of speculative
// tokens the model rejects are truncated away.
func ExampleKVCache() {
	const kvHeads, dk, dv = 2, 4, 4
	cache, err := attention.NewKVCache(1, kvHeads, 1024, dk, dv, attention.F16)
	if err != nil {
		panic(err)
	}
	// One token: k and v laid out [kvHeads][rows][d].
	k := []float32{1, 2, 3, 4, 0.1, 0.2, 0.3, 0.4}
	v := []float32{-1, -2, -3, -4, 5, 6, 7, 8}
	if err := cache.Append(0, k, v, 1); err != nil {
		panic(err)
	}
	// Three speculative tokens, of which the model accepts one.
	draft := make([]float32, kvHeads*3*dk)
	if err := cache.Append(0, draft, draft, 3); err != nil {
		panic(err)
	}
	fmt.Println("len", cache.Len(0))
	if err := cache.Truncate(0, 2); err != nil {
		panic(err)
	}
	fmt.Println("len", cache.Len(0), "next position", cache.Pos(0))

	// The stored rows are the nearest float16 values.
	row := make([]float32, dk)
	cache.Key(row, 0, 1, 0)
	fmt.Println(row)
	// Output:
	// len 4
	// len 2 next position 2
	// [0.099975586 0.19995117 0.30004883 0.39990234]
}

// An int8 cache as ONNX Runtime keeps one (GroupQueryAttention with
// kv_cache_bit_width 8): the past rows it wrote go in as they are, with its
// k_scale and v_scale (here per tensor; per channel is kvHeads·d scales),
// and a new token's rows are quantised by the same rule.
func ExampleWithScales() {
	const kvHeads, d = 1, 4
	cache, err := attention.NewKVCache(1, kvHeads, 8, d, d, attention.I8,
		attention.WithScales([]float32{0.5}, []float32{0.25}))
	if err != nil {
		panic(err)
	}
	// ONNX Runtime's present_key and present_value of one batch entry,
	// [kvHeads][rows][d] int8: two past tokens.
	pastK := []int8{2, -4, 6, 127, 1, 0, -128, 3}
	pastV := []int8{4, 4, -8, 0, 1, 2, 3, 4}
	if err := cache.AppendI8(0, pastK, pastV, 2); err != nil {
		panic(err)
	}
	// A new token: x/s rounded to nearest even, clamped to [−128, 127].
	if err := cache.Append(0, []float32{0.75, -1.25, 100, 0.1}, []float32{1, 2, 3, 4}, 1); err != nil {
		panic(err)
	}
	row := make([]float32, d)
	for i := range cache.Len(0) {
		cache.Key(row, 0, 0, i)
		fmt.Println(row)
	}
	// Output:
	// [1 -2 3 63.5]
	// [0.5 0 -64 1.5]
	// [1 -1 63.5 0]
}

// A cache over rows another runtime keeps: ONNX Runtime's float16
// present_key and present_value ([batch][kvHeads][capacity][d] binary16),
// held where they are. Hold makes the cache hold the three rows written
// there; Append stores the next in the same slices; AttendCache reads all
// four as float16, with no copy of the past.
func ExampleWithStorage16() {
	const kvHeads, capacity, d = 1, 4, 2
	// Binary16 bits: 0x3c00 is 1, 0x4000 is 2, 0x4400 is 4, 0 is 0.
	k := make([]uint16, kvHeads*capacity*d) // keys all 0: every score the same
	v := []uint16{0x3c00, 0x3c00, 0x4000, 0x4000, 0x4400, 0, 0, 0}
	cache, err := attention.NewKVCache(1, kvHeads, capacity, d, d, attention.F16, attention.WithStorage16(k, v))
	if err != nil {
		panic(err)
	}
	if err := cache.Hold(0, 3); err != nil {
		panic(err)
	}
	if err := cache.Append(0, []float32{0, 0}, []float32{1, 1}, 1); err != nil {
		panic(err)
	}
	fmt.Printf("held %d; the new row in the caller's slice: %#04x %#04x\n", cache.Len(0), v[6], v[7])
	q, _ := attention.NewTensor(1, 1, 1, d, []float32{0.5, -0.5})
	out := make([]float32, d)
	ot, _ := attention.NewTensor(1, 1, 1, d, out)
	e := attention.NewBatched(1)
	defer e.Close()
	if err := e.AttendCache(attention.BatchOutputs{Out: ot}, q, cache, nil); err != nil {
		panic(err)
	}
	fmt.Println(out) // the mean of the four value rows
	// Output:
	// held 4; the new row in the caller's slice: 0x3c00 0x3c00
	// [2 1]
}

// A decode step with rotary position embeddings: the token's query rows
// are turned by its position in place, its key rows turned as
// AppendRotary stores them, and the query attends every row held: the
// score of a key then depends on how far back it is, so the nearer rows
// (their values 1, then 2) weigh more than the first (value 0).
func ExampleRotary() {
	const heads, kvHeads, d = 2, 1, 4
	rot, err := attention.NewRotary(d, 4096, 10000, attention.RotateHalf)
	if err != nil {
		panic(err)
	}
	cache, _ := attention.NewKVCache(1, kvHeads, 4096, d, d, attention.F32)
	e := attention.NewBatched(1)
	defer e.Close()
	for step := range 3 {
		pos := cache.Pos(0)
		q := []float32{1, 0, 0, 0, 0, 1, 0, 0} // [heads][d]
		qt, _ := attention.NewTensor(1, heads, 1, d, q)
		if err := rot.Apply(qt, []int{pos}); err != nil {
			panic(err)
		}
		k := []float32{1, 0, 0, 0}
		v := []float32{float32(step), 0, 0, 0}
		if err := cache.AppendRotary(0, k, v, 1, rot); err != nil {
			panic(err)
		}
		out := make([]float32, heads*d)
		ot, _ := attention.NewTensor(1, heads, 1, d, out)
		if err := e.AttendCache(attention.BatchOutputs{Out: ot}, qt, cache, nil); err != nil {
			panic(err)
		}
		fmt.Printf("position %d: head 0 context %.3f\n", pos, out[0])
	}
	// Output:
	// position 0: head 0 context 0.000
	// position 1: head 0 context 0.557
	// position 2: head 0 context 1.222
}

// A decode loop over a 16-bit cache: each step appends the new token's key
// and value rows, then its query attends every row held so far, read in
// place. Two query heads share the one key/value head (grouped-query
// attention).
func ExampleBatched_AttendCache() {
	const heads, kvHeads, d = 2, 1, 4
	cache, err := attention.NewKVCache(1, kvHeads, 16, d, d, attention.BF16)
	if err != nil {
		panic(err)
	}
	e := attention.NewBatched(1)
	defer e.Close()
	qs := make([]float32, heads*d)
	outs := make([]float32, heads*d)
	q, _ := attention.NewTensor(1, heads, 1, d, qs)
	out, _ := attention.NewTensor(1, heads, 1, d, outs)
	for step := range 3 {
		// The model's projections of token `step` (here made up): its key
		// and value for the cache, and a query per head.
		x := float32(step + 1)
		k := []float32{x, 0, 0, 1}
		v := []float32{0, x, 0, 0}
		if err := cache.Append(0, k, v, 1); err != nil {
			panic(err)
		}
		copy(qs, []float32{1, 0, 0, 0, 0, 0, 0, 1}) // head 0 looks for large keys; head 1 at all alike
		if err := e.AttendCache(attention.BatchOutputs{Out: out}, q, cache, &attention.BatchOptions{Causal: true}); err != nil {
			panic(err)
		}
		fmt.Printf("step %d, %d keys: head 0 %.3f, head 1 %.3f\n", step, cache.Len(0), outs[1], outs[d+1])
	}
	// Output:
	// step 0, 1 keys: head 0 1.000, head 1 1.000
	// step 1, 2 keys: head 0 1.622, head 1 1.500
	// step 2, 3 keys: head 0 2.320, head 1 2.000
}

// A seq2seq source kept in an f16 cache: the encoder's keys and values
// are appended once, and every decoder step attends them in place. The
// seed example's rows (2, 1, 0 and 4, 2, 0) are exact in binary16, so the
// step gives ExampleMemory_Attend's context.
func ExampleNewMemoryCache() {
	const srcLen, dk, dv = 3, 1, 1
	enc, err := attention.NewKVCache(1, 1, srcLen, dk, dv, attention.F16)
	if err != nil {
		panic(err)
	}
	if err := enc.Append(0, []float32{2, 1, 0}, []float32{4, 2, 0}, srcLen); err != nil {
		panic(err)
	}
	mem, err := attention.NewMemoryCache(attention.ScoreDot(), enc, 0, 0)
	if err != nil {
		panic(err)
	}
	var ws attention.Workspace
	ctx := make([]float32, mem.ValueDim())
	for _, state := range [][]float32{{1}, {0}} { // two decoder steps
		if err := mem.Attend(ctx, nil, state, &ws); err != nil {
			panic(err)
		}
		fmt.Printf("context %.2f\n", ctx)
	}
	// Output:
	// context [3.15]
	// context [2.00]
}
