package attention

import (
	"sync/atomic"
	"testing"
)

// nextTile names tiles a worker will read, and only those: the task's
// next tile, the next task's first (from its window's start) or, with
// several workers, that of the task the worker takes ahead, never the
// keys after a task's last tile, nor past a chunk that is a work item of
// its own.
func TestNextTileStaysInTheRowsKeys(t *testing.T) {
	const B, H, Hkv, Tk, d, tile = 1, 4, 2, 3000, 4, 512
	for _, window := range []int{0, 700} {
		q := make([]float32, B*H*d)
		kv := make([]float32, B*Hkv*Tk*d)
		qt, _ := NewTensor(B, H, 1, d, q)
		kt, _ := NewTensor(B, Hkv, Tk, d, kv)
		ot, _ := NewTensor(B, H, 1, d, make([]float32, len(q)))
		p, err := newBatchJob(BatchOutputs{Out: ot}, qt, kt, kt, &BatchOptions{Window: window})
		if err != nil {
			t.Fatal(err)
		}
		if p.tasks() != 2 {
			t.Fatalf("window %d: %d tasks, want 2", window, p.tasks())
		}
		lo := max(0, Tk-window)
		if window == 0 {
			lo = 0
		}
		var tk batchTask
		p.taskInto(&tk, 0)
		p.rowEnds(&tk)
		if _, nt, j := p.nextTile(&tk, lo, tile, nil); nt != 0 || j != lo+tile {
			t.Errorf("window %d: after the first tile: task %d key %d, want 0, %d", window, nt, j, lo+tile)
		}
		if _, nt, j := p.nextTile(&tk, Tk-tile, tile, nil); nt != 1 || j != lo {
			t.Errorf("window %d: after task 0's last tile: task %d key %d, want 1, %d", window, nt, j, lo)
		}
		var last batchTask
		p.taskInto(&last, 1)
		p.rowEnds(&last)
		if _, nt, _ := p.nextTile(&last, Tk-tile, tile, nil); nt != -1 {
			t.Errorf("window %d: after the call's last tile: task %d, want none", window, nt)
		}
		if _, nt, _ := p.nextTile(&tk, Tk-10, 10, nil); nt != -1 {
			t.Errorf("window %d: after a last tile of 10 keys: task %d, want none", window, nt)
		}
		// With several workers a task is followed by the one its worker
		// takes ahead, whichever the counter gives; past the last, none.
		if !p.claims() {
			t.Errorf("window %d: the workers of a multi-row call take no task ahead", window)
		}
		var tasks atomic.Int64
		tasks.Store(1)
		claim := itemClaim{next: &tasks, item: -1}
		for range 2 {
			if _, nt, j := p.nextTile(&tk, Tk-tile, tile, &claim); nt != 1 || j != lo || claim.item != 1 || tasks.Load() != 2 {
				t.Errorf("window %d: after task 0's last tile, taking task 1: task %d key %d, item %d, counter %d, want 1, %d, 1, 2", window, nt, j, claim.item, tasks.Load(), lo)
			}
		}
		claim.item = -1
		if _, nt, _ := p.nextTile(&last, Tk-tile, tile, &claim); nt != -1 || claim.item != 2 {
			t.Errorf("window %d: after the last task, taking none: task %d, item %d, want none and 2", window, nt, claim.item)
		}
		// A chunk that is a work item of its own ends at its last key.
		p.parts = make([]float32, 1)
		tk.keys(splitKeys, 2*splitKeys)
		if _, nt, _ := p.nextTile(&tk, 2*splitKeys-tile, tile, nil); nt != -1 {
			t.Errorf("window %d: after a chunk item's last tile: task %d, want none", window, nt)
		}
		// Unless the worker takes its next item there: then it names that
		// item's first tile, and asking again takes no other item.
		var counter atomic.Int64
		counter.Store(4) // item 4: task 1's second chunk
		claim = itemClaim{next: &counter, item: -1}
		want, wantJ := 1, splitKeys
		if window > 0 {
			want = -1 // the window starts past that chunk
		}
		for range 2 {
			if _, nt, j := p.nextTile(&tk, 2*splitKeys-tile, tile, &claim); nt != want || nt >= 0 && j != wantJ {
				t.Errorf("window %d: after a chunk item's last tile, taking item 4: task %d key %d, want %d, %d", window, nt, j, want, wantJ)
			}
			if claim.item != 4 || counter.Load() != 5 {
				t.Errorf("window %d: item taken ahead %d, counter %d, want 4 and 5", window, claim.item, counter.Load())
			}
		}
		claim.item = -1
		counter.Store(int64(2 * p.chunks))
		if _, nt, _ := p.nextTile(&tk, 2*splitKeys-tile, tile, &claim); nt != -1 || claim.item != int64(2*p.chunks) {
			t.Errorf("window %d: after the call's last item: task %d, item %d, want none and %d", window, nt, claim.item, 2*p.chunks)
		}
	}
}
