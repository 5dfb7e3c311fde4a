package onnxattn

import (
	"math"
	"testing"

	"github.com/glancelab/attention"
)

// concat refuses sizes that do not fit together instead of indexing out
// of range, and concatenates those that do.
func TestConcatChecksSizes(t *testing.T) {
	x, err := attention.NewTensor(2, 1, 2, 2, []float32{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		past []float32
		P    int
	}{
		{"past too short", make([]float32, 3), 1},
		{"past too long", make([]float32, 5), 1},
		{"total length overflows", nil, math.MaxInt},
		{"past length overflows", nil, math.MaxInt / 2},
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s: panic: %v", c.name, p)
				}
			}()
			if _, _, err := concat(c.past, x, c.P); err == nil {
				t.Errorf("%s: no error", c.name)
			}
		}()
	}
	ct, data, err := concat([]float32{-1, -2, -3, -4}, x, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{-1, -2, 1, 2, 3, 4, -3, -4, 5, 6, 7, 8}
	if B, H, T, hd := ct.Shape(); B != 2 || H != 1 || T != 3 || hd != 2 || len(data) != len(want) {
		t.Fatalf("concat: [%d %d %d %d] of %d", B, H, T, hd, len(data))
	}
	for i, w := range want {
		if data[i] != w {
			t.Fatalf("concat: %v, want %v", data, want)
		}
	}
}
