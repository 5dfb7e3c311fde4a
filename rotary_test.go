package attention

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/calib"
	"github.com/glancelab/attention/internal/testutil"
)

// turnRef is the rotary turn of one row written from the formula: pair i
// is (i, i+dim/2) or (2i, 2i+1), each product and sum rounded to float32.
func turnRef(row []float32, dim int, layout RotaryLayout, cos, sin []float32) {
	half := dim / 2
	for i := range half {
		a, b := i, i+half
		if layout == RotateInterleaved {
			a, b = 2*i, 2*i+1
		}
		c, s := cos[i], sin[i]
		x1, x2 := row[a], row[b]
		p1, p2, p3, p4 := float32(c*x1), float32(s*x2), float32(s*x1), float32(c*x2)
		row[a], row[b] = p1-p2, p3+p4
	}
}

// TestRotaryApply turns views of every shape and stride on every
// implementation: the bits of the formula row by row, the elements past
// Dim and the rows outside the view untouched.
func TestRotaryApply(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(5)
		for _, layout := range []RotaryLayout{RotateHalf, RotateInterleaved} {
			for _, tc := range []struct{ B, H, T, d, dim, pad int }{
				{1, 1, 1, 2, 2, 0}, {1, 32, 1, 128, 128, 0}, {2, 8, 3, 64, 32, 5}, {1, 3, 5, 80, 80, 1},
				{2, 4, 7, 96, 64, 0}, {1, 2, 2, 34, 34, 3}, {1, 40, 1, 128, 128, 7}, {3, 1, 9, 6, 4, 0},
			} {
				t.Run(fmt.Sprintf("%v/%+v", layout, tc), func(t *testing.T) {
					rot, err := NewRotary(tc.dim, 64, 10000, layout)
					if err != nil {
						t.Fatal(err)
					}
					// [B][T][H][d] with padding after each head: the
					// projection layout, heads strided.
					hs := tc.d + tc.pad
					data := testutil.Floats(r, tc.B*tc.T*tc.H*hs, 3)
					x, err := NewTensorStrided(tc.B, tc.H, tc.T, tc.d, tc.T*tc.H*hs, hs, tc.H*hs, data)
					if err != nil {
						t.Fatal(err)
					}
					pos := make([]int, tc.B*tc.T)
					for i := range pos {
						pos[i] = r.IntN(64)
					}
					want := append([]float32(nil), data...)
					wt, _ := NewTensorStrided(tc.B, tc.H, tc.T, tc.d, tc.T*tc.H*hs, hs, tc.H*hs, want)
					for b := range tc.B {
						for h := range tc.H {
							for i := range tc.T {
								p := pos[b*tc.T+i]
								cos, sin := rot.angles(p)
								turnRef(wt.Row(b, h, i), tc.dim, layout, cos, sin)
							}
						}
					}
					if err := rot.Apply(x, pos); err != nil {
						t.Fatal(err)
					}
					if !sameRowBits(data, want) {
						for i := range data {
							if math.Float32bits(data[i]) != math.Float32bits(want[i]) {
								t.Fatalf("element %d: %v, want %v", i, data[i], want[i])
							}
						}
					}
					if n := testing.AllocsPerRun(10, func() { _ = rot.Apply(x, pos) }); n != 0 {
						t.Fatalf("Apply allocates %v times", n)
					}
				})
			}
		}
	})
}

// TestRotaryTable checks NewRotary's cosines and sines against float64,
// with and without Llama 3.1's scaling, and NewRotaryTable's view.
func TestRotaryTable(t *testing.T) {
	for _, llama := range []bool{false, true} {
		var opts []RotaryOption
		if llama {
			opts = append(opts, WithLlama3Scaling(8, 1, 4, 8192))
		}
		rot, err := NewRotary(128, 300, 500000, RotateHalf, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []int{0, 1, 17, 299} {
			for _, i := range []int{0, 1, 20, 40, 63} {
				w := math.Pow(500000, -float64(2*i)/128)
				if llama {
					// Llama 3.1's rule, written out: wavelengths above
					// 8192 divided by 8, below 2048 kept, blended between.
					switch wl := 2 * math.Pi / w; {
					case wl > 8192:
						w /= 8
					case wl >= 2048:
						s := (8192/wl - 1) / 3
						w = (1-s)*w/8 + s*w
					}
				}
				c, s := float32(math.Cos(float64(p)*w)), float32(math.Sin(float64(p)*w))
				if got := rot.cos[p*64+i]; math.Abs(float64(got-c)) > 1e-7 {
					t.Fatalf("llama %v: cos at %d, %d = %v, want %v", llama, p, i, got, c)
				}
				if got := rot.sin[p*64+i]; math.Abs(float64(got-s)) > 1e-7 {
					t.Fatalf("llama %v: sin at %d, %d = %v, want %v", llama, p, i, got, s)
				}
			}
		}
	}
	cos, sin := []float32{1, 0.5, 0, -1}, []float32{0, 0.5, 1, 0}
	rot, err := NewRotaryTable(cos, sin, 4, RotateInterleaved)
	if err != nil {
		t.Fatal(err)
	}
	cos[0] = 7 // read in place
	if rot.Positions() != 2 || rot.Dim() != 4 || rot.Layout() != RotateInterleaved || rot.cos[0] != 7 {
		t.Fatalf("table: %d positions, dim %d, %v, cos[0] %v", rot.Positions(), rot.Dim(), rot.Layout(), rot.cos[0])
	}
}

// TestRotaryErrors checks the constructors' and Apply's refusals, and
// that a refused Apply writes nothing.
func TestRotaryErrors(t *testing.T) {
	for _, tc := range []struct {
		name         string
		dim, pos     int
		theta        float64
		layout       RotaryLayout
		opts         []RotaryOption
		wantArgError bool
	}{
		{"odd dim", 3, 10, 10000, RotateHalf, nil, true},
		{"zero dim", 0, 10, 10000, RotateHalf, nil, true},
		{"no positions", 4, 0, 10000, RotateHalf, nil, true},
		{"theta 1", 4, 10, 1, RotateHalf, nil, true},
		{"theta NaN", 4, 10, math.NaN(), RotateHalf, nil, true},
		{"layout", 4, 10, 10000, 7, nil, true},
		{"llama low ≥ high", 4, 10, 10000, RotateHalf, []RotaryOption{WithLlama3Scaling(8, 4, 1, 8192)}, true},
		{"llama factor", 4, 10, 10000, RotateHalf, []RotaryOption{WithLlama3Scaling(0.5, 1, 4, 8192)}, true},
		{"huge table", 4, math.MaxInt / 2, 10000, RotateHalf, nil, true},
	} {
		if _, err := NewRotary(tc.dim, tc.pos, tc.theta, tc.layout, tc.opts...); !errors.Is(err, ErrArgument) {
			t.Errorf("%s: err %v, want ErrArgument", tc.name, err)
		}
	}
	if _, err := NewRotaryTable(make([]float32, 3), make([]float32, 3), 4, RotateHalf); !errors.Is(err, ErrShape) {
		t.Errorf("ragged table: err %v, want ErrShape", err)
	}
	if _, err := NewRotaryTable(make([]float32, 4), make([]float32, 2), 4, RotateHalf); !errors.Is(err, ErrShape) {
		t.Errorf("sin shorter: err %v, want ErrShape", err)
	}
	rot, _ := NewRotary(4, 8, 10000, RotateHalf)
	data := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	x, _ := NewTensor(1, 2, 1, 4, data)
	for _, tc := range []struct {
		name string
		x    Tensor
		pos  []int
		want error
	}{
		{"position 8", x, []int{8}, ErrArgument},
		{"position -1", x, []int{-1}, ErrArgument},
		{"two positions", x, []int{1, 2}, ErrShape},
		{"narrow rows", func() Tensor { v, _ := NewTensor(1, 2, 1, 2, data[:4]); return v }(), []int{1}, ErrShape},
		{"shared rows", func() Tensor { v, _ := NewTensorStrided(1, 2, 1, 4, 8, 2, 4, data); return v }(), []int{1}, ErrArgument},
	} {
		if err := rot.Apply(tc.x, tc.pos); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
		if data[0] != 1 || data[7] != 8 {
			t.Fatalf("%s: a refused Apply wrote %v", tc.name, data)
		}
	}
}

// TestAppendRotary checks that AppendRotary stores what Apply then Append
// store, on every type and implementation, through a ring that wraps, and
// its refusals.
func TestAppendRotary(t *testing.T) {
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(6)
		const heads, dk, dv, capacity = 3, 64, 32, 10
		for _, layout := range []RotaryLayout{RotateHalf, RotateInterleaved} {
			rot, _ := NewRotary(48, 40, 10000, layout)
			for _, typ := range kvTypes {
				got, _ := NewKVCache(1, heads, capacity, dk, dv, typ, WithRing())
				want, _ := NewKVCache(1, heads, capacity, dk, dv, typ, WithRing())
				for _, rows := range []int{3, 1, 5, 7, 1} {
					k, v := testutil.Floats(r, heads*rows*dk, 2), testutil.Floats(r, heads*rows*dv, 2)
					turned := append([]float32(nil), k...)
					kt, _ := NewTensorStrided(1, heads, rows, dk, 0, rows*dk, dk, turned)
					// Apply takes one position per (b, t) of a batch of
					// one: rows are the tokens.
					pos := make([]int, rows)
					for i := range pos {
						pos[i] = want.Pos(0) + i
					}
					if err := rot.Apply(kt, pos); err != nil {
						t.Fatal(err)
					}
					if err := want.Append(0, turned, v, rows); err != nil {
						t.Fatal(err)
					}
					if err := got.AppendRotary(0, k, v, rows, rot); err != nil {
						t.Fatal(err)
					}
				}
				if kvSnapshot(got) != kvSnapshot(want) {
					t.Fatalf("%v %v: AppendRotary stored other bytes than Apply and Append", layout, typ)
				}
				// Refusals change nothing.
				before := kvSnapshot(got)
				k, v := make([]float32, heads*dk*24), make([]float32, heads*dv*24)
				if err := got.AppendRotary(0, k, v, 24, rot); !errors.Is(err, ErrArgument) {
					t.Fatalf("past the table: err %v, want ErrArgument", err)
				}
				wide, _ := NewRotary(80, 40, 10000, layout)
				if err := got.AppendRotary(0, k[:heads*dk], v[:heads*dv], 1, wide); !errors.Is(err, ErrShape) {
					t.Fatalf("wider than dk: err %v, want ErrShape", err)
				}
				if err := got.AppendRotary(0, k[:heads*dk], v[:heads*dv], 1, nil); !errors.Is(err, ErrArgument) {
					t.Fatalf("nil Rotary: err %v, want ErrArgument", err)
				}
				if kvSnapshot(got) != before {
					t.Fatal("a refused AppendRotary changed the cache")
				}
				if n := testing.AllocsPerRun(5, func() {
					got.Truncate(0, got.Pos(0)-1)
					_ = got.AppendRotary(0, k[:heads*dk], v[:heads*dv], 1, rot)
				}); n != 0 {
					t.Fatalf("AppendRotary allocates %v times", n)
				}
			}
		}
	})
}

// BenchmarkRotary turns a decode step's query and key rows (32 and 8 heads
// of 128, one token) in place, through Apply on the two views (call=apply)
// and as one kernel call over the 40 rows (call=kernel): the rows' bytes
// a second (GB/s), and that over a read of the same rows from where they
// are (the L1) measured in the same run (read-fraction).
func BenchmarkRotary(b *testing.B) {
	const H, Hkv, d = 32, 8, 128
	testutil.ForEachImplB(b, func(b *testing.B) {
		for _, layout := range []RotaryLayout{RotateHalf, RotateInterleaved} {
			for _, call := range []string{"apply", "kernel"} {
				b.Run("layout="+layout.String()+"/call="+call, func(b *testing.B) {
					rot, err := NewRotary(d, 4096, 500000, layout)
					if err != nil {
						b.Fatal(err)
					}
					r := testutil.Rand(1)
					rows := testutil.Floats(r, (H+Hkv)*d, 1)
					qd, kd := rows[:H*d], rows[H*d:]
					q, _ := NewTensor(1, H, 1, d, qd)
					k, _ := NewTensor(1, Hkv, 1, d, kd)
					pos := []int{4000}
					cos, sin := rot.angles(pos[0])
					read := calib.ReadProbeOf([][]float32{rows})
					before := read.Rate(decodeReadSample)
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						if call == "kernel" {
							rot.kernel(rows, d, H+Hkv, cos, sin)
							continue
						}
						_ = rot.Apply(q, pos)
						_ = rot.Apply(k, pos)
					}
					b.StopTimer()
					rate := max(before, read.Rate(decodeReadSample))
					gbs := float64((H+Hkv)*d*4) * float64(b.N) / b.Elapsed().Seconds() / 1e9
					b.ReportMetric(gbs, "GB/s")
					b.ReportMetric(gbs/rate, "read-fraction")
				})
			}
		}
	})
}
