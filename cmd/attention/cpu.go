package main

import (
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// cpuFeatures describes the processor features the kernel dispatch looks at,
// for the demo's report, e.g. "amd64: avx2 fma f16c".
func cpuFeatures() string {
	var f []string
	add := func(ok bool, name string) {
		if ok {
			f = append(f, name)
		}
	}
	switch runtime.GOARCH {
	case "amd64":
		add(cpu.X86.HasAVX, "avx")
		add(cpu.X86.HasAVX2, "avx2")
		add(cpu.X86.HasFMA, "fma")
		add(cpu.X86.HasF16C, "f16c")
		add(cpu.X86.HasAVX512F, "avx512f")
	case "arm64":
		add(cpu.ARM64.HasASIMD, "asimd")
		add(cpu.ARM64.HasFPHP, "fphp")
		add(cpu.ARM64.HasASIMDHP, "asimdhp")
		add(cpu.ARM64.HasSVE, "sve")
	}
	if len(f) == 0 {
		return runtime.GOARCH
	}
	return runtime.GOARCH + ": " + strings.Join(f, " ")
}
