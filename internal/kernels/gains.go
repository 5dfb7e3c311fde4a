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

func prod(g *Gain) Tiered { return Tiered{Tier: Production, Gain: g} }

// exp is an experimental tier and the figure that found no gain.
func exp(g *Gain) Tiered { return Tiered{Tier: Experimental, Gain: g} }

// The multi-row kernels of 1 to 4 rows against the one-row kernels, and
// their width sections against their general loops.
var (
	multiZ2 = gain("AttendMany, 2 beams, T 8192, against its fallback (the one-row kernels); T 65536 0.95, decode gqa2-4k over an f32 cache 0.90, over f32 tensors 0.99", "0.74")
	multiZ3 = gain("decode gqa3-4k (3 heads a group), f32", "0.73")
	multiZ4 = gain("decode gqa-4k (4 heads a group), f32", "0.71")
	// One row: no step reaches an avx512 multi-row body of one row but
	// the float32 blend's, and that only where the step's first row went
	// through the one-row blend before (a group of two on a cold tile at
	// a width without a split section), which its fallback runs.
	oneRowZ = exp(gain("every decode, prefill and AttendMany shape, and the short test suite: the float32 blend of one row reached only at widths without a split section, on cold tiles; no other one-row body reached",
		"1.00 (the fallback is the one-row kernel the engine calls there)"))
	multi16Z2 = gain("decode gqa2-4k over a 16-bit cache", "f16 0.62, bf16 0.66")
	multi16Z3 = gain("decode gqa3-4k over a 16-bit cache", "f16 0.61, bf16 0.56")
	multi16Z4 = gain("decode gqa-4k over a 16-bit cache", "f16 0.54, bf16 0.56")

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
	scoreRowsMultiVariants = []Variant{
		{Rows: 1, Impls: tiers{"avx512": oneRowZ, "avx2": prod(multiX1)}},
		{Rows: 2, Impls: tiers{"avx512": prod(multiZ2), "avx2": prod(multiX2)}},
		{Rows: 3, Impls: tiers{"avx512": prod(multiZ3), "avx2": prod(multiX3)}},
		{Rows: 4, Impls: tiers{"avx512": prod(multiZ4), "avx2": prod(multiX4)}},
	}
	blendRowsMultiVariants = []Variant{
		{Rows: 1, Impls: tiers{"avx512": oneRowZ, "avx2": prod(multiX1)}},
		{Rows: 1, Asks: true, Impls: tiers{"avx512": askZ, "avx2": prod(askX)}},
		{Rows: 2, Impls: tiers{"avx512": prod(multiZ2), "avx2": prod(multiX2)}},
		{Rows: 2, Asks: true, Impls: tiers{"avx512": askZ, "avx2": prod(askX)}},
		{Rows: 3, Impls: tiers{"avx512": prod(multiZ3), "avx2": prod(multiX3)}},
		{Rows: 3, Asks: true, Impls: tiers{"avx512": askZ, "avx2": prod(askX)}},
		{Rows: 4, Impls: tiers{"avx512": prod(multiZ4), "avx2": prod(multiX4)}},
		{Rows: 4, Asks: true, Impls: tiers{"avx512": askZ, "avx2": prod(askX)}},
	}
	scoreRowsMultiF16Variants    = scoreMulti16Variants()
	scoreRowsMultiBF16Variants   = scoreMulti16Variants()
	scoreRowsMultiPairedVariants = []Variant{
		{Rows: 1, Impls: tiers{"avx2": prod(pairedX)}},
		{Rows: 2, Impls: tiers{"avx2": prod(pairedX)}},
		{Rows: 3, Impls: tiers{"avx2": prod(pairedX)}},
		{Rows: 4, Impls: tiers{"avx2": prod(pairedX)}},
	}
	blendRowsMultiF16Variants  = blendMulti16Variants()
	blendRowsMultiBF16Variants = blendMulti16Variants()

	scoreRowsMulti8Variants = wideVariants(prod, wideAlso)
	blendRowsMulti8Variants = wideVariants(prod, prod(wideAsk))
	// Over 16-bit caches only eight rows earn their lines.
	scoreRowsMulti8F16Variants  = wide16Variants(wide16Also)
	scoreRowsMulti8BF16Variants = scoreRowsMulti8F16Variants
	blendRowsMulti8F16Variants  = wide16Variants(prod(wide16Ask))
	blendRowsMulti8BF16Variants = blendRowsMulti8F16Variants

	// The width sections of avx512's scoreRows, scoreRowsMulti and
	// blendRowsMulti.
	scoreRowsWidths = map[string][]Width{"avx512": {{Cols: 128, Gain: rowMajor128}}}
	multiWidths     = map[string][]Width{"avx512": {{Cols: 64, Gain: multi64}, {Cols: 128, Gain: multi128}}}
)

// scoreMulti16Variants are a 16-bit multi-row score's.
func scoreMulti16Variants() []Variant {
	return []Variant{
		{Rows: 1, Impls: tiers{"avx512": oneRowZ, "avx2": prod(multi16X1)}},
		{Rows: 2, Impls: tiers{"avx512": prod(multi16Z2), "avx2": prod(multi16X2)}},
		{Rows: 3, Impls: tiers{"avx512": prod(multi16Z3), "avx2": prod(multi16X3)}},
		{Rows: 4, Impls: tiers{"avx512": prod(multi16Z4), "avx2": prod(multi16X4)}},
	}
}

// blendMulti16Variants are a 16-bit multi-row blend's: avx512 has no
// asking copy (it streams V itself).
func blendMulti16Variants() []Variant {
	z := []Tiered{oneRowZ, prod(multi16Z2), prod(multi16Z3), prod(multi16Z4)}
	x := []*Gain{multi16X1, multi16X2, multi16X3, multi16X4}
	var v []Variant
	for R := 1; R <= 4; R++ {
		v = append(v,
			Variant{Rows: R, Impls: tiers{"avx512": z[R-1], "avx2": prod(x[R-1])}},
			Variant{Rows: R, Asks: true, Impls: tiers{"avx2": prod(askX)}})
	}
	return v
}

// wide16Variants are a 16-bit wide kernel's (avx512): eight rows
// production, its asking copy tiered by ask, five to seven rows
// experimental.
func wide16Variants(ask Tiered) []Variant {
	var v []Variant
	for R := 5; R <= 8; R++ {
		plain, asks := wide16, wide16
		if R == 8 {
			plain, asks = prod(wide16R8), ask
		}
		v = append(v,
			Variant{Rows: R, Impls: tiers{"avx512": plain}},
			Variant{Rows: R, Asks: true, Impls: tiers{"avx512": asks}})
	}
	return v
}

// wideVariants are a wide kernel's (avx512): plain copies of each row
// count tiered by tier, asking copies by ask.
func wideVariants(tier func(*Gain) Tiered, ask Tiered) []Variant {
	var v []Variant
	for _, rg := range []struct {
		R int
		g *Gain
	}{{5, wide5}, {6, wide6}, {7, wide7}, {8, wide8}} {
		v = append(v,
			Variant{Rows: rg.R, Impls: tiers{"avx512": tier(rg.g)}},
			Variant{Rows: rg.R, Asks: true, Impls: tiers{"avx512": ask}})
	}
	return v
}
