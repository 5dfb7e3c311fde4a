package kernels

// elems is the budget of one call of an element-wise kernel (maxCall and
// rowsPerCall are defined in internal/kernel, maxCall in package attention
// too).
const (
	elems = "maxCall"
)

// All is the table: every kernel, in the order of the generated files.
var All = []Kernel{
	{
		Name: "dot", Params: "x, y []float32", Results: "float32",
		Doc:   "returns Σ x[i]*y[i] for i < len(x); len(y) >= len(x).",
		Split: &Split{N: "len(x)", Per: elems, Args: "x[lo:hi], y[lo:hi]", Reduce: "+"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
		Pkgs:  Root | Engine,
	},
	{
		Name: "scoreRows", Params: "dst, k []float32, stride int, q []float32",
		Doc:    "sets dst[i] = Σ_j k[i*stride+j]*q[j] for i < len(dst), j < len(q).",
		Split:  &Split{N: "len(dst)", Per: "rowsPerCall(len(q))", Args: "dst[lo:hi], k[lo*stride:], stride, q"},
		Impls:  map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
		Widths: scoreRowsWidths,
	},
	{
		Name: "axpy", Params: "alpha float32, x, y []float32",
		Doc:   "sets y[i] += alpha*x[i] for i < len(x).",
		Split: &Split{N: "len(x)", Per: elems, Args: "alpha, x[lo:hi], y[lo:hi]"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
		Pkgs:  Root | Engine,
	},
	{
		Name: "blendRows", Params: "acc, w, v []float32, stride int",
		Doc:   "sets acc[j] += Σ_i w[i]*v[i*stride+j] for i < len(w), j < len(acc).",
		Split: &Split{N: "len(w)", Per: "rowsPerCall(len(acc))", Args: "acc, w[lo:hi], v[lo*stride:], stride"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "scoreRowsF16", Params: "dst []float32, k []uint16, stride int, q []float32",
		Doc:   "sets dst[i] = Σ_j f16(k[i*stride+j])*q[j] for i < len(dst), j < len(q): scoreRows over half-precision key rows, each element widened exactly to float32.",
		Split: &Split{N: "len(dst)", Per: "rowsPerCall(len(q))", Args: "dst[lo:hi], k[lo*stride:], stride, q"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "blendRowsF16", Params: "acc, w []float32, v []uint16, stride int",
		Doc:   "sets acc[j] += Σ_i w[i]*f16(v[i*stride+j]) for i < len(w), j < len(acc): blendRows over half-precision value rows, each element widened exactly to float32.",
		Split: &Split{N: "len(w)", Per: "rowsPerCall(len(acc))", Args: "acc, w[lo:hi], v[lo*stride:], stride"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "scoreRowsBF16", Params: "dst []float32, k []uint16, stride int, q []float32",
		Doc:   "sets dst[i] = Σ_j bf16(k[i*stride+j])*q[j] for i < len(dst), j < len(q): scoreRows over bfloat16 key rows, each element the top half of a float32.",
		Split: &Split{N: "len(dst)", Per: "rowsPerCall(len(q))", Args: "dst[lo:hi], k[lo*stride:], stride, q"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "blendRowsBF16", Params: "acc, w []float32, v []uint16, stride int",
		Doc:   "sets acc[j] += Σ_i w[i]*bf16(v[i*stride+j]) for i < len(w), j < len(acc): blendRows over bfloat16 value rows, each element the top half of a float32.",
		Split: &Split{N: "len(w)", Per: "rowsPerCall(len(acc))", Args: "acc, w[lo:hi], v[lo*stride:], stride"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "widenF16", Params: "dst []float32, src []uint16",
		Doc:   "sets dst[i] = f16(src[i]) for i < len(dst), each half-precision element widened exactly to float32; len(src) >= len(dst).",
		Split: &Split{N: "len(dst)", Per: elems, Args: "dst[lo:hi], src[lo:]"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "widenBF16", Params: "dst []float32, src []uint16",
		Doc:   "sets dst[i] = bf16(src[i]) for i < len(dst), each bfloat16 element the top half of a float32; len(src) >= len(dst).",
		Split: &Split{N: "len(dst)", Per: elems, Args: "dst[lo:hi], src[lo:]"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "narrowF16", Params: "dst []uint16, src []float32",
		Doc: "sets dst[i] = f32ToF16(src[i]) for i < len(src): each float32 rounded to the nearest binary16, ties to even, " +
			"±Inf from 65520 on, a NaN made quiet with the top bits of its payload; len(dst) >= len(src).",
		Split: &Split{N: "len(src)", Per: elems, Args: "dst[lo:hi], src[lo:hi]"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "narrowBF16", Params: "dst []uint16, src []float32",
		Doc: "sets dst[i] = f32ToBF16(src[i]) for i < len(src): each float32 rounded to the nearest bfloat16, ties to even, " +
			"subnormals kept, a NaN made quiet with the top bits of its payload; len(dst) >= len(src).",
		Split: &Split{N: "len(src)", Per: elems, Args: "dst[lo:hi], src[lo:hi]"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "scoreRowsMulti", Params: "dst, k []float32, stride int, q []float32, rows int",
		Doc: "sets dst[r*n+j] = Σ_c k[j*stride+c]*q[r*d+c] for r < rows, j < n = len(dst)/rows, c < d = len(q)/rows: " +
			"scoreRows for several query rows, each key row read once, each score the bits scoreRows gives it " +
			"while n is a multiple of 8; 1 <= rows <= 4, len(dst) and len(q) below 2^32. " +
			"Callers keep n·d within one call's budget.",
		// NEON runs the twin, the one-row kernels row by row: a NEON
		// multi-row kernel would have to add in their order (see Doc).
		Impls:  map[string]Use{"avx512": Asm, "avx2": Asm},
		Rows:   &ByRows{Param: "rows", Variants: scoreRowsMultiVariants},
		Widths: multiWidths,
	},
	{
		Name: "scoreRowsMultiNear", Params: "dst, k []float32, stride int, q []float32, rows int",
		Doc: "is scoreRowsMulti for 4 <= rows <= 4, with the same bits, for K in cache: " +
			"the avx512 kernel asks for no row ahead, where scoreRowsMulti asks for K 32 rows on, which streams it from memory " +
			"and costs time when the step's K and V are in the L3.",
		// Only avx512 has it; elsewhere the twin calls scoreRowsMulti.
		Impls:  map[string]Use{"avx512": Asm},
		Rows:   &ByRows{Param: "rows", Variants: scoreRowsMultiNearVariants},
		Widths: multiWidths,
	},
	{
		Name: "blendRowsMulti", Params: "acc, w, v []float32, stride int, rows int, next []float32",
		Doc: "sets acc[r*d+c] += Σ_j w[r*n+j]*v[j*stride+c] for r < rows, c < d = len(acc)/rows, j < n = len(w)/rows: " +
			"blendRows for several rows, each value row read once, each row's sums the bits blendRows gives it; " +
			"1 <= rows <= 4, len(acc) and len(w) below 2^32. " +
			"Callers keep n·d within one call's budget. " +
			"If next is not empty, it is where the value rows of the caller's next call start: " +
			"the avx2 and avx512 kernels ask for them in address order as they go, a line for each line of v they read, " +
			"so that the next call finds them in cache (an empty next asks for nothing); " +
			"a non-empty next holds at least n·d' elements, d' = d rounded up to a multiple of 16, all that is asked for. " +
			"Where a weight and a value are both NaN, the avx512 kernel's sum for three rows keeps the value's payload, not the weight's.",
		// NEON runs the twin, the one-row kernels row by row: a NEON
		// multi-row kernel would have to add in their order (see Doc).
		Impls:  map[string]Use{"avx512": Asm, "avx2": Asm},
		Rows:   &ByRows{Param: "rows", Ask: "next", Variants: blendRowsMultiVariants},
		Widths: multiWidths,
	},
	{
		Name: "scoreRowsMulti8", Params: "dst, k []float32, stride int, q []float32, rows int, also []float32",
		Doc: "is scoreRowsMulti for 5 <= rows <= 8, len(dst) and len(q) below 2^31. If also is not empty, the avx512 kernel asks for its rows in address order as it goes, " +
			"a line for each line of k it reads (the tile's value rows, say, for the blend that follows). " +
			"Only avx512 has it in assembly, its lanes holding two keys of each row; " +
			"elsewhere it is scoreRowsMulti on the first four rows and on the rest.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "also", Variants: scoreRowsMulti8Variants},
		Tiers: tiers{"avx512": prod(wide8)},
	},
	{
		Name: "blendRowsMulti8", Params: "acc, w, v []float32, stride int, rows int, next []float32",
		Doc: "is blendRowsMulti for 5 <= rows <= 8, len(acc) and len(w) below 2^31, next as there. Only avx512 has it in assembly, a vector of columns a pass; " +
			"elsewhere it is blendRowsMulti on the first four rows and on the rest. " +
			"Where a weight and a value are both NaN, the avx512 kernel's sum keeps the value's payload, not the weight's.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "next", Variants: blendRowsMulti8Variants},
		Tiers: tiers{"avx512": prod(wide8)},
	},
	{
		Name: "scoreRowsMultiF16", Params: "dst []float32, k []uint16, stride int, q []float32, rows int",
		Doc: "sets dst[r*n+j] = Σ_c f16(k[j*stride+c])*q[r*d+c] for r < rows, j < n = len(dst)/rows, c < d = len(q)/rows: " +
			"scoreRowsF16 for several query rows, each half-precision key row read once, each score the bits scoreRowsF16 gives it " +
			"while n is a multiple of 8; 1 <= rows <= 4, len(dst) and len(q) below 2^32. " +
			"Callers keep n·d within one call's budget.",
		// NEON runs the twin, scoreRowsF16 row by row, as for scoreRowsMulti.
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Variants: scoreRowsMultiF16Variants},
	},
	{
		Name: "scoreRowsMultiBF16", Params: "dst []float32, k []uint16, stride int, q []float32, rows int",
		Doc: "sets dst[r*n+j] = Σ_c bf16(k[j*stride+c])*q[r*d+c] for r < rows, j < n = len(dst)/rows, c < d = len(q)/rows: " +
			"scoreRowsBF16 for several query rows, each bfloat16 key row read once, each score the bits scoreRowsBF16 gives it " +
			"while n is a multiple of 8; 1 <= rows <= 4, len(dst) and len(q) below 2^32. " +
			"Callers keep n·d within one call's budget.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Variants: scoreRowsMultiBF16Variants},
	},
	{
		Name: "scoreRowsMultiPairedBF16", Params: "dst []float32, k []uint16, stride int, q []float32, rows int",
		Doc: "is scoreRowsMultiBF16 with its query rows in pair order (see pairOrder): in each block of sixteen columns " +
			"from a row's start, while sixteen remain, the even columns first, then the odd ones; the columns after the " +
			"last block in order. The avx2 kernel takes a block's even and odd bfloat16 elements apart, and so loads the " +
			"query halves as they are rather than splitting every row's block at every step of keys; there its scores are " +
			"the bits scoreRowsMultiBF16 gives the rows in order. Elsewhere it is the generic twin, within the same bounds.",
		Impls: map[string]Use{"avx512": Generic, "avx2": Asm, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Variants: scoreRowsMultiPairedVariants},
		Tiers: tiers{"avx2": prod(pairedX)},
	},
	{
		Name: "blendRowsMultiF16", Params: "acc, w []float32, v []uint16, stride int, rows int, next []uint16",
		Doc: "sets acc[r*d+c] += Σ_j w[r*n+j]*f16(v[j*stride+c]) for r < rows, c < d = len(acc)/rows, j < n = len(w)/rows: " +
			"blendRowsF16 for several rows, each half-precision value row read once, each row's sums the bits blendRowsF16 gives it; " +
			"1 <= rows <= 4, len(acc) and len(w) below 2^32. " +
			"Callers keep n·d within one call's budget. If next is not empty, the avx2 kernel asks for its lines as blendRowsMulti's does " +
			"(the avx512 one streams V itself and asks for nothing). Where a weight and a value are both NaN, the avx512 kernel's sums " +
			"keep the value's payload, not the weight's.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "next", Variants: blendRowsMultiF16Variants},
	},
	{
		Name: "blendRowsMultiBF16", Params: "acc, w []float32, v []uint16, stride int, rows int, next []uint16",
		Doc: "sets acc[r*d+c] += Σ_j w[r*n+j]*bf16(v[j*stride+c]) for r < rows, c < d = len(acc)/rows, j < n = len(w)/rows: " +
			"blendRowsBF16 for several rows, each bfloat16 value row read once, each row's sums the bits blendRowsBF16 gives it; " +
			"1 <= rows <= 4, len(acc) and len(w) below 2^32. " +
			"Callers keep n·d within one call's budget. next and NaN payloads as blendRowsMultiF16's.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "next", Variants: blendRowsMultiBF16Variants},
	},
	{
		Name: "scoreRowsMulti8F16", Params: "dst []float32, k []uint16, stride int, q []float32, rows int, also []uint16",
		Doc:   "is scoreRowsMultiF16 for 5 <= rows <= 8, lengths and also as scoreRowsMulti8's. Only avx512 has it in assembly; elsewhere it is scoreRowsMultiF16 on the first four rows and on the rest.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "also", Variants: scoreRowsMulti8F16Variants},
		Tiers: tiers{"avx512": prod(wide16R8)},
	},
	{
		Name: "blendRowsMulti8F16", Params: "acc, w []float32, v []uint16, stride int, rows int, next []uint16",
		Doc: "is blendRowsMultiF16 for 5 <= rows <= 8, lengths as blendRowsMulti8's, next as blendRowsMulti's. Only avx512 has it in assembly; elsewhere it is blendRowsMultiF16 on the first four rows and on the rest. " +
			"NaN payloads as blendRowsMulti8's.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "next", Variants: blendRowsMulti8F16Variants},
		Tiers: tiers{"avx512": prod(wide16R8)},
	},
	{
		Name: "scoreRowsMulti8BF16", Params: "dst []float32, k []uint16, stride int, q []float32, rows int, also []uint16",
		Doc:   "is scoreRowsMultiBF16 for 5 <= rows <= 8, lengths and also as scoreRowsMulti8's. Only avx512 has it in assembly; elsewhere it is scoreRowsMultiBF16 on the first four rows and on the rest.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "also", Variants: scoreRowsMulti8BF16Variants},
		Tiers: tiers{"avx512": prod(wide16R8)},
	},
	{
		Name: "blendRowsMulti8BF16", Params: "acc, w []float32, v []uint16, stride int, rows int, next []uint16",
		Doc: "is blendRowsMultiBF16 for 5 <= rows <= 8, lengths as blendRowsMulti8's, next as blendRowsMulti's. Only avx512 has it in assembly; elsewhere it is blendRowsMultiBF16 on the first four rows and on the rest. " +
			"NaN payloads as blendRowsMulti8's.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "next", Variants: blendRowsMulti8BF16Variants},
		Tiers: tiers{"avx512": prod(wide16R8)},
	},
	{
		Name: "scoreRowsI8", Params: "dst []float32, k []int8, stride int, q []float32",
		Doc: "sets dst[i] = s_i·Σ_j k[i*stride+4+j]*q[j] for i < len(dst), j < len(q), where s_i is the float32 whose little-endian bytes " +
			"are k[i*stride:i*stride+4] (a row of an int8 cache: its scale, then its elements): scoreRows over int8 key rows, each element " +
			"exact in float32, the scale applied once to each row's sum.",
		Split: &Split{N: "len(dst)", Per: "rowsPerCall(len(q))", Args: "dst[lo:hi], k[lo*stride:], stride, q"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "blendRowsI8", Params: "acc, w []float32, v []int8, stride int",
		Doc: "sets acc[j] += Σ_i (w[i]·s_i)*v[i*stride+4+j] for i < len(w), j < len(acc), s_i row i's scale as in scoreRowsI8: " +
			"blendRows over int8 value rows, each weight multiplied by its row's scale once.",
		Split: &Split{N: "len(w)", Per: "rowsPerCall(len(acc))", Args: "acc, w[lo:hi], v[lo*stride:], stride"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "scoreRowsMultiI8", Params: "dst []float32, k []int8, stride int, q []float32, rows int",
		Doc: "sets dst[r*n+j] for r < rows, j < n = len(dst)/rows to scoreRowsI8's score of key row j against query row r " +
			"(q[r*d:(r+1)*d], d = len(q)/rows), each row's scores the bits scoreRowsI8 gives it while n is a multiple of 8; 1 <= rows <= 4, " +
			"len(dst) and len(q) below 2^32. Callers keep n·d within one call's budget.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Variants: scoreRowsMultiI8Variants},
	},
	{
		Name: "blendRowsMultiI8", Params: "acc, w []float32, v []int8, stride int, rows int, next []int8",
		Doc: "sets acc[r*d+c] += Σ_j (w[r*n+j]·s_j)*v[j*stride+4+c] for r < rows, c < d = len(acc)/rows, j < n = len(w)/rows: " +
			"blendRowsI8 for several rows, each row's sums the bits blendRowsI8 gives it; 1 <= rows <= 4. " +
			"len(acc) and len(w) below 2^32. Callers keep n·d within one call's budget. next, the value rows of the tile after, " +
			"may be asked for (no implementation does yet).",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Rows:  &ByRows{Param: "rows", Ask: "next", Variants: blendRowsMultiI8Variants},
	},
	{
		Name: "widenRowsI8", Params: "dst []float32, src []int8, stride int, d int",
		Doc: "sets dst[i*d+j] = s_i·src[i*stride+4+j] for i < len(dst)/d, j < d, s_i row i's scale as in scoreRowsI8: " +
			"the int8 rows dequantised, packed.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "narrowI8", Params: "dst []int8, src []float32",
		Doc: "stores src as one int8 row at dst[:4+len(src)]: its scale s = m/127 in float32, m = max |src[j]|, as four little-endian " +
			"bytes, then each src[j] as round-half-even(src[j]·(127/m)) in float32 (127/m and the product each rounded once; below " +
			"m = 2⁻⁶⁴ both scaled by 2⁶⁴ first, so that 127/m does not overflow; at most 127 in magnitude). A row of zeros " +
			"stores s = 0 and zeros; a row with a NaN or an infinity stores s = NaN and zeros.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
	},
	{
		Name: "quantRowsI8", Params: "dst []int8, stride int, src []float32, d int, f float32, tmp []float32",
		Doc: "stores each of the len(src)/d rows of src as an int8 row of dst, row r at dst[r·stride:]: rotated first unless f is 0 " +
			"(hadamardRows with f, in tmp, len(tmp) ≥ 2·d), then quantised as by narrowI8: the bits of those two, which it is a " +
			"variant of. d is 128 (the avx512 assembly holds a row in registers; the avx2 one half a row, a row through tmp while it rotates the next).",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Tiers: tiers{"avx512": prod(quantZ), "avx2": prod(quantX)},
	},
	{
		Name: "hadamardRows", Params: "x []float32, d int, f float32",
		Doc: "is hadamard(x, d, 1) for d a multiple of 16 whose block b = d&-d is at least 16, f being float32(1/√b): " +
			"every whole row of d floats of x rotated, the same bits.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "rotaryHalf", Params: "x []float32, stride, rows int, cos, sin []float32",
		Doc: "rotates each of rows rows of x (row r at x[r·stride:]) in place, as a rotary embedding rotates rotate-half pairs: with n = " +
			"len(cos) = len(sin), for i < n, x_i, x_(i+n) = c·x_i − s·x_(i+n), s·x_i + c·x_(i+n) (c = cos[i], s = sin[i]), each product " +
			"and each sum rounded once, no fused multiply-add: ONNX RotaryEmbedding's float32 arithmetic.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "rotaryPairs", Params: "x []float32, stride, rows int, cos, sin []float32",
		Doc:   "is rotaryHalf for interleaved pairs: x_2i, x_(2i+1) = c·x_2i − s·x_(2i+1), s·x_2i + c·x_(2i+1), the same roundings.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "hadamard", Params: "x []float32, d, lanes int",
		Doc: "applies the orthonormal Walsh–Hadamard rotation in blocks of b = d&-d (the largest power of two dividing d) to each of " +
			"the len(x)/(d·lanes) matrices of d rows of lanes floats in x, along its rows: each block of b rows is multiplied by " +
			"H_b/√b, H_b the Sylvester Hadamard matrix (butterflies in order of increasing span, the factor applied last). It is its " +
			"own inverse up to rounding. d > 0, lanes > 0.",
		Impls: map[string]Use{"avx512": Generic, "avx2": Generic, "neon": Generic},
	},
	{
		Name: "maxf", Base: "max", Params: "x []float32", Results: "float32",
		Doc:   "returns the largest x[i], NaN if any is NaN, -Inf if x is empty.",
		Split: &Split{N: "len(x)", Per: elems, Args: "x[lo:hi]", Reduce: "max"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
		Pkgs:  Root | Engine,
	},
	{
		Name: "scale", Params: "s float32, x []float32",
		Doc:   "sets x[i] *= s.",
		Split: &Split{N: "len(x)", Per: elems, Args: "s, x[lo:hi]"},
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
		Pkgs:  Root | Engine,
	},
	{
		Name: "expv", Base: "exp", Params: "dst, x []float32",
		Doc:   "sets dst[i] = e^x[i] for i < len(x), bit-identical to exp32.",
		Split: &Split{N: "len(x)", Per: elems, Args: "dst[lo:hi], x[lo:hi]"},
		Pair: &PairDoc{
			Advance: []string{"dst", "x"},
			Fast:    "sets dst[i] = e^x[i], bit-identical to exp32, while |x[i]| <= 86.5; it returns how many elements it did.",
			Special: "sets dst[i] = e^x[i] for any input, from the first vector on until a vector the fast half can take; it returns how many elements it did.",
		},
		Impls: map[string]Use{"avx512": Asm, "avx2": Pair, "neon": Asm},
		Pkgs:  Root | Engine,
	},
	{
		Name: "expSum", Params: "dst, x []float32, m float32", Results: "float32",
		Doc: "sets dst[i] = e^(x[i]-m) for i < len(x) and returns their sum. " +
			"The caller passes an x without NaN and an m with x[i]-m <= 86.5, as a softmax's maximum is.",
		Split: &Split{N: "len(x)", Per: elems, Args: "dst[lo:hi], x[lo:hi], m", Reduce: "+"},
		Pair: &PairDoc{
			Advance: []string{"dst", "x"},
			Fast:    "sets dst[i] = e^(x[i]-m) while x[i]-m >= -86.5 (or lanes are at or below -104), and returns the sum of what it wrote and how many elements it did.",
			Special: "is the fast half for any input, from the first vector on until a vector the fast half can take.",
		},
		Impls: map[string]Use{"avx512": Asm, "avx2": Pair, "neon": Asm},
		Pkgs:  Root | Engine,
	},
	{
		Name: "blockScores", Params: "st, qt, k []float32, stride int",
		Doc:   "sets st[j*16+r] = Σ_c qt[c*16+r]*k[j*stride+c] for j < len(st)/16, c < len(qt)/16.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "blockScoresAsk", Params: "st, qt, k []float32, stride int, ask []uint16",
		Doc: "is blockScores, bit for bit, and asks for the first 2·(len(st)/16)·(len(qt)/16) bytes of ask (the 16-bit rows the caller widens next), spread over its FMAs, in place of fetching its own rows ahead; " +
			"len(ask) >= (len(st)/16)·(len(qt)/16). NEON has no such form; there it is blockScores.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Tiers: tiers{"avx512": prod(blockAskZ), "avx2": prod(blockAskX)},
	},
	{
		Name: "blockScores2", Params: "st0, st1, qt0, qt1, k []float32, stride int",
		Doc:   "is blockScores(st0, qt0, k, stride) and blockScores(st1, qt1, k, stride), bit for bit; st1 and qt1 are as long as st0 and qt0. Only avx512 has it in assembly (two FMAs per broadcast key element); elsewhere it is the two calls.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Tiers: tiers{"avx512": prod(pairedBlocks)},
	},
	{
		Name: "blockMax", Params: "st, ml []float32",
		Doc:   "starts a tile of the online softmax as blockMaxGeneric does: m = max(m, st rows), mu = m or 0 where -Inf, c = e^(m_old-mu), l *= c.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "blockExpSum", Params: "st, ml []float32",
		Doc: "sets st[j*16+r] = e^(st[j*16+r]-mu[r]) and adds it to l[r].",
		Pair: &PairDoc{
			Advance: []string{"st"},
			Fast:    "sets st[j*16+r] = e^(st[j*16+r]-mu[r]) and adds it to l[r] while |st-mu| <= 86.5; it returns how many floats it did.",
			Special: "is the fast half for any input, from the first group on until a group the fast half can take.",
		},
		Impls: map[string]Use{"avx512": Asm, "avx2": Pair, "neon": Asm},
	},
	{
		Name: "blockBlend", Params: "ot, st, v []float32, stride int, c []float32",
		Doc:   "sets ot[i*16+r] = ot[i*16+r]*c[r] + Σ_j st[j*16+r]*v[j*stride+i] for i < len(ot)/16, j < len(st)/16; an empty c leaves ot unscaled.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Asm},
	},
	{
		Name: "blockBlendAsk", Params: "ot, st, v []float32, stride int, c []float32, ask []uint16",
		Doc: "is blockBlend, bit for bit, and asks for the first 2·(len(st)/16)·(len(ot)/16) bytes of ask (the 16-bit rows the caller widens next), spread over its FMAs, in place of fetching its own rows ahead; " +
			"len(ask) >= (len(st)/16)·(len(ot)/16). NEON has no such form; there it is blockBlend.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm, "neon": Generic},
		Tiers: tiers{"avx512": prod(blockAskZ), "avx2": prod(blockAskX)},
	},
	{
		Name: "blockBlend2", Params: "ot0, ot1, st0, st1, v []float32, stride int, c0, c1 []float32",
		Doc:   "is blockBlend(ot0, st0, v, stride, c0) and blockBlend(ot1, st1, v, stride, c1), bit for bit; ot1, st1 and c1 are as long as ot0, st0 and c0. Only avx512 has it in assembly (two FMAs per broadcast value element); elsewhere it is the two calls.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Generic, "neon": Generic},
		Tiers: tiers{"avx512": prod(pairedBlocks)},
	},
	{
		Name: "blockIn", Params: "qt, q []float32, stride, rows int",
		Doc:   "sets qt[c*16+r] = q[r*stride+c] for r < rows, and 0 for rows <= r < 16, c < len(qt)/16.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm},
	},
	{
		Name: "blockOut", Params: "o []float32, stride, rows int, ot []float32",
		Doc:   "sets o[r*stride+c] = ot[c*16+r] for r < rows, c < len(ot)/16.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm},
	},
	{
		Name: "blockKeep16", Params: "st []float32, keep []byte, stride int",
		Doc:   "sets st[k*16+r] = -Inf where keep[r*stride+k] == 0, for r < 16 and k < len(st)/16 rounded down to a multiple of 16.",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm},
	},
	{
		Name: "prefetch", Params: "x []float32, stride, rows, cols int",
		Doc:     "asks for the cache lines of x[r*stride : r*stride+cols] for r < rows, and changes nothing; cols > 0 and every such row lies within x.",
		Generic: NoOp,
		// Without arm64 hardware to measure it on, prefetching is a no-op there.
		// avx512 reuses avx2's: one PREFETCHT0 per cache line and no vector
		// register, so wider registers have nothing to widen (measured:
		// docs/performance/amd-epyc-zen5.md#avx512-reuses-avx2s-prefetch-from-code-comments),
		// and a prefill spends under 1% of its time in it.
		Impls: map[string]Use{"avx512": Reuse, "avx2": Asm, "neon": NoOp},
	},
	{
		Name: "softcapPrep", Params: "x, z []float32, inv float32",
		Doc:   "sets x[i] *= inv and z[i] = 2*|x[i]| for i < len(x).",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm},
	},
	{
		Name: "softcapFinish", Params: "x, e []float32, c float32",
		Doc:   "sets x[i] = c*tanhFinish(x[i], e[i]) for i < len(x).",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm},
	},
	{
		Name: "additivePrep", Params: "x, z, u []float32, stride int, s []float32",
		Doc:   "sets x[r*d+j] = s[j] + u[r*stride+j] and z[r*d+j] = 2*|x[r*d+j]| for r < len(x)/d, j < d = len(s).",
		Impls: map[string]Use{"avx512": Asm, "avx2": Asm},
	},
}
