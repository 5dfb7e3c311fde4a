package calib

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Level is a working-set class: a cache level or DRAM.
type Level struct {
	Name     string  // "L1", "L2", "L3" or "DRAM"
	Capacity int     // bytes of the cache (per core for private levels); 0 for DRAM
	Bytes    int     // the working set the bandwidth was measured with, per thread
	GBps     float64 // read bandwidth over all threads, 1e9 bytes per second
}

// Read is the read bandwidth measured at one working set.
type Read struct {
	Bytes int     // per thread
	GBps  float64 // over all threads, 1e9 bytes per second
}

// Limits are the machine's limits measured with one set of kernels on
// Threads threads at once.
type Limits struct {
	Path    string  // the kernels used: avx512, avx2, neon or generic
	Threads int     // threads measured together
	GFLOPS  float64 // peak FP32 rate over all threads, 1e9 FLOP per second
	Levels  []Level // L1, L2, L3, DRAM
	// Reads holds every read measured, the levels' and those of
	// Options.Sizes, by working set, smallest first.
	Reads []Read
}

// LevelFor returns the level a working set of the given bytes (per thread)
// lives in: the first whose capacity holds it, DRAM otherwise.
func (l Limits) LevelFor(bytes int) Level {
	for _, lv := range l.Levels {
		if lv.Capacity == 0 || bytes <= lv.Capacity {
			return lv
		}
	}
	return l.Levels[len(l.Levels)-1]
}

// Bracket returns the reads measured nearest a working set of bytes per
// thread on either side: lo.Bytes <= bytes <= hi.Bytes, both the same read
// where one was measured at exactly that size. A side with no measurement
// is the zero Read.
func (l Limits) Bracket(bytes int) (lo, hi Read) {
	for _, r := range l.Reads {
		if r.Bytes <= bytes {
			lo = r
		}
		if r.Bytes >= bytes && hi.Bytes == 0 {
			hi = r
		}
	}
	return lo, hi
}

// ReadLimit returns the read limit of a working set of bytes per thread:
// the read measured at that size, else the one at the nearest smaller size.
// Bandwidth only falls as a working set grows, so no operation on the
// working set reads faster than that: a figure set against it stays at or
// below 100% (up to noise), which the bandwidth of a larger set, such as
// the level's, does not promise. Below the smallest size measured it is the
// read at that size, which bounds nothing: measure the sizes to be used
// (Options.Sizes).
func (l Limits) ReadLimit(bytes int) Read {
	lo, hi := l.Bracket(bytes)
	if lo.Bytes == 0 {
		return hi
	}
	return lo
}

// Options tune Measure.
type Options struct {
	Threads int           // measured together (at least 1)
	Runs    int           // the best of Runs runs is kept (at least 1)
	RunTime time.Duration // the length of one run
	DRAM    int           // the DRAM working set per thread in bytes; 0 for the default
	// Sizes are more working sets (bytes per thread) to measure the read
	// bandwidth at, besides the levels': those of the operations the limits
	// will be set against.
	Sizes []int
}

// Measure measures the limits with the widest kernels the CPU has.
func Measure(o Options) Limits { return Widest().Measure(o) }

// Measure measures the limits with these kernels. A limit is the best of
// the runs, since anything else running on the machine can only slow a run
// down.
func (k *Kernels) Measure(o Options) Limits {
	o.Threads = max(o.Threads, 1)
	o.Runs = max(o.Runs, 1)
	if o.RunTime <= 0 {
		o.RunTime = 10 * time.Millisecond
	}
	l1, l2, l3 := CacheSizes()
	dram := o.DRAM
	if dram <= 0 {
		dram = max(4*l3, 64<<20)
	}
	lim := Limits{Path: k.name, Threads: o.Threads}
	lim.GFLOPS = k.FMAProbe(o.Threads).Best(o.Runs, o.RunTime)

	read := map[int]float64{} // by working set, each measured once
	measure := func(bytes int) float64 {
		if _, ok := read[bytes]; !ok {
			read[bytes] = k.ReadProbe(bytes, o.Threads).Best(o.Runs, o.RunTime)
		}
		return read[bytes]
	}
	// Half a private cache holds the buffer with room for everything else.
	// The L3 is shared with other cores (and, on a virtual machine, with
	// other tenants), so a quarter of it is split between the threads.
	for _, lv := range []Level{
		{Name: "L1", Capacity: l1, Bytes: l1 / 2},
		{Name: "L2", Capacity: l2, Bytes: l2 / 2},
		{Name: "L3", Capacity: l3, Bytes: l3 / 4 / o.Threads},
		{Name: "DRAM", Bytes: dram},
	} {
		lv.GBps = measure(lv.Bytes)
		lim.Levels = append(lim.Levels, lv)
	}
	for _, b := range o.Sizes {
		if b > 0 {
			measure(b)
		}
	}
	for b, gbps := range read {
		lim.Reads = append(lim.Reads, Read{Bytes: b, GBps: gbps})
	}
	slices.SortFunc(lim.Reads, func(a, b Read) int { return a.Bytes - b.Bytes })
	return lim
}

// CacheSizes returns the sizes in bytes of the L1 data cache, L2 and L3 of
// CPU 0, from Linux's sysfs; where it cannot be read, common sizes (32 KiB,
// 512 KiB, 8 MiB) stand in.
func CacheSizes() (l1, l2, l3 int) {
	l1, l2, l3 = 32<<10, 512<<10, 8<<20
	for i := range 8 {
		dir := "/sys/devices/system/cpu/cpu0/cache/index" + strconv.Itoa(i) + "/"
		level, err1 := readString(dir + "level")
		typ, err2 := readString(dir + "type")
		size, err3 := readString(dir + "size")
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		b, ok := parseSize(size)
		if !ok || typ == "Instruction" {
			continue
		}
		switch level {
		case "1":
			l1 = b
		case "2":
			l2 = b
		case "3":
			l3 = b
		}
	}
	return l1, l2, l3
}

func readString(name string) (string, error) {
	b, err := os.ReadFile(name)
	return strings.TrimSpace(string(b)), err
}

// parseSize reads sysfs sizes such as "32K", "1M" or "512".
func parseSize(s string) (int, bool) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > math.MaxInt/mult {
		return 0, false
	}
	return n * mult, true
}
