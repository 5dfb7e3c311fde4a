package attention

import (
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/kernel"
	"github.com/glancelab/attention/internal/testutil"
)

// Pairing the block path's tasks (batch_pair.go) changes no bit: every
// block of sixteen query rows of a call gets the output and LSE it gets
// when it is the only block of a call of its own (no other task to pair
// with), its causal frontier kept by CausalShift (a last block of fewer
// rows is never paired). On every implementation
// (the tasks pair on avx512 only), with key counts that end inside tiles
// of both tasks of a pair or of one only, rows cut into chunks, the options of the block path's
// score stage, and keys and values in tensors or in a KVCache of each type
// (whose 16-bit rows a pair widens once for both). With -short, where
// tasks do not pair (and a block in a call runs as it runs alone), each
// shape and options take one of the ways of passing keys and values,
// turning with them.
func TestBatchedPairsChangeNoBits(t *testing.T) {
	type options struct {
		name string
		set  func(o *BatchOptions, H int)
	}
	opts := []options{
		{"none", func(o *BatchOptions, H int) {}},
		{"causal", func(o *BatchOptions, H int) { o.Causal = true }},
		{"causal-shifted", func(o *BatchOptions, H int) { o.Causal, o.CausalShift = true, -20 }},
		{"causal-window", func(o *BatchOptions, H int) { o.Causal, o.Window = true, 50 }},
		{"causal-softcap-alibi-sinks", func(o *BatchOptions, H int) {
			o.Causal, o.Softcap = true, 5
			o.ALiBi, o.Sinks = make([]float32, H), make([]float32, H)
			for h := range H {
				o.ALiBi[h], o.Sinks[h] = -0.1/float32(h+1), float32(h)-0.5
			}
		}},
	}
	const B, H = 2, 2
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := NewBatched(1)
		defer e.Close()
		r := testutil.Rand(61)
		for _, Tq := range []int{32, 37, 48, 64} {
			Tks := []int{1, 31, 150, 300}
			if kernel.PairedBlocks() {
				// Past splitKeys (1024) the rows go in chunks: 1100 and
				// 2100 end inside a chunk's first tile and its last.
				// Only where tasks pair: elsewhere it is the same
				// check at eight times the cost (15 s with the generic
				// kernels).
				Tks = append(Tks, 1100, 2100)
			}
			for _, Tk := range Tks {
				for _, d := range []int{24, 64} {
					q := testutil.Floats(r, B*H*Tq*d, 1)
					k := testutil.Floats(r, B*H*Tk*d, 1)
					v := testutil.Floats(r, B*H*Tk*d, 1)
					qt, _ := NewTensor(B, H, Tq, d, q)
					kt, _ := NewTensor(B, H, Tk, d, k)
					vt, _ := NewTensor(B, H, Tk, d, v)
					caches := map[string]*KVCache{"tensors": nil}
					for _, typ := range []KVType{F32, F16, BF16, I8} {
						c, err := NewKVCache(B, H, Tk, d, d, typ)
						if err != nil {
							t.Fatal(err)
						}
						for b := range B {
							if err := c.Append(b, k[b*H*Tk*d:(b+1)*H*Tk*d], v[b*H*Tk*d:(b+1)*H*Tk*d], Tk); err != nil {
								t.Fatal(err)
							}
						}
						caches[typ.String()] = c
					}
					for oi, o := range opts {
						for via, c := range caches {
							if testing.Short() && !kernel.PairedBlocks() && via != []string{"tensors", "f32", "f16", "bf16"}[(oi+Tq+Tk+d)%4] {
								continue
							}
							name := fmt.Sprintf("Tq=%d Tk=%d d=%d %s %s", Tq, Tk, d, o.name, via)
							attend := func(dst BatchOutputs, q Tensor, opt *BatchOptions) error {
								if c == nil {
									return e.Attend(dst, q, kt, vt, opt)
								}
								return e.AttendCache(dst, q, c, opt)
							}
							var opt BatchOptions
							o.set(&opt, H)
							out := make([]float32, B*H*Tq*d)
							lse := make([]float32, B*H*Tq)
							ot, _ := NewTensor(B, H, Tq, d, out)
							if err := attend(BatchOutputs{Out: ot, LSE: lse}, qt, &opt); err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							// A last block of fewer rows is never paired; alone
							// it would take the row path.
							for i0 := 0; i0+kernel.BlockRows <= Tq; i0 += kernel.BlockRows {
								rows := kernel.BlockRows
								one := opt
								one.CausalShift = opt.CausalShift + i0 + rows - Tq
								qv, _ := NewTensorStrided(B, H, rows, d, H*Tq*d, Tq*d, d, q[i0*d:])
								o1 := make([]float32, B*H*rows*d)
								l1 := make([]float32, B*H*rows)
								ov, _ := NewTensor(B, H, rows, d, o1)
								if err := attend(BatchOutputs{Out: ov, LSE: l1}, qv, &one); err != nil {
									t.Fatalf("%s rows %d..: %v", name, i0, err)
								}
								for b := range B {
									for h := range H {
										for i := range rows {
											got, want := ot.Row(b, h, i0+i), ov.Row(b, h, i)
											for c := range got {
												if math.Float32bits(got[c]) != math.Float32bits(want[c]) {
													t.Fatalf("%s: out[%d][%d][%d][%d] = %v, alone %v", name, b, h, i0+i, c, got[c], want[c])
												}
											}
											g, w := lse[(b*H+h)*Tq+i0+i], l1[(b*H+h)*rows+i]
											if math.Float32bits(g) != math.Float32bits(w) {
												t.Fatalf("%s: lse[%d][%d][%d] = %v, alone %v", name, b, h, i0+i, g, w)
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	})
}

// taskHead gives task(t)'s first row and lead for every task of plans with
// grouped heads, blocks that span heads and a last block of fewer rows.
func TestTaskHead(t *testing.T) {
	for _, s := range []struct{ B, H, Hkv, Tq int }{{1, 1, 1, 1}, {2, 4, 2, 7}, {2, 8, 2, 16}, {3, 6, 3, 37}, {1, 32, 8, 4}} {
		const Tk, d = 5, 4
		q := make([]float32, s.B*s.H*s.Tq*d)
		kv := make([]float32, s.B*s.Hkv*Tk*d)
		qt, _ := NewTensor(s.B, s.H, s.Tq, d, q)
		kt, _ := NewTensor(s.B, s.Hkv, Tk, d, kv)
		out := make([]float32, len(q))
		ot, _ := NewTensor(s.B, s.H, s.Tq, d, out)
		p, err := newBatchJob(BatchOutputs{Out: ot}, qt, kt, kt, &BatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.tasks() {
			tk := p.task(i)
			b, h, i0, lead := p.taskHead(i)
			if b != tk.b || h != tk.h || i0 != tk.i0 || lead != tk.lead() {
				t.Fatalf("%+v task %d: taskHead = %d, %d, %d, %d; task gives %d, %d, %d, %d", s, i, b, h, i0, lead, tk.b, tk.h, tk.i0, tk.lead())
			}
		}
	}
}
