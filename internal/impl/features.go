package impl

import "golang.org/x/sys/cpu"

// feature is how dispatch learns whether the CPU has a feature: has points
// at x/sys/cpu's flag (which, for AVX and AVX-512, also requires the OS to
// save the registers), baseline marks one every CPU of its architecture
// has. A feature with neither cannot be checked, so code needing it is
// never enabled.
type feature struct {
	has      *bool
	baseline bool
}

var baseline = feature{baseline: true}

func flag(b *bool) feature { return feature{has: b} }

// Features names every CPU feature avo can write in a "// Requires:" line
// (a test in asm/ checks the list against avo's instruction table), and
// the Arm features the NEON implementation declares.
var Features = map[string]feature{
	// The amd64 baseline.
	"SSE": baseline, "SSE2": baseline, "CMOV": baseline, "CPUID": baseline,
	"CLFLUSH": baseline, "RDTSC": baseline,
	// avo's name for the prefetch instructions' extension, which came
	// with SSE.
	"MMX+": baseline,

	"ADX": flag(&cpu.X86.HasADX), "AES": flag(&cpu.X86.HasAES),
	"AVX": flag(&cpu.X86.HasAVX), "AVX2": flag(&cpu.X86.HasAVX2),
	"AVX512F": flag(&cpu.X86.HasAVX512F), "AVX512BW": flag(&cpu.X86.HasAVX512BW),
	"AVX512CD": flag(&cpu.X86.HasAVX512CD), "AVX512DQ": flag(&cpu.X86.HasAVX512DQ),
	"AVX512ER": flag(&cpu.X86.HasAVX512ER), "AVX512VL": flag(&cpu.X86.HasAVX512VL),
	"AVX512IFMA": flag(&cpu.X86.HasAVX512IFMA), "AVX512VBMI": flag(&cpu.X86.HasAVX512VBMI),
	"AVX512VBMI2": flag(&cpu.X86.HasAVX512VBMI2), "AVX512VNNI": flag(&cpu.X86.HasAVX512VNNI),
	"AVX512BITALG": flag(&cpu.X86.HasAVX512BITALG), "AVX512VPOPCNTDQ": flag(&cpu.X86.HasAVX512VPOPCNTDQ),
	"BMI": flag(&cpu.X86.HasBMI1), "BMI2": flag(&cpu.X86.HasBMI2),
	"F16C": flag(&cpu.X86.HasF16C), "FMA3": flag(&cpu.X86.HasFMA),
	"LZCNT": flag(&cpu.X86.HasLZCNT), "MOVBE": flag(&cpu.X86.HasMOVBE),
	"PCLMULQDQ": flag(&cpu.X86.HasPCLMULQDQ), "POPCNT": flag(&cpu.X86.HasPOPCNT),
	"RDRAND": flag(&cpu.X86.HasRDRAND), "RDSEED": flag(&cpu.X86.HasRDSEED),
	"SSE3": flag(&cpu.X86.HasSSE3), "SSSE3": flag(&cpu.X86.HasSSSE3),
	"SSE4.1": flag(&cpu.X86.HasSSE41), "SSE4.2": flag(&cpu.X86.HasSSE42),

	// x/sys/cpu has no flag for these (its GFNI, VAES and VPCLMULQDQ
	// flags are those of the AVX-512 forms).
	"CLFLUSHOPT": {}, "GFNI": {}, "MONITOR": {}, "RDTSCP": {}, "SHA": {},
	"VAES": {}, "VPCLMULQDQ": {},

	// arm64: Advanced SIMD is part of every ARMv8-A core Go supports, but
	// the check keeps the registry honest.
	"ASIMD": flag(&cpu.ARM64.HasASIMD),
}

// Has reports whether the CPU has the named feature, and whether the name
// is one dispatch can check at all.
func Has(name string) (has, checkable bool) {
	f, ok := Features[name]
	switch {
	case !ok || f.has == nil && !f.baseline:
		return false, false
	case f.baseline:
		return true, true
	}
	return *f.has, true
}

// Missing returns the features of the list the CPU lacks (or that cannot
// be checked), nil if it has them all.
func Missing(requires []string) []string {
	var m []string
	for _, name := range requires {
		if has, _ := Has(name); !has {
			m = append(m, name)
		}
	}
	return m
}

// Baseline reports whether every CPU of the feature's architecture has it,
// so that code may use it without a check.
func Baseline(name string) bool { return Features[name].baseline }
