package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The rotary-embedding kernels: every product and every sum its own
// instruction (VMULPS, then VSUBPS or VADDPS), no FMA, so that each
// rounds once as the generic twin's and ONNX's float32 arithmetic do.

func init() {
	avx512["rotaryHalf"] = func() { genRotaryHalf(16, "rhz") }
	avx2["rotaryHalf"] = func() { genRotaryHalf(8, "rhy") }
	avx512["rotaryPairs"] = func() { genRotaryPairs(16, "rpz") }
	avx2["rotaryPairs"] = func() { genRotaryPairs(8, "rpy") }
}

// rotaryArgs loads the arguments the two kernels share: x, the row stride
// in bytes, the row count, cos, sin and n = len(cos).
func rotaryArgs() (x, stride, rows, cos, sin, n Register) {
	x = Load(Param("x").Base(), GP64())
	stride = Load(Param("stride"), GP64())
	SHLQ(U8(2), stride)
	rows = Load(Param("rows"), GP64())
	cos = Load(Param("cos").Base(), GP64())
	sin = Load(Param("sin").Base(), GP64())
	n = Load(Param("cos").Len(), GP64())
	return
}

// turn computes, from a, b (the pair's elements), c and s, the turned
// pair into a and b: a = c·a − s·b, b = s·a + c·b, each product and sum
// rounded once.
func turn(vec func() VecVirtual, a, b, c, s VecVirtual) {
	t1, t2, t3 := vec(), vec(), vec()
	VMULPS(a, c, t1)
	VMULPS(b, s, t2)
	VMULPS(a, s, t3)
	VMULPS(b, c, b)
	VSUBPS(t2, t1, a)
	VADDPS(t3, b, b)
}

// genRotaryHalf turns pairs (i, i+n) of each row, lanes at a time, the
// last n mod lanes under a mask: a chunk's cosines and sines loaded once
// for every row (chunks outside, rows inside).
func genRotaryHalf(lanes int, p string) {
	vec := ZMM
	if lanes == 8 {
		vec = YMM
	}
	x, stride, rows, cos, sin, n := rotaryArgs()
	full, rem := GP64(), GP64()
	MOVQ(n, full)
	ANDQ(I32(-lanes), full)
	MOVQ(n, rem)
	ANDQ(U8(lanes-1), rem)
	var km OpmaskVirtual
	var ym VecVirtual
	if lanes == 16 {
		km = tailK(rem)
	} else {
		TESTQ(rem, rem)
		JZ(LabelRef(p + "_nomask"))
		ym = tailMask(rem)
		Label(p + "_nomask")
	}
	load := func(m Mem, v VecVirtual, masked bool) {
		switch {
		case !masked:
			VMOVUPS(m, v)
		case lanes == 16:
			VMOVUPS_Z(m, km, v)
		default:
			VMASKMOVPS(m, ym, v)
		}
	}
	store := func(v VecVirtual, m Mem, masked bool) {
		switch {
		case !masked:
			VMOVUPS(v, m)
		case lanes == 16:
			VMOVUPS(v, km, m)
		default:
			VMASKMOVPS(v, ym, m)
		}
	}
	i := GP64()
	XORQ(i, i)
	// chunk emits the loop over the rows of the chunk at element i.
	chunk := func(q string, masked bool) {
		c, s := vec(), vec()
		load(Mem{Base: cos, Index: i, Scale: 4}, c, masked)
		load(Mem{Base: sin, Index: i, Scale: 4}, s, masked)
		// xr and x2: the chunk in the row's halves, from row 0 on.
		xr, x2, r := GP64(), GP64(), GP64()
		LEAQ(Mem{Base: x, Index: i, Scale: 4}, xr)
		LEAQ(Mem{Base: xr, Index: n, Scale: 4}, x2)
		MOVQ(rows, r)
		// one turns the chunk of the row sc·off past xr (and x2).
		one := func(off Register, sc uint8) {
			ma, mb := Mem{Base: xr}, Mem{Base: x2}
			if off != nil {
				ma, mb = Mem{Base: xr, Index: off, Scale: sc}, Mem{Base: x2, Index: off, Scale: sc}
			}
			if lanes == 8 && !masked {
				// On avx2 each product takes its element from memory
				// (turn's arithmetic in fewer instructions): 0.93–0.99
				// of the time on a Zen 3.
				a, b, t2, t3 := vec(), vec(), vec(), vec()
				VMULPS(ma, c, a)
				VMULPS(mb, s, t2)
				VMULPS(ma, s, t3)
				VMULPS(mb, c, b)
				VSUBPS(t2, a, a)
				VADDPS(t3, b, b)
				store(a, ma, false)
				store(b, mb, false)
				return
			}
			a, b := vec(), vec()
			load(ma, a, masked)
			load(mb, b, masked)
			turn(vec, a, b, c, s)
			store(a, ma, masked)
			store(b, mb, masked)
		}
		rowLoops(q, !masked, r, stride, []Register{xr, x2}, one)
	}
	chunkLoops(p, i, full, rem, lanes, chunk)
}

// chunkLoops emits a rotary kernel's loop over its chunks and its end:
// chunk(q, false) for each whole chunk while the index i is below full
// (i moving on step a chunk), then chunk(q, true) for the rest if rem
// says there is one.
func chunkLoops(p string, i, full, rem Register, step int, chunk func(q string, masked bool)) {
	Label(p + "_chunk")
	CMPQ(i, full)
	JAE(LabelRef(p + "_tail"))
	chunk(p+"_rows", false)
	ADDQ(U8(step), i)
	JMP(LabelRef(p + "_chunk"))
	Label(p + "_tail")
	TESTQ(rem, rem)
	JZ(LabelRef(p + "_done"))
	chunk(p+"_trows", true)
	Label(p + "_done")
	VZEROUPPER()
	RET()
}

// rowLoops emits the loops that run one over r rows: four rows an
// iteration where the chunk is whole (a quarter of the loop's own
// instructions), then one at a time; one(off, sc) addresses its row at
// sc·off past the pointers ptrs (nil: at them), which move on stride
// bytes a row.
func rowLoops(q string, whole bool, r, stride Register, ptrs []Register, one func(off Register, sc uint8)) {
	if whole {
		s3 := GP64()
		LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
		Label(q + "_four")
		CMPQ(r, U8(4))
		JB(LabelRef(q))
		one(nil, 1)
		one(stride, 1)
		one(stride, 2)
		one(s3, 1)
		for _, p := range ptrs {
			LEAQ(Mem{Base: p, Index: stride, Scale: 4}, p)
		}
		SUBQ(U8(4), r)
		JMP(LabelRef(q + "_four"))
	}
	Label(q)
	TESTQ(r, r)
	JZ(LabelRef(q + "_end"))
	one(nil, 1)
	for _, p := range ptrs {
		ADDQ(stride, p)
	}
	DECQ(r)
	JMP(LabelRef(q))
	Label(q + "_end")
}

// pairIndex and pairSign are the permutation that repeats each of eight
// cosines twice, and the sign that makes the even lanes' sum a difference.
func pairIndex() Mem {
	v := make([]uint32, 16)
	for i := range v {
		v[i] = uint32(i / 2)
	}
	return dwords("ridx", v)
}

func pairSign() Mem {
	v := make([]uint32, 16)
	for i := 0; i < 16; i += 2 {
		v[i] = 0x80000000
	}
	return dwords("rsign", v)
}

// pairTurn turns the interleaved pairs of v by c2 and s2 (each cosine and
// sine twice, the sines negated on the even lanes): v·c2 + (swapped v)·s2,
// which is c·x_2i − s·x_(2i+1) and s·x_2i + c·x_(2i+1) with the twin's
// roundings (a negation is exact).
func pairTurn(vec func() VecVirtual, v, c2, s2 VecVirtual) {
	sw, t := vec(), vec()
	VPERMILPS(U8(0xb1), v, sw)
	VMULPS(v, c2, t)
	VMULPS(sw, s2, sw)
	VADDPS(sw, t, v)
}

// genRotaryPairs turns pairs (2i, 2i+1) of each row, lanes/2 pairs a
// vector: a chunk's cosines and sines loaded once for every row and
// repeated by VPERMPS; the last pairs under masks.
func genRotaryPairs(lanes int, p string) {
	vec := ZMM
	if lanes == 8 {
		vec = YMM
	}
	pl := lanes / 2 // pairs a vector
	x, stride, rows, cos, sin, n := rotaryArgs()
	full, rem := GP64(), GP64()
	MOVQ(n, full)
	ANDQ(I32(-pl), full)
	MOVQ(n, rem)
	ANDQ(U8(pl-1), rem)
	idx, sign := vec(), vec()
	if lanes == 16 {
		VMOVDQU32(pairIndex(), idx)
		VMOVDQU32(pairSign(), sign)
	} else {
		VMOVDQU(pairIndex(), idx)
		VMOVDQU(pairSign(), sign)
	}
	var kc, kx OpmaskVirtual
	var mc, mx VecVirtual
	rem2 := GP64()
	LEAQ(Mem{Base: rem, Index: rem, Scale: 1}, rem2)
	if lanes == 16 {
		kc, kx = tailK(rem), tailK(rem2)
	} else {
		TESTQ(rem, rem)
		JZ(LabelRef(p + "_nomask"))
		mc, mx = tailMask(rem), tailMask(rem2)
		Label(p + "_nomask")
	}
	half := func(v VecVirtual) Register {
		if lanes == 16 {
			return v.AsY()
		}
		return v.AsX()
	}
	j := GP64()
	XORQ(j, j)
	chunk := func(q string, masked bool) {
		c, s := vec(), vec()
		for _, t := range []struct {
			v    VecVirtual
			base Register
		}{{c, cos}, {s, sin}} {
			m := Mem{Base: t.base, Index: j, Scale: 4}
			switch {
			case !masked:
				VMOVUPS(m, half(t.v))
			case lanes == 16:
				VMOVUPS_Z(m, kc, t.v)
			default:
				VMASKMOVPS(m, mc.AsX(), t.v.AsX())
			}
			VPERMPS(t.v, idx, t.v)
		}
		VXORPS(sign, s, s)
		xr, r := GP64(), GP64()
		LEAQ(Mem{Base: x, Index: j, Scale: 8}, xr) // the chunk in row 0
		MOVQ(rows, r)
		one := func(off Register, sc uint8) {
			v := vec()
			m := Mem{Base: xr}
			if off != nil {
				m = Mem{Base: xr, Index: off, Scale: sc}
			}
			if lanes == 8 && !masked {
				// pairTurn with its loads in its instructions, as in
				// genRotaryHalf: 0.87–0.95 of the time on a Zen 3.
				sw, t := vec(), vec()
				VPERMILPS(U8(0xb1), m, sw)
				VMULPS(m, c, t)
				VMULPS(sw, s, sw)
				VADDPS(sw, t, v)
				VMOVUPS(v, m)
				return
			}
			switch {
			case !masked:
				VMOVUPS(m, v)
			case lanes == 16:
				VMOVUPS_Z(m, kx, v)
			default:
				VMASKMOVPS(m, mx, v)
			}
			pairTurn(vec, v, c, s)
			switch {
			case !masked:
				VMOVUPS(v, m)
			case lanes == 16:
				VMOVUPS(v, kx, m)
			default:
				VMASKMOVPS(v, mx, m)
			}
		}
		rowLoops(q, !masked, r, stride, []Register{xr}, one)
	}
	chunkLoops(p, j, full, rem, pl, chunk)
}
