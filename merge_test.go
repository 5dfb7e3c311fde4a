package attention

import (
	"errors"
	"math"
	"testing"

	"github.com/glancelab/attention/internal/reference"
	"github.com/glancelab/attention/internal/testutil"
)

// MergeAttention against the oracle's merge of the same (exact) parts,
// special LSEs and NaN outputs included.
func TestMergeAttentionMatchesReference(t *testing.T) {
	r := testutil.Rand(61)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	specials := []float32{-inf, -inf, nan, inf, 88, -90, 1e30, -1e30}
	for _, dv := range []int{0, 1, 5} {
		n := 40
		out, out2 := testutil.Floats(r, n*dv, 3), testutil.Floats(r, n*dv, 3)
		lse, lse2 := testutil.Floats(r, n, 20), testutil.Floats(r, n, 20)
		for i := range n {
			if r.IntN(3) == 0 {
				lse[i] = specials[r.IntN(len(specials))]
			}
			if r.IntN(3) == 0 {
				lse2[i] = specials[r.IntN(len(specials))]
			}
			if dv > 0 && r.IntN(6) == 0 {
				out2[i*dv] = nan // read only when lse2 is not −Inf
			}
		}
		want := make([]reference.Result, n)
		for i := range n {
			want[i] = reference.Merge(exactPart(out[i*dv:(i+1)*dv], lse[i]), exactPart(out2[i*dv:(i+1)*dv], lse2[i]))
		}
		if err := MergeAttention(out, lse, out2, lse2, dv); err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if !testutil.Close(lse[i], w.LSE, w.LSEBound) {
				t.Fatalf("dv=%d row %d: lse %v, want %v ± %g", dv, i, lse[i], w.LSE, w.LSEBound)
			}
			for j, x := range out[i*dv : (i+1)*dv] {
				if !testutil.Close(x, w.Context[j], w.CtxBound[j]) {
					t.Fatalf("dv=%d row %d: out %v, want %v ± %v", dv, i, out[i*dv:(i+1)*dv], w.Context, w.CtxBound)
				}
			}
		}
	}
}

// exactPart is a partial result as the oracle sees one: exact, no bounds.
func exactPart(out []float32, lse float32) reference.Result {
	r := reference.Result{Context: make([]float64, len(out)), CtxBound: make([]float64, len(out)), LSE: float64(lse)}
	for j, x := range out {
		r.Context[j] = float64(x)
	}
	return r
}

func TestMergeAttentionErrors(t *testing.T) {
	buf := make([]float32, 64)
	out, lse, out2, lse2 := buf[0:6], buf[10:13], buf[20:26], buf[30:33]
	cases := []struct {
		name                 string
		out, lse, out2, lse2 []float32
		dv                   int
		shape                string // the operand a *ShapeError names, or "" for ErrArgument
	}{
		{"lse2 short", out, lse, out2, lse2[:2], 2, "len(lse2)"},
		{"lse short", out, lse[:2], out2, lse2, 2, "len(lse)"},
		{"lse and out short", out[:4], lse[:2], out2, lse2, 2, "len(lse2)"},
		{"out short", out[:5], lse, out2, lse2, 2, "len(out)"},
		{"out2 long", out, lse, buf[20:27], lse2, 2, "len(out2)"},
		{"dv negative", nil, lse, nil, lse2, -1, ""},
		{"out is out2", out, lse, out, lse2, 2, ""},
		{"lse in out", buf[0:6], buf[4:7], out2, lse2, 2, ""},
		{"lse is lse2", out, lse, out2, lse, 2, ""},
		{"out over lse2", buf[28:34], lse, out2, buf[30:33], 2, ""},
	}
	for _, c := range cases {
		for i := range buf {
			buf[i] = float32(i)
		}
		err := MergeAttention(c.out, c.lse, c.out2, c.lse2, c.dv)
		var se *ShapeError
		switch {
		case c.shape != "" && !(errors.As(err, &se) && errors.Is(err, ErrShape) && se.What == c.shape):
			t.Errorf("%s: %v, want a *ShapeError naming %s", c.name, err, c.shape)
		case c.shape == "" && !errors.Is(err, ErrArgument):
			t.Errorf("%s: %v, want ErrArgument", c.name, err)
		}
		for i, x := range buf {
			if x != float32(i) {
				t.Fatalf("%s: element %d written", c.name, i)
			}
		}
	}
	// Out2 and lse2 may overlap each other: they are only read.
	if err := MergeAttention(out, lse, buf[20:26], buf[24:27], 2); err != nil {
		t.Errorf("overlapping inputs: %v", err)
	}
}

func TestMergeAttentionAllocatesNothing(t *testing.T) {
	r := testutil.Rand(62)
	out, out2 := testutil.Floats(r, 64, 1), testutil.Floats(r, 64, 1)
	lse, lse2 := testutil.Floats(r, 8, 1), testutil.Floats(r, 8, 1)
	if n := testing.AllocsPerRun(10, func() { MergeAttention(out, lse, out2, lse2, 8) }); n != 0 {
		t.Errorf("%v allocations per MergeAttention, want 0", n)
	}
}
