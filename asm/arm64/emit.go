package main

import (
	"fmt"
	"strings"
)

// V is a NEON register V0–V31; R a general register. Go's arm64 ABI0 leaves
// every one of the V registers to the callee; of the R registers the kernels
// use only R0–R17 and R19–R25 (R18 is the platform register, R26 the closure
// context, R27 the assembler's temporary, R28 g, R29 the frame pointer and
// R30 the link register).
type V int

// R is a general-purpose register.
type R int

func (v V) S4() string         { return fmt.Sprintf("V%d.S4", v) }
func (v V) B16() string        { return fmt.Sprintf("V%d.B16", v) }
func (v V) H8() string         { return fmt.Sprintf("V%d.H8", v) }
func (v V) H4() string         { return fmt.Sprintf("V%d.H4", v) }
func (v V) F() string          { return fmt.Sprintf("F%d", v) } // the low lane as a scalar
func (v V) Lane(i int) string  { return fmt.Sprintf("V%d.S[%d]", v, i) }
func (v V) HLane(i int) string { return fmt.Sprintf("V%d.H[%d]", v, i) }
func (v V) gnu4s() string      { return fmt.Sprintf("v%d.4s", v) }
func (v V) gnu4h() string      { return fmt.Sprintf("v%d.4h", v) }
func (v V) gnu8h() string      { return fmt.Sprintf("v%d.8h", v) }
func (v V) gnu2s() string      { return fmt.Sprintf("v%d.2s", v) }
func (v V) gnuS() string       { return fmt.Sprintf("s%d", v) }
func (r R) String() string {
	switch r {
	case 18, 26, 27, 28, 29, 30:
		panic(fmt.Sprintf("R%d is reserved in Go's arm64 ABI", int(r)))
	}
	return fmt.Sprintf("R%d", int(r))
}

// list formats consecutive registers for VLD1/VST1: [V0.S4, V1.S4].
func list(first V, n int) string { return listOf(first, n, V.S4) }

// listH8 is list for eight halfwords a register: [V0.H8, V1.H8].
func listH8(first V, n int) string { return listOf(first, n, V.H8) }

func listOf(first V, n int, arr func(V) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = arr(first + V(i))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// Word is an instruction Go's assembler has no mnemonic for, emitted as its
// 32-bit encoding with the GNU syntax as a comment (and for the tests).
type Word struct {
	Bits uint32
	GNU  string
}

// Asm collects the text of one generated file.
type Asm struct {
	b      strings.Builder
	labels int
	fn     string
}

func (a *Asm) line(format string, args ...any) {
	fmt.Fprintf(&a.b, "\t"+format+"\n", args...)
}

// Op emits a native Plan 9 instruction.
func (a *Asm) Op(format string, args ...any) { a.line(format, args...) }

// W emits an encoded instruction.
func (a *Asm) W(w Word) { a.line("WORD $0x%08x // %s", w.Bits, w.GNU) }

// Label places a label; NewLabel returns a fresh name within the function.
func (a *Asm) Label(l string) { fmt.Fprintf(&a.b, "%s:\n", l) }

func (a *Asm) NewLabel(what string) string {
	a.labels++
	return fmt.Sprintf("%s_%s%d", a.fn, what, a.labels)
}

// TEXT starts a NOSPLIT leaf function with no locals and args bytes of
// arguments and results.
func (a *Asm) TEXT(name, goSig string, args int) {
	a.fn = name
	fmt.Fprintf(&a.b, "\n// func %s%s\nTEXT ·%s(SB), NOSPLIT, $0-%d\n", name, goSig, name, args)
}

// Three-register vector operations on 4S arrangements: "op Vd.4S, Vn.4S,
// Vm.4S". base holds every bit but the register fields.
func vec3(base uint32, mnemonic string, d, n, m V) Word {
	return Word{base | uint32(m)<<16 | uint32(n)<<5 | uint32(d),
		fmt.Sprintf("%s %s, %s, %s", mnemonic, d.gnu4s(), n.gnu4s(), m.gnu4s())}
}

// Two-register vector operations: "op Vd.4S, Vn.4S".
func vec2(base uint32, mnemonic string, d, n V) Word {
	return Word{base | uint32(n)<<5 | uint32(d), fmt.Sprintf("%s %s, %s", mnemonic, d.gnu4s(), n.gnu4s())}
}

// The encoded instructions (Arm ARM, "Advanced SIMD three same" and "two-
// register miscellaneous" classes, single precision, Q=1).
func FADD(d, n, m V) Word  { return vec3(0x4e20d400, "fadd", d, n, m) }
func FSUB(d, n, m V) Word  { return vec3(0x4ea0d400, "fsub", d, n, m) }
func FMUL(d, n, m V) Word  { return vec3(0x6e20dc00, "fmul", d, n, m) }
func FMAX(d, n, m V) Word  { return vec3(0x4e20f400, "fmax", d, n, m) }
func FADDP(d, n, m V) Word { return vec3(0x6e20d400, "faddp", d, n, m) }
func FMAXP(d, n, m V) Word { return vec3(0x6e20f400, "fmaxp", d, n, m) }
func FCMGT(d, n, m V) Word { return vec3(0x6ea0e400, "fcmgt", d, n, m) }
func FCMEQ(d, n, m V) Word { return vec3(0x4e20e400, "fcmeq", d, n, m) }
func FABS(d, n V) Word     { return vec2(0x4ea0f800, "fabs", d, n) }

// FCMLEZ is "fcmle Vd.4S, Vn.4S, #0.0": all ones where n <= 0.
func FCMLEZ(d, n V) Word {
	return Word{0x6ea0d800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fcmle %s, %s, #0.0", d.gnu4s(), n.gnu4s())}
}

// UMAXV is "umaxv Sd, Vn.4S": the largest lane, unsigned.
func UMAXV(d, n V) Word {
	return Word{0x6eb0a800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("umaxv %s, %s", d.gnuS(), n.gnu4s())}
}

// FADDPS is the scalar "faddp Sd, Vn.2S": lane 0 + lane 1.
func FADDPS(d, n V) Word {
	return Word{0x7e30d800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("faddp %s, %s", d.gnuS(), n.gnu2s())}
}

// FMAXPS is the scalar "fmaxp Sd, Vn.2S".
func FMAXPS(d, n V) Word {
	return Word{0x7e30f800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fmaxp %s, %s", d.gnuS(), n.gnu2s())}
}

// The widenings of four 16-bit lanes into four 32-bit ones ("two-register
// miscellaneous" and "shift by immediate" classes): FCVTL takes the low
// four halfwords of n, FCVTL2 the high four. FCVTL converts binary16 to
// float32 exactly, as f16to32 does: a subnormal half becomes a normal
// float (FZ16 does not apply to conversions, and FZ has no subnormal
// float to flush), a NaN keeps its sign and payload and is quieted (with
// FPCR.DN and AHP clear, as Go leaves them). SHLL #16 puts each halfword
// in the top half of its lane, which is a bfloat16's float32 (Go's VUSHLL
// takes shifts below 16 only).
func FCVTL(d, n V) Word {
	return Word{0x0e217800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fcvtl %s, %s", d.gnu4s(), n.gnu4h())}
}

func FCVTL2(d, n V) Word {
	return Word{0x4e217800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fcvtl2 %s, %s", d.gnu4s(), n.gnu8h())}
}

func SHLL(d, n V) Word {
	return Word{0x2e613800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("shll %s, %s, #16", d.gnu4s(), n.gnu4h())}
}

func SHLL2(d, n V) Word {
	return Word{0x6e613800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("shll2 %s, %s, #16", d.gnu4s(), n.gnu8h())}
}

// The narrowings of four float32 lanes into four binary16 ones: FCVTN
// writes the low four halfwords of d (clearing the high ones), FCVTN2 the
// high four (keeping the low ones). Both round as FPCR says, which under
// Go is to nearest, ties to even, with FZ, DN and AHP clear: overflow
// gives ±Inf, a binary16 subnormal is rounded exactly (FZ16 does not
// apply to conversions), and a NaN keeps its sign and the top ten bits of
// its payload and is quieted, which is f32ToF16's rule.
func FCVTN(d, n V) Word {
	return Word{0x0e216800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fcvtn %s, %s", d.gnu4h(), n.gnu4s())}
}

func FCVTN2(d, n V) Word {
	return Word{0x4e216800 | uint32(n)<<5 | uint32(d), fmt.Sprintf("fcvtn2 %s, %s", d.gnu8h(), n.gnu4s())}
}

// wordOps lists every encoded instruction the emitter can produce, for the
// encoding tests: each is called with sample registers.
var wordOps = map[string]func(d, n, m V) Word{
	"fadd":   FADD,
	"fsub":   FSUB,
	"fmul":   FMUL,
	"fmax":   FMAX,
	"faddp":  FADDP,
	"fmaxp":  FMAXP,
	"fcmgt":  FCMGT,
	"fcmeq":  FCMEQ,
	"fabs":   func(d, n, _ V) Word { return FABS(d, n) },
	"fcmle0": func(d, n, _ V) Word { return FCMLEZ(d, n) },
	"umaxv":  func(d, n, _ V) Word { return UMAXV(d, n) },
	"faddps": func(d, n, _ V) Word { return FADDPS(d, n) },
	"fmaxps": func(d, n, _ V) Word { return FMAXPS(d, n) },
	"fcvtl":  func(d, n, _ V) Word { return FCVTL(d, n) },
	"fcvtl2": func(d, n, _ V) Word { return FCVTL2(d, n) },
	"shll":   func(d, n, _ V) Word { return SHLL(d, n) },
	"shll2":  func(d, n, _ V) Word { return SHLL2(d, n) },
	"fcvtn":  func(d, n, _ V) Word { return FCVTN(d, n) },
	"fcvtn2": func(d, n, _ V) Word { return FCVTN2(d, n) },
}
