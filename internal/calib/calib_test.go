package calib

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// forEachKernels runs f once per set of kernels of this build, as a
// subtest named after it; a set this CPU cannot run shows as a skip that
// names the features it lacks.
func forEachKernels(t *testing.T, f func(t *testing.T, k *Kernels)) {
	for _, k := range All() {
		t.Run("kernels="+k.Name(), func(t *testing.T) {
			if m := k.Missing(); m != nil {
				t.Skipf("%s: this CPU lacks %s", k.Name(), strings.Join(m, ", "))
			}
			f(t, k)
		})
	}
}

// Every chain adds the exact product a*b = 2^-40 once a round, so after r
// rounds each of the chains·lanes accumulators holds r·2^-40 exactly (for
// r < 2^24) and their sum is exact too while it stays below 2^24 ulps.
func TestFMA(t *testing.T) {
	forEachKernels(t, func(t *testing.T, k *Kernels) {
		t.Logf("%s: %d chains × %d lanes", k.Name(), k.chains, k.lanes)
		if k.Name() != Generic && k.chains < 10 {
			t.Errorf("%d FMA chains, want at least 10 to cover the latency", k.chains)
		}
		if k.lanes*32 != k.Bits() {
			t.Errorf("%d lanes of %d bits", k.lanes, k.Bits())
		}
		for _, r := range []int{0, 1, 2, 3, 100, 12345} {
			got := k.FMA(r)
			want := float32(float64(r) * 0x1p-40 * float64(k.chains*k.lanes))
			if got != want {
				t.Errorf("FMA(%d) = %g, want %g", r, got, want)
			}
		}
		if got := k.FMA(-5); got != 0 {
			t.Errorf("FMA(-5) = %g, want 0", got)
		}
	})
}

// Sum is exact on small integers in any order, so every length (blocks
// and tails) and misaligned start is compared exactly with a loop.
func TestSum(t *testing.T) {
	buf := make([]float32, 600)
	for i := range buf {
		buf[i] = float32(i%7 - 3)
	}
	forEachKernels(t, func(t *testing.T, k *Kernels) {
		for off := range 3 {
			for n := 0; off+n <= len(buf); n += 1 + n/16 {
				x := buf[off : off+n]
				var want float32
				for _, v := range x {
					want += v
				}
				if got := k.Sum(x); got != want {
					t.Fatalf("Sum(buf[%d:%d]) = %g, want %g", off, off+n, got, want)
				}
				for _, r := range k.reads {
					if got, want := math.Float32bits(r.sum(x)), math.Float32bits(readRef(r, x, want)); got != want {
						t.Fatalf("%s over buf[%d:%d] = %g (%#x), want %g (%#x)", r.name, off, off+n,
							math.Float32frombits(got), got, math.Float32frombits(want), want)
					}
				}
			}
		}
		// The kernels themselves read only whole blocks.
		for _, r := range k.reads {
			x := make([]float32, 2*r.block+r.block/2)
			for i := range x {
				x[i] = float32(i%5 - 2) // words that do not cancel in pairs
			}
			whole := r.block * (len(x) / r.block)
			var all float32
			for _, v := range x[:whole] {
				all += v
			}
			if got, want := math.Float32bits(r.fn(x)), math.Float32bits(readRef(r, x[:whole], all)); got != want {
				t.Errorf("%s over %d floats = %g (%#x), want %g (%#x)", r.name, len(x), math.Float32frombits(got), got,
					math.Float32frombits(want), want)
			}
		}
	})
}

// The sets come widest first, generic last and always available; the
// package-level functions run the widest this CPU has.
func TestKernelSets(t *testing.T) {
	ks := All()
	if ks[len(ks)-1].Name() != Generic || ks[len(ks)-1].Missing() != nil {
		t.Errorf("the last set is %s (missing %v), want generic", ks[len(ks)-1].Name(), ks[len(ks)-1].Missing())
	}
	if !slices.IsSortedFunc(ks, func(a, b *Kernels) int { return b.Bits() - a.Bits() }) {
		t.Error("the sets are not widest first")
	}
	w := Widest()
	if Path() != w.Name() || FLOPsPerRound() != w.FLOPsPerRound() {
		t.Errorf("Path %s, FLOPsPerRound %d; widest %s", Path(), FLOPsPerRound(), w.Name())
	}
	for _, k := range ks {
		if got, ok := Lookup(k.Name()); ok != (k.Missing() == nil) || ok && got != k {
			t.Errorf("Lookup(%s) = %v, %v with %v missing", k.Name(), got, ok, k.Missing())
		}
	}
	if _, ok := Lookup("none"); ok {
		t.Error("Lookup(none) found a set")
	}
	if runtime.GOARCH == "amd64" && !slices.ContainsFunc(ks, func(k *Kernels) bool { return k.Name() == "avx512" }) && w.Name() != Generic {
		t.Error("no avx512 set in an amd64 build with assembly")
	}
}

// Each assembly set's requirements cover what its functions' "// Requires:"
// lines declare, so a CPU without them never runs the code.
func TestRequires(t *testing.T) {
	files, err := filepath.Glob("calib*_" + runtime.GOARCH + ".s")
	if err != nil || len(files) == 0 || len(asmKernels) == 0 {
		t.Skip("no assembly in this build")
	}
	var src []byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	declared := map[string][]string{} // by function
	lines := strings.Split(string(src), "\n")
	for i, line := range lines {
		if rest, ok := strings.CutPrefix(line, "// Requires: "); ok && i+1 < len(lines) {
			name, _, _ := strings.Cut(strings.TrimPrefix(lines[i+1], "TEXT ·"), "(")
			declared[name] = strings.Split(rest, ", ")
		}
	}
	for _, k := range asmKernels {
		fns := []string{"fma" + strings.ToUpper(k.name)}
		for _, r := range k.reads {
			fns = append(fns, r.name)
		}
		for _, fn := range fns {
			if !strings.Contains(string(src), "TEXT ·"+fn+"(SB)") {
				t.Errorf("%s: no function %s", k.name, fn)
			}
			for _, f := range declared[fn] {
				if !slices.Contains(k.requires, f) {
					t.Errorf("%s requires %s, which the %s set does not check", fn, f, k.name)
				}
			}
		}
	}
}

func TestMeasure(t *testing.T) {
	forEachKernels(t, func(t *testing.T, k *Kernels) {
		sizes := []int{100 << 10, 16 << 10}
		lim := k.Measure(Options{Threads: 1, Runs: 2, RunTime: 2 * time.Millisecond, DRAM: 8 << 20, Sizes: sizes})
		t.Logf("%+v", lim)
		if lim.Path != k.Name() || lim.Threads != 1 {
			t.Errorf("Path %q, Threads %d", lim.Path, lim.Threads)
		}
		if !(lim.GFLOPS > 0) || math.IsInf(lim.GFLOPS, 0) {
			t.Errorf("GFLOPS = %v, want > 0", lim.GFLOPS)
		}
		names := []string{"L1", "L2", "L3", "DRAM"}
		if len(lim.Levels) != len(names) {
			t.Fatalf("%d levels, want %d", len(lim.Levels), len(names))
		}
		for i, lv := range lim.Levels {
			if lv.Name != names[i] || !(lv.GBps > 0) || lv.Bytes <= 0 {
				t.Errorf("level %d = %+v", i, lv)
			}
			if r := lim.ReadLimit(lv.Bytes); r.Bytes != lv.Bytes || r.GBps != lv.GBps {
				t.Errorf("ReadLimit(%s's working set) = %+v, want %+v", lv.Name, r, lv)
			}
		}
		// Every size asked for is measured, once, and the reads come sorted.
		for _, b := range sizes {
			if r := lim.ReadLimit(b); r.Bytes != b || !(r.GBps > 0) {
				t.Errorf("ReadLimit(%d) = %+v, want a read at that size", b, r)
			}
		}
		if !slices.IsSortedFunc(lim.Reads, func(a, b Read) int { return a.Bytes - b.Bytes }) ||
			len(slices.CompactFunc(slices.Clone(lim.Reads), func(a, b Read) bool { return a.Bytes == b.Bytes })) != len(lim.Reads) {
			t.Errorf("reads not sorted or repeated: %+v", lim.Reads)
		}
		l1, _, _ := CacheSizes()
		if got := lim.LevelFor(l1).Name; got != "L1" {
			t.Errorf("LevelFor(L1 size) = %s", got)
		}
		if got := lim.LevelFor(math.MaxInt).Name; got != "DRAM" {
			t.Errorf("LevelFor(MaxInt) = %s", got)
		}
	})
}

// A working set is set against the read at its own size, or else at the
// nearest smaller size measured (never a larger one, which reads slower
// and would let a figure pass 100%).
func TestReadLimitBrackets(t *testing.T) {
	lim := Limits{Reads: []Read{{16 << 10, 200}, {64 << 10, 150}, {1 << 20, 100}, {8 << 20, 50}, {64 << 20, 10}}}
	for _, c := range []struct {
		bytes, lo, hi, limit int
	}{
		{64 << 10, 64 << 10, 64 << 10, 64 << 10}, // measured at its own size
		{100 << 10, 64 << 10, 1 << 20, 64 << 10}, // between two: the smaller
		{8<<20 - 1, 1 << 20, 8 << 20, 1 << 20},   // just below a measured size
		{8<<20 + 1, 8 << 20, 64 << 20, 8 << 20},  // just above
		{1 << 30, 64 << 20, 0, 64 << 20},         // past the largest
		{1 << 10, 0, 16 << 10, 16 << 10},         // below the smallest: the nearest, no bound
		{16 << 10, 16 << 10, 16 << 10, 16 << 10}, // the smallest itself
		{64 << 20, 64 << 20, 64 << 20, 64 << 20}, // the largest itself
	} {
		lo, hi := lim.Bracket(c.bytes)
		if lo.Bytes != c.lo || hi.Bytes != c.hi {
			t.Errorf("Bracket(%d) = %d, %d; want %d, %d", c.bytes, lo.Bytes, hi.Bytes, c.lo, c.hi)
		}
		if r := lim.ReadLimit(c.bytes); r.Bytes != c.limit {
			t.Errorf("ReadLimit(%d) measured at %d, want %d", c.bytes, r.Bytes, c.limit)
		}
	}
	// The earlier L3 level (65 MiB set, 10.8 GB/s) cannot be an 8 MiB
	// set's limit when an 8 MiB read was measured.
	lim = Limits{Reads: []Read{{8 << 20, 25.2}, {65 << 20, 10.8}}}
	if r := lim.ReadLimit(8 << 20); r.GBps != 25.2 {
		t.Errorf("an 8 MiB set's limit is the %d-byte read", r.Bytes)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"32K": 32 << 10, "1M": 1 << 20, "512": 512, "1G": 1 << 30, "9999999999999G": 0, "": 0, "x": 0, "-1K": 0} {
		if got, ok := parseSize(in); got != want || ok != (want > 0) {
			t.Errorf("parseSize(%q) = %d, %v", in, got, ok)
		}
	}
	l1, l2, l3 := CacheSizes()
	if !(0 < l1 && l1 < l2 && l2 < l3) {
		t.Errorf("CacheSizes() = %d, %d, %d", l1, l2, l3)
	}
}

func TestProbe(t *testing.T) {
	forEachKernels(t, func(t *testing.T, k *Kernels) {
		for _, p := range []*Probe{k.FMAProbe(1), k.FMAProbe(2), k.ReadProbe(16<<10, 1), k.ReadProbe(100, 2)} {
			r := p.Rate(time.Millisecond)
			if !(r > 0) || math.IsInf(r, 0) {
				t.Errorf("Rate = %v, want > 0", r)
			}
			w := p.ways[len(p.ways)-1]
			n := w.k
			if p.Rate(time.Millisecond); w.k != n {
				t.Errorf("a second run of the same length resized the work: %d, then %d", n, w.k)
			}
			if b := p.Best(2, 4*time.Millisecond); !(b > 0) || w.d != 4*time.Millisecond {
				t.Errorf("Best = %v, sized for %v", b, w.d)
			}
		}
		if n := len(k.ReadProbe(100, 1).ways); n != len(k.reads) {
			t.Errorf("a read probe runs %d ways, want one per read kernel (%d)", n, len(k.reads))
		}
	})
}

// ReadProbeOf reads every slice of every set once per unit, on a thread
// per set, and counts the bytes of all of them.
func TestReadProbeOf(t *testing.T) {
	ones := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = 1
		}
		return x
	}
	forEachKernels(t, func(t *testing.T, k *Kernels) {
		p := k.ReadProbeOf([][]float32{ones(100), ones(3)}, [][]float32{ones(203)})
		for i, w := range p.ways {
			if got := w.unit * float64(len(w.fs)); got != 4*306 {
				t.Errorf("bytes per unit = %v, want %d", got, 4*306)
			}
			Sink = 0
			w.run(3)
			// Over ones a pairs kernel's fold is a sum too (1·1 = 1), of
			// one of two elements in its whole blocks and all the rest.
			// An xor way: each thread's xor of its ones over three units is
			// 1.0's bits, as both hold an odd number of ones.
			want := float32(3 * 306)
			switch r := k.reads[i]; r.kind {
			case readXor:
				want = 2
			case readPairs:
				half := func(n int) int { return (n-n%r.block)/2 + n%r.block }
				want = float32(3 * (half(100) + half(3) + half(203)))
			}
			if Sink != want {
				t.Errorf("%s: three units folded to %v, want %v", k.reads[i].name, Sink, want)
			}
		}
		if r := p.Rate(time.Millisecond); !(r > 0) || math.IsInf(r, 0) {
			t.Errorf("Rate = %v, want > 0", r)
		}
	})
}

// readRef returns what r.sum(x) should: sum (Σ x[i]) for an add kernel,
// else its kind's fold of x's whole blocks and its tail, in Go. The test
// data are small integers, so every order of the additions is exact.
func readRef(r readKernel, x []float32, sum float32) float32 {
	n := len(x) - len(x)%r.block
	var s float32
	switch r.kind {
	case readSum:
		return sum
	case readXor:
		var b uint32
		for _, v := range x {
			b ^= math.Float32bits(v)
		}
		return math.Float32frombits(b)
	case readPairs:
		h := n / 2
		for i := range h {
			s += x[i] * x[h+i]
		}
		for _, v := range x[n:] {
			s += v
		}
	}
	return s
}
