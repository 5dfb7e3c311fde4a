package kernels

// The variants' tiers and the gains that earn them, all re-measured on
// 2026-12-07 on one machine (zen5): each Ratio is the median, over five
// rounds or more of alternating runs of two prebuilt test binaries with
// one worker, of a step's time with the variant over its time with the
// code it replaces (the one-row kernels, the plain copy, the general
// loop). The runs, their commands and each shape's figure are in
// docs/performance/amd-epyc-zen5.md. An experimental variant keeps the
// measurement that found it no gain of 5%.

type tiers = map[string]Tiered

const (
	zen5     = "AMD EPYC Zen 5 (family 26 model 2)"
	measured = "docs/performance/amd-epyc-zen5.md#the-kernel-variants-re-measured"
)

// gain is a figure of the re-measure: shape timed, ratio with/without.
func gain(shape, ratio string) *Gain {
	return &Gain{Shape: shape, CPU: zen5, Date: "2026-12-07", Ratio: ratio, Source: measured}
}

// gainI8 is a figure of the int8 cache's kernels against the one-row
// kernels they replace, measured as the re-measure's were.
func gainI8(shape, ratio string) *Gain {
	return &Gain{Shape: shape, CPU: zen5, Date: "2026-12-07", Ratio: ratio, Source: "docs/performance/amd-epyc-zen5.md#an-int8-kv-cache-2026-12-07"}
}

func prod(g *Gain) Tiered { return Tiered{Tier: Production, Gain: g} }

// exp is an experimental tier and the figure that found no gain.
func exp(g *Gain) Tiered { return Tiered{Tier: Experimental, Gain: g} }

// The multi-row kernels of 1 to 4 rows against the one-row kernels, and
// their width sections against their general loops.
var (
	multiZ2 = gain("AttendMany, 2 beams, T 8192, against its fallback (the one-row kernels); T 65536 0.95, decode gqa2-4k over an f32 cache 0.90, over f32 tensors 0.99", "0.74")
	multiZ3 = gain("decode gqa3-4k (3 heads a group), f32", "0.73")
	multiZ4 = gain("decode gqa-4k (4 heads a group), f32", "0.71")
	// scoreRowsMultiNear against scoreRowsMulti, measured on 2026-12-07 as
	// the build without the multi-row scores' prefetches (see the
	// roofline section of the Zen 5 record).
	nearZ = &Gain{Shape: "decode gqa-512 (4 MiB of K and V, from the L3), f32; gqa-1k 0.93-0.96", CPU: zen5, Date: "2026-12-07",
		Ratio: "0.90-0.92", Source: "docs/performance/amd-epyc-zen5.md#the-decode-step-against-its-roofline-2026-12-07"}
	// One row: no step reaches an avx512 multi-row body of one row but
	// the float32 blend's, and that only where the step's first row went
	// through the one-row blend before (a group of two on a cold tile at
	// a width without a split section), which its fallback runs.
	oneRowZ = exp(gain("every decode, prefill and AttendMany shape, and the short test suite: the float32 blend of one row reached only at widths without a split section, on cold tiles; no other one-row body reached",
		"1.00 (the fallback is the one-row kernel the engine calls there)"))
	multi16Z2 = gain("decode gqa2-4k over a 16-bit cache", "f16 0.62, bf16 0.66")
	multi16Z3 = gain("decode gqa3-4k over a 16-bit cache", "f16 0.61, bf16 0.56")
	multi16Z4 = gain("decode gqa-4k over a 16-bit cache", "f16 0.54, bf16 0.56")
	quantX    = &Gain{Shape: "KVCache.Append of one token over an int8 cache (8 KV heads, d 128, keys rotated), avx2, against hadamardRows and narrowI8 row by row; 16 tokens 0.45", CPU: zen5, Date: "2026-12-07", Ratio: "0.63", Source: "docs/performance/amd-epyc-zen5.md#the-int8-append-on-avx2"}
	quantZ    = gainI8("KVCache.Append of one token over an int8 cache (8 KV heads, d 128, keys rotated), against hadamardRows and narrowI8 row by row; 16 tokens 0.46", "0.64")
	multiI8Z2 = gainI8("decode gqa2-4k over an int8 cache", "0.77")
	multiI8Z3 = gainI8("decode gqa3-4k over an int8 cache", "0.72")
	multiI8X1 = gainI8("decode gqa2-4k over an int8 cache, avx2: the row count is not timed apart", "0.74")
	multiI8X2 = gainI8("decode gqa2-4k over an int8 cache, avx2", "0.74")
	multiI8X3 = gainI8("decode gqa3-4k over an int8 cache, avx2", "0.73")
	multiI8X4 = gainI8("decode gqa-4k over an int8 cache, avx2", "0.69")
	multiI8Z4 = gainI8("decode gqa-4k over an int8 cache; gqa-32k 0.71, mqa-32k (four rows and four) 0.73", "0.73")

	multiX2   = gain("decode gqa2-4k (2 heads a group), avx2, f32", "0.81")
	multiX3   = gain("decode gqa3-4k (3 heads a group), avx2, f32", "0.61")
	multiX4   = gain("decode gqa-4k (4 heads a group), avx2, f32", "0.56")
	multiX1   = gain("decode gqa2-4k, avx2: its second row after the first went through the one-row kernel; the row count is not timed apart", "0.81")
	multi16X2 = gain("decode gqa2-4k over a 16-bit cache, avx2", "f16 0.55, bf16 0.55")
	multi16X3 = gain("decode gqa3-4k over a 16-bit cache, avx2", "f16 0.62, bf16 0.68")
	multi16X4 = gain("decode gqa-4k over a 16-bit cache, avx2", "f16 0.58, bf16 0.59")
	multi16X1 = gain("decode gqa2-4k over a 16-bit cache, avx2: the row count is not timed apart", "f16 0.55, bf16 0.55")
	pairedX   = gain("decode gqa-4k over a bf16 cache, avx2, query rows in pair order against in order", "0.92")

	// The asking copies against the plain copy of the same row count.
	askZ = exp(gain("decode gqa-4k, gqa2-4k, gqa3-4k, gqa-4k-d64, mha-4k, verify-4k: next against nil", "0.96–1.02"))
	askX = gain("decode gqa-4k, gqa2-4k, gqa3-4k, avx2, next against nil; f16 cache 0.69 and 0.48, bf16 0.64 and 0.64", "f32 0.70, 0.77, 0.69")

	// Width sections: rows of 64 and 128 columns.
	rowMajor128 = gain("decode mha-4k (the one-row score in address order at d = 128); Batched decode 0.83, Attend T 1024 0.95", "0.81")
	multi128    = gain("decode gqa-4k, gqa2-4k, gqa3-4k (d = 128 scores in address order, blends a key stream at a time); AttendMany 2 and 4 beams 0.74", "0.89, 0.75, 0.82")
	multi64     = gain("decode gqa-4k-d64 (d = 64 scores in address order, blends a key stream at a time)", "0.82")
)

// The kernels of 5 to 8 rows (avx512) against four rows and the rest.
var (
	wide5 = gain("decode gqa5-4k (5 heads a group), f32, against the generic twin's four rows and the rest", "0.85")
	wide6 = gain("decode gqa6-8k (6 heads a group), f32, against the generic twin's four rows and the rest", "0.85")
	wide7 = gain("decode gqa7-8k (7 heads a group), f32; f32 cache 0.81", "0.68")
	wide8 = gain("decode mqa-32k (8 heads a group), f32; f32 cache 0.85", "0.81")
	// The eight-row blend asking for the next tile's V.
	wideAsk = gain("decode gqa7-8k and mqa-32k, f32, next against nil; f32 cache 0.76 and 0.86", "0.73, 0.76")
	// The score's copy that asks for the tile's V.
	wideAlso = exp(gain("decode gqa7-8k and mqa-32k, f32 tensors and f32, f16, bf16 caches: also against nil", "0.95–1.05"))
	// Over 16-bit caches the wide kernels gain nothing on four rows and
	// the rest.
	// Over 16-bit caches five to seven rows gain nothing on four rows and
	// the rest (two runs of 5 and 7 rounds, pooled: gqa7-8k f16 0.96, bf16
	// 0.97); eight rows do, by the step before and after they were made
	// experimental (mqa-32k, 6 rounds; the pooled toggle runs gave 0.95 and
	// 0.99).
	wide16   = exp(gain("decode gqa7-8k over f16 and bf16 caches, the wide kernels of seven rows against four rows and three (12 rounds)", "0.96–0.97"))
	wide16R8 = gain("decode mqa-32k (8 heads a group) over 16-bit caches, the eight-row kernels against four rows and four", "f16 0.92, bf16 0.93")
	// The 16-bit eight-row blend asking for the next tile's V; the score's
	// copy that asks for V gains nothing (also_off: 0.98–1.02).
	wide16Ask  = gain("decode mqa-32k over 16-bit caches, the eight-row blend asking for the next tile's V, next against nil", "f16 0.84, bf16 0.84")
	wide16Also = exp(gain("decode mqa-32k and gqa7-8k over f16 and bf16 caches: also against nil", "0.96–1.02"))
)

// The block kernels' variants against the one-block kernels or the plain
// copy.
var (
	blockAskZ    = gain("verify-4k over 16-bit caches, the block kernels asking for the rows widened next", "f16 0.78, bf16 0.79")
	blockAskX    = gain("verify-4k over 16-bit caches, avx2, the block kernels asking for the rows widened next", "f16 0.89, bf16 0.89")
	pairedBlocks = gain("Batched prefill 8×512×512×64, paired block tasks; causal 0.92, chunked 0.91, prefill over caches 0.88–0.93", "0.89")
)

// Each kernel's variants, in the order of their row counts.
var (
	scoreRowsMultiVariants = byRows(1, 4, multi(multiZ, multiX), nil)
	// The four-row score that asks for no K ahead, chosen where a step's
	// K and V fit the L3.
	scoreRowsMultiNearVariants = byRows(4, 4, func(int) tiers { return tiers{"avx512": prod(nearZ)} }, nil)
	blendRowsMultiVariants     = byRows(1, 4, multi(multiZ, multiX),
		func(int) tiers { return tiers{"avx512": askZ, "avx2": prod(askX)} })
	scoreRowsMultiF16Variants    = byRows(1, 4, multi(multi16Z, multi16X), nil)
	scoreRowsMultiBF16Variants   = scoreRowsMultiF16Variants
	scoreRowsMultiPairedVariants = byRows(1, 4, func(int) tiers { return tiers{"avx2": prod(pairedX)} }, nil)
	// avx512's 16-bit blends have no asking copy: they stream V themselves.
	blendRowsMultiF16Variants = byRows(1, 4, multi(multi16Z, multi16X),
		func(int) tiers { return tiers{"avx2": prod(askX)} })
	blendRowsMultiBF16Variants = blendRowsMultiF16Variants
	// The int8 multi-row kernels (avx512) have no asking copy yet.
	scoreRowsMultiI8Variants = byRows(1, 4, func(R int) tiers { return tiers{"avx512": multiI8Z[R], "avx2": prod(multiI8X[R])} }, nil)
	blendRowsMultiI8Variants = scoreRowsMultiI8Variants

	scoreRowsMulti8Variants = byRows(5, 8, wide, func(int) tiers { return tiers{"avx512": wideAlso} })
	blendRowsMulti8Variants = byRows(5, 8, wide, func(int) tiers { return tiers{"avx512": prod(wideAsk)} })
	// Over 16-bit caches only eight rows earn their lines.
	scoreRowsMulti8F16Variants  = byRows(5, 8, wide16Of(prod(wide16R8)), wide16Of(wide16Also))
	scoreRowsMulti8BF16Variants = scoreRowsMulti8F16Variants
	blendRowsMulti8F16Variants  = byRows(5, 8, wide16Of(prod(wide16R8)), wide16Of(prod(wide16Ask)))
	blendRowsMulti8BF16Variants = blendRowsMulti8F16Variants

	// The width sections of avx512's scoreRows, scoreRowsMulti and
	// blendRowsMulti.
	scoreRowsWidths = map[string][]Width{"avx512": {{Cols: 128, Gain: rowMajor128}}}
	multiWidths     = map[string][]Width{"avx512": {{Cols: 64, Gain: multi64}, {Cols: 128, Gain: multi128}}}
)

// The multi-row kernels' tiers by row count: avx512's one-row bodies are
// experimental.
var (
	multiZ   = map[int]Tiered{1: oneRowZ, 2: prod(multiZ2), 3: prod(multiZ3), 4: prod(multiZ4)}
	multiX   = map[int]*Gain{1: multiX1, 2: multiX2, 3: multiX3, 4: multiX4}
	multi16Z = map[int]Tiered{1: oneRowZ, 2: prod(multi16Z2), 3: prod(multi16Z3), 4: prod(multi16Z4)}
	multi16X = map[int]*Gain{1: multi16X1, 2: multi16X2, 3: multi16X3, 4: multi16X4}
	multiI8Z = map[int]Tiered{1: oneRowZ, 2: prod(multiI8Z2), 3: prod(multiI8Z3), 4: prod(multiI8Z4)}
	multiI8X = map[int]*Gain{1: multiI8X1, 2: multiI8X2, 3: multiI8X3, 4: multiI8X4}
)

// byRows returns the variants of a kernel of rows lo to hi: for each row
// count its plain function, tiered by implementation as plain says, and,
// where ask is not nil, its asking copy as ask says.
func byRows(lo, hi int, plain, ask func(R int) tiers) []Variant {
	var v []Variant
	for R := lo; R <= hi; R++ {
		v = append(v, Variant{Rows: R, Impls: plain(R)})
		if ask != nil {
			v = append(v, Variant{Rows: R, Asks: true, Impls: ask(R)})
		}
	}
	return v
}

// multi tiers a row count of a rows 1–4 kernel: avx512 by z, avx2 by the
// gain in x.
func multi(z map[int]Tiered, x map[int]*Gain) func(int) tiers {
	return func(R int) tiers { return tiers{"avx512": z[R], "avx2": prod(x[R])} }
}

// wide tiers a row count of the float32 wide kernels (avx512).
func wide(R int) tiers {
	return tiers{"avx512": prod(map[int]*Gain{5: wide5, 6: wide6, 7: wide7, 8: wide8}[R])}
}

// wide16Of tiers a row count of a 16-bit wide kernel (avx512): eight rows
// as eight says, five to seven experimental.
func wide16Of(eight Tiered) func(int) tiers {
	return func(R int) tiers {
		if R == 8 {
			return tiers{"avx512": eight}
		}
		return tiers{"avx512": wide16}
	}
}
