package attention

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/glancelab/attention/internal/testutil"
)

// keptPattern is a keep-mask ('k' kept, '-' masked) with runs of kept keys
// of every length from 1 to 9 and one of 17, between masked stretches of
// one to three keys, from a masked first key to a masked last key: each
// run's last row sits just before a masked row, where a kernel that reads
// a row ahead would fault.
const keptPattern = "-k-kk--kkk---kkkk-kkkkk--kkkkkk-kkkkkkk--kkkkkkkk-kkkkkkkkk---kkkkkkkkkkkkkkkkk-"

// Masked keys are never read: NewMemory and Attend run over keys and
// values laid out one row per page with the pages of masked rows (not
// kept, or at or past the valid length) inaccessible, for every scorer
// and implementation, and still match the oracle on the rows they read.
func TestMemoryNeverReadsMasked(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	T := len(keptPattern)
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(41)
		for _, kind := range kinds {
			for _, c := range []struct {
				name  string
				keep  bool
				valid int
			}{
				{"valid length", false, T - 9},
				{"keep-mask", true, T},
				{"keep-mask and valid length", true, T - 20},
				{"valid length 0", true, 0},
			} {
				dq, dk, dv, da := 6, 9, 13, 5
				if isDot(kind) {
					dq = dk
				}
				p, err := sizedProblem(t, r, kind, T, dq, dk, dv, da, 0)
				if err != nil {
					t.Fatal(err)
				}
				var keep []bool
				if c.keep {
					keep = make([]bool, T)
					for i := range keep {
						keep[i] = keptPattern[i] == 'k'
					}
					p.withKeep(keep)
				}
				p.withValid(c.valid)
				masked := func(i int) bool { return i >= c.valid || keep != nil && !keep[i] }
				name := fmt.Sprintf("%s %s", p.scorer, c.name)
				p.keys, p.ref.Keys = guardedRows(t, p.ref.Keys, dk, masked)
				p.values, p.ref.Values = guardedRows(t, p.ref.Values, dv, masked)
				readsNoHiddenPage(t, name, p.keys, p.values, func() { p.check(t, name) })
			}
		}
	})
}

// guardedRows copies the rows that are not masked into a one-row-a-page
// layout whose masked rows are inaccessible, and returns its view with
// the rows the oracle sees: nil where masked.
func guardedRows(t *testing.T, rows [][]float32, cols int, masked func(int) bool) (Matrix, [][]float32) {
	data, stride := testutil.GuardedRows(t, len(rows), cols, masked)
	m, err := NewMatrixStrided(len(rows), cols, stride, data)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(rows))
	for i, row := range rows {
		if !masked(i) {
			out[i] = data[i*stride : i*stride+cols]
			copy(out[i], row)
		}
	}
	return m, out
}

// readsNoHiddenPage runs f and turns a fault on a hidden page into a test
// failure naming the row it belongs to.
func readsNoHiddenPage(t *testing.T, name string, keys, values Matrix, f func()) {
	t.Helper()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		e, ok := r.(interface{ Addr() uintptr })
		if !ok {
			panic(r)
		}
		where := "outside the keys and values"
		for _, v := range []struct {
			what string
			m    Matrix
		}{{"key", keys}, {"value", values}} {
			base := uintptr(unsafe.Pointer(unsafe.SliceData(v.m.data)))
			if row := int(e.Addr()-base) / os.Getpagesize(); e.Addr() >= base && row < v.m.Rows() {
				where = fmt.Sprintf("on the page of masked %s row %d", v.what, row)
			}
		}
		t.Fatalf("%s: read address %#x, %s", name, e.Addr(), where)
	}()
	f()
}

// AttendMany never reads a masked key: the keys and values lie one row per
// page with the pages of masked rows inaccessible, for every scorer, on
// both paths (2, 9 and 17 queries) and every implementation, and the
// results still match the oracle. The pattern repeats keptPattern three
// times, 243 keys: runs of kept keys end just before a masked row, and
// across the edges of the 128-key tiles of the block path and, with rows
// of 512 and 1000 floats, of the multi-row kernels' tiles of 64 and 40.
// With -short, each scorer, count of queries and size takes one of the
// counts of valid keys, turning with them.
func TestAttendManyNeverReadsMasked(t *testing.T) {
	if !testutil.GuardSupported {
		t.Skip("guard pages need mmap (unix)")
	}
	pattern := strings.Repeat(keptPattern, 3)
	T := len(pattern)
	testutil.ForEachImpl(t, func(t *testing.T) {
		r := testutil.Rand(58)
		for ki, kind := range kinds {
			for ni, n := range []int{2, 9, 17} {
				for di, dims := range [][4]int{{6, 9, 13, 5}, {7, 512, 1000, 5}} {
					for vi, valid := range []int{T, T - 30, 0} {
						if testing.Short() && vi != (ki+ni+di)%3 {
							continue
						}
						dq, dk, dv, da := dims[0], dims[1], dims[2], dims[3]
						if isDot(kind) {
							dq = dk
						}
						p, err := sizedProblem(t, r, kind, T, dq, dk, dv, da, 0)
						if err != nil {
							t.Fatal(err)
						}
						keep := make([]bool, T)
						for i := range keep {
							keep[i] = pattern[i] == 'k'
						}
						p.withKeep(keep)
						p.withValid(valid)
						masked := func(i int) bool { return i >= valid || !keep[i] }
						p.keys, p.ref.Keys = guardedRows(t, p.ref.Keys, dk, masked)
						p.values, p.ref.Values = guardedRows(t, p.ref.Values, dv, masked)
						q, rows := strided(t, r, n, dq, 1, 3)
						c := manyCase{p: p, queries: q, rows: rows}
						name := fmt.Sprintf("%s n=%d dk=%d valid=%d", p.scorer, n, dk, valid)
						readsNoHiddenPage(t, name, p.keys, p.values, func() { c.check(t, name) })
					}
				}
			}
		}
	})
}
