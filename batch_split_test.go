package attention

import "testing"

// A task's chunks start at the first one a row has keys in: those before
// every row's window are neither computed nor folded.
func TestFirstChunk(t *testing.T) {
	const B, H, Hkv, Tk, d = 1, 4, 2, 5000, 4
	for _, c := range []struct {
		window, Tq int
		causal     bool
		first      int
	}{
		{0, 1, false, 0},
		{1000, 1, false, (Tk - 1000) / splitKeys},
		{Tk, 1, false, 0},
		// Three causal rows: the first row's window starts two keys
		// before the last row's.
		{2000, 3, true, (Tk - 2 - 2000) / splitKeys},
		{Tk - 2 - 3*splitKeys, 3, true, 3},
		{Tk - 1 - 3*splitKeys, 3, true, 2},
	} {
		q := make([]float32, B*H*c.Tq*d)
		kv := make([]float32, B*Hkv*Tk*d)
		qt, _ := NewTensor(B, H, c.Tq, d, q)
		kt, _ := NewTensor(B, Hkv, Tk, d, kv)
		ot, _ := NewTensor(B, H, c.Tq, d, make([]float32, len(q)))
		p, err := newBatchJob(BatchOutputs{Out: ot}, qt, kt, kt, &BatchOptions{Window: c.window, Causal: c.causal})
		if err != nil {
			t.Fatal(err)
		}
		for task := range p.tasks() {
			var tk batchTask
			p.taskInto(&tk, task)
			p.rowEnds(&tk)
			if got := tk.firstChunk(); got != c.first {
				t.Errorf("window %d, Tq %d: task %d's first chunk %d, want %d", c.window, c.Tq, task, got, c.first)
			}
			if n := tk.chunksOf(); n != (Tk+splitKeys-1)/splitKeys {
				t.Errorf("window %d, Tq %d: task %d's chunks end at %d", c.window, c.Tq, task, n)
			}
		}
	}
}
