package calib

import (
	"math"
	"testing"
	"time"
)

// Every chain adds the exact product a*b = 2^-40 once a round, so after r
// rounds each of the chains·lanes accumulators holds r·2^-40 exactly (for
// r < 2^24) and their sum is exact too while it stays below 2^24 ulps.
func TestFMA(t *testing.T) {
	t.Logf("path %s: %d chains × %d lanes", Path(), chains, lanes)
	if path != "generic" && chains < 10 {
		t.Errorf("%d FMA chains, want at least 10 to cover the latency", chains)
	}
	for _, r := range []int{0, 1, 2, 3, 100, 12345} {
		got := FMA(r)
		want := float32(float64(r) * 0x1p-40 * float64(chains*lanes))
		if got != want {
			t.Errorf("FMA(%d) = %g, want %g", r, got, want)
		}
	}
	if got := FMA(-5); got != 0 {
		t.Errorf("FMA(-5) = %g, want 0", got)
	}
	// The generic twin agrees on its own shape.
	if got, want := fmaGeneric(1000, fmaA, fmaB), float32(1000*0x1p-40*genericChains); got != want {
		t.Errorf("fmaGeneric(1000) = %g, want %g", got, want)
	}
}

// Sum is exact on small integers in any order, so every length (blocks
// and tails) and misaligned start is compared exactly with a loop.
func TestSum(t *testing.T) {
	buf := make([]float32, 600)
	for i := range buf {
		buf[i] = float32(i%7 - 3)
	}
	for off := range 3 {
		for n := 0; off+n <= len(buf); n += 1 + n/16 {
			x := buf[off : off+n]
			var want float32
			for _, v := range x {
				want += v
			}
			if got := Sum(x); got != want {
				t.Fatalf("Sum(buf[%d:%d]) = %g, want %g", off, off+n, got, want)
			}
			if got := readGeneric(x); got != want {
				t.Fatalf("readGeneric(buf[%d:%d]) = %g, want %g", off, off+n, got, want)
			}
		}
	}
	// The kernel itself reads only whole blocks.
	x := make([]float32, readBlock+readBlock/2)
	for i := range x {
		x[i] = 1
	}
	if got := readSum(x[:readBlock*(len(x)/readBlock)]); got != float32(readBlock*(len(x)/readBlock)) {
		t.Errorf("readSum over whole blocks = %g", got)
	}
}

func TestMeasure(t *testing.T) {
	lim := Measure(Options{Threads: 1, Runs: 2, RunTime: 2 * time.Millisecond, DRAM: 8 << 20})
	t.Logf("%+v", lim)
	if lim.Path != Path() || lim.Threads != 1 {
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
	}
	l1, _, _ := CacheSizes()
	if got := lim.LevelFor(l1).Name; got != "L1" {
		t.Errorf("LevelFor(L1 size) = %s", got)
	}
	if got := lim.LevelFor(math.MaxInt).Name; got != "DRAM" {
		t.Errorf("LevelFor(MaxInt) = %s", got)
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
	for _, p := range []*Probe{FMAProbe(1), FMAProbe(2), ReadProbe(16<<10, 1), ReadProbe(100, 2)} {
		r := p.Rate(time.Millisecond)
		if !(r > 0) || math.IsInf(r, 0) {
			t.Errorf("Rate = %v, want > 0", r)
		}
		k := p.k
		if p.Rate(time.Millisecond); p.k != k {
			t.Errorf("a second run of the same length resized the work: %d, then %d", k, p.k)
		}
		if b := p.Best(2, 4*time.Millisecond); !(b > 0) || p.d != 4*time.Millisecond {
			t.Errorf("Best = %v, sized for %v", b, p.d)
		}
	}
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
	p := ReadProbeOf([][]float32{ones(100), ones(3)}, [][]float32{ones(203)})
	if got := p.unit * float64(len(p.fs)); got != 4*306 {
		t.Errorf("bytes per unit = %v, want %d", got, 4*306)
	}
	Sink = 0
	p.run(3)
	if Sink != 3*306 {
		t.Errorf("three units summed %v, want %d", Sink, 3*306)
	}
	if r := p.Rate(time.Millisecond); !(r > 0) || math.IsInf(r, 0) {
		t.Errorf("Rate = %v, want > 0", r)
	}
}
