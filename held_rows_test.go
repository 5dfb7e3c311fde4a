package attention

import (
	"testing"
)

// The kernels prefetch ahead within the slices they get, so the engine
// ends those slices at the rows that hold data (BenchmarkDecodeUnwritten
// shows what prefetching past them costs): a view's head at its last row,
// a cache's entry at the rows it holds.

func TestRowsFromEndsAtHead(t *testing.T) {
	// Two batch entries of three heads, each head room for 10 rows of 4
	// columns (row stride 6) of which the view uses 5.
	const rows, cols, rs, hs, bs = 5, 4, 6, 60, 180
	data := make([]float32, 2*bs)
	x, err := NewTensorStrided(2, 3, rows, cols, bs, hs, rs, data)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		for h := range 3 {
			for i := range rows {
				got := x.rowsFrom(b, h, i)
				want := data[b*bs+h*hs+i*rs : b*bs+h*hs+(rows-1)*rs+cols]
				if len(got) != len(want) || &got[0] != &want[0] {
					t.Fatalf("rowsFrom(%d, %d, %d): %d elements at offset %d, want %d", b, h, i, len(got), cap(data)-cap(got), len(want))
				}
			}
		}
	}
	empty, _ := NewTensor(1, 2, 0, 4, nil)
	if got := empty.rowsFrom(0, 1, 0); len(got) != 0 {
		t.Fatalf("rowsFrom of an empty view: %d elements", len(got))
	}
}

func TestHeldRows(t *testing.T) {
	const capacity, d = 8, 2
	for _, ring := range []bool{false, true} {
		var opts []KVCacheOption
		if ring {
			opts = append(opts, WithRing())
		}
		c, err := NewKVCache(2, 3, capacity, d, d, F16, opts...)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, b, want int) {
			t.Helper()
			if got := c.heldRows(b); got != want {
				t.Fatalf("ring %v, %s: heldRows(%d) = %d, want %d", ring, what, b, got, want)
			}
			for h := range 3 {
				if got := len(c.heldKeys16(b, h)); got != want*d {
					t.Fatalf("ring %v, %s: heldKeys16(%d, %d) has %d elements, want %d", ring, what, b, h, got, want*d)
				}
			}
		}
		check("new", 0, 0)
		rows := func(n int) []float32 { return make([]float32, 3*n*d) }
		if err := c.Append(1, rows(5), rows(5), 5); err != nil {
			t.Fatal(err)
		}
		check("5 appended", 1, 5)
		check("the other entry", 0, 0)
		if err := c.Truncate(1, 2); err != nil {
			t.Fatal(err)
		}
		check("truncated to 2", 1, 2)
		if !ring {
			continue
		}
		// 2 + 7 rows: positions 1 to 8 held, at physical rows 1 to 7 and 0.
		if err := c.Append(1, rows(7), rows(7), 7); err != nil {
			t.Fatal(err)
		}
		check("wrapped", 1, capacity)
		c.Reset(1)
		check("reset", 1, 0)
	}
}

func TestAsksFit(t *testing.T) {
	next := make([]float32, 10*64)
	// A tile of 10 keys of 64 columns asks for 640 elements of next.
	if got, tk := asksFit(next, 10, 64, 3); len(got) != len(next) || tk != 3 {
		t.Fatalf("10 rows of 64 for 10 keys: %d elements, task %d", len(got), tk)
	}
	if got, tk := asksFit(next, 11, 64, 3); got != nil || tk != -1 {
		t.Fatalf("10 rows of 64 for 11 keys: %d elements, task %d, want none", len(got), tk)
	}
	// Rows of 60 are asked for as 64 columns.
	if got, tk := asksFit(next[:10*60], 10, 60, 3); got != nil || tk != -1 {
		t.Fatalf("10 rows of 60 for 10 keys: %d elements, task %d, want none", len(got), tk)
	}
}
