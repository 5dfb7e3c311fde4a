package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// i8Chunk is how many keys the avx2 int8 multi-row blend scales at a time.
const i8Chunk = 16

// blendMultiI8Y: acc[r*d+c] += Σ_j (w[r*n+j]·s_j)*v[j*stride+4+c] for R
// rows, each row the bits of the one-row kernel (genBlendRowsI8Y): the
// keys go in chunks of i8Chunk, each chunk's weights times their rows'
// scales formed once into the frame, then blendMulti16's blocks of columns
// over the chunk with those products broadcast from memory. Forming w·s in
// every block of columns put a multiply and a shuffle per row and key
// beside its FMAs. The accumulators go through memory between chunks,
// which leaves every column's sums in key order. It ends at bmulti8y_done.
func blendMultiI8Y(R int) {
	m := loadMultiOf(R, "w", "acc", "v", 0)
	name := fmt.Sprintf("bmulti8y%d", R)
	ws := AllocLocal(4 * R * i8Chunk)
	save := AllocLocal(24) // acc, d, and a row of w's bytes
	at := func(i int) Mem { s := save; s.Disp += 8 * i; return s }
	db := GP64()
	MOVQ(m.d, db)
	SHLQ(U8(2), db)
	MOVQ(m.in, at(0))
	MOVQ(m.d, at(1))
	SHLQ(U8(2), m.n)
	MOVQ(m.n, at(2))
	SHRQ(U8(2), m.n)

	Label(name + "_chunk")
	TESTQ(m.n, m.n)
	JZ(LabelRef("bmulti8y_done"))
	c := GP64()
	MOVQ(U32(i8Chunk), c)
	CMPQ(m.n, c)
	CMOVQLT(m.n, c)

	// The chunk's weights times their rows' scales, key by key, R apart.
	{
		nb := GP64()
		MOVQ(at(2), nb)
		w := newRows(m.o, nb)
		vp, fp, j := GP64(), GP64(), GP64()
		MOVQ(m.kv, vp)
		LEAQ(ws, fp)
		MOVQ(c, j)
		Label(name + "_scale")
		s := XMM()
		VMOVSS(Mem{Base: vp}, s)
		for r := range R {
			x := XMM()
			VMULSS(w.at(r), s, x)
			VMOVSS(x, Mem{Base: fp, Disp: 4 * r})
		}
		ADDQ(U8(4), m.o)
		ADDQ(U8(4*R), fp)
		ADDQ(m.stride, vp)
		DECQ(j)
		JNZ(LabelRef(name + "_scale"))
	}

	accP, dl, vcol := GP64(), GP64(), GP64()
	MOVQ(at(0), accP)
	MOVQ(at(1), dl)
	LEAQ(Mem{Base: m.kv, Disp: 4}, vcol)
	cols := func(P int, loop string, mask VecVirtual) {
		blendColumnsI8Y(R, P, accP, db, vcol, dl, ws, c, m.stride, loop, mask)
	}
	for _, P := range []int{multiBlendCols[R], 1} {
		loop, next := fmt.Sprintf("%s_c%d", name, P), fmt.Sprintf("%s_c%d_next", name, P)
		Label(loop)
		CMPQ(dl, U8(8*P))
		JL(LabelRef(next))
		cols(P, loop, nil)
		ADDQ(U32(32*P), accP)
		ADDQ(U32(8*P), vcol)
		SUBQ(U8(8*P), dl)
		JMP(LabelRef(loop))
		Label(next)
	}
	TESTQ(dl, dl)
	JZ(LabelRef(name + "_next"))
	cols(1, name+"_tail", tailMask(dl))
	Label(name + "_next")
	SUBQ(c, m.n)
	IMULQ(m.stride, c)
	ADDQ(c, m.kv)
	JMP(LabelRef(name + "_chunk"))
}

// blendColumnsI8Y emits the blend of P vectors of columns (one masked
// vector, the last dl columns, if mask is not nil) for R rows over the c
// keys of a chunk from vcol, the scaled weights at ws, in key order, the
// FMAs taking blendColumns16's operands.
func blendColumnsI8Y(R, P int, accP, db, vcol, dl Register, ws Mem, c, stride Register, name string, mask VecVirtual) {
	accs := newRows(accP, db)
	accAt := func(r, j int) Mem {
		at := accs.at(r)
		at.Disp += 32 * j
		return at
	}
	a := make([]VecVirtual, R*P)
	for r := range R {
		for j := range P {
			a[r*P+j] = ymm16.load(accAt(r, j), mask)
		}
	}
	vp, fp, k := GP64(), GP64(), GP64()
	MOVQ(vcol, vp)
	LEAQ(ws, fp)
	MOVQ(c, k)
	Label(name + "_key")
	widened := func(j int) VecVirtual {
		if mask != nil {
			return partI8(Mem{Base: vp}, dl)
		}
		t := YMM()
		widenI8YOp(Mem{Base: vp, Disp: 8 * j}, t)
		return t
	}
	weight := func(r int) VecVirtual {
		b := YMM()
		VBROADCASTSS(Mem{Base: fp, Disp: 4 * r}, b)
		return b
	}
	blockFMAs(R, P, a, widened, weight)
	ADDQ(U8(4*R), fp)
	ADDQ(stride, vp)
	DECQ(k)
	JNZ(LabelRef(name + "_key"))
	for r := range R {
		for j := range P {
			ymm16.store(a[r*P+j], accAt(r, j), mask)
		}
	}
}

// blockFMAs emits a key's FMAs into the R·P accumulators a (row r's P
// vectors consecutive), from the key's P widened vectors of V and the R
// rows' weights: the weights held and each vector of V loaded in turn, or,
// where R·P + R + 1 registers would not fit, the P vectors of V held and
// each weight broadcast in turn.
func blockFMAs(R, P int, a []VecVirtual, widened func(j int) VecVirtual, weight func(r int) VecVirtual) {
	if R*P+R+1 > 16 {
		t := make([]VecVirtual, P)
		for j := range P {
			t[j] = widened(j)
		}
		for r := range R {
			b := weight(r)
			for j := range P {
				VFMADD231PS(t[j], b, a[r*P+j])
			}
		}
		return
	}
	b := make([]VecVirtual, R)
	for r := range R {
		b[r] = weight(r)
	}
	for j := range P {
		t := widened(j)
		for r := range R {
			VFMADD231PS(t, b[r], a[r*P+j])
		}
	}
}
