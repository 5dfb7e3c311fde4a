package kernels

// The variants' tiers and the gains that earn them, quoted from
// docs/kernel-variants.md §2 (and the commits it cites). A gain whose
// Note begins "re-measure:" is one the doc classes K or X: kept in
// production until it is measured again at engine level, then made
// production with that figure or experimental.

type tiers = map[string]Tiered

func prod(g *Gain) Tiered { return Tiered{Tier: Production, Gain: g} }

// remeasure is g with a note saying why it is to be measured again.
func remeasure(why string, g *Gain) *Gain {
	c := *g
	c.Note = "re-measure: " + why
	return &c
}

const variantsDoc = "docs/kernel-variants.md §2"

// The multi-row kernels of 1 to 4 rows (§2a, §2b).
var (
	scoreMulti2 = &Gain{Shape: "decode step gqa-4k, multi-row score and blend against the one-row kernels",
		CPU: "Zen 5 (deduced)", Date: "2026-12-01", Ratio: "0.84 (1.40 → 1.18 ms)", Source: "9066505; " + variantsDoc + "a"}
	scoreMultiZ = &Gain{Shape: "decode step gqa-4k, every row of the group through the prefetching kernel (MultiScoreStreams)",
		CPU: "Zen 5", Date: "2026-12-01", Ratio: "0.79 (0.85 → 0.67 ms)", Source: "05fc56c; " + variantsDoc + "a"}
	scoreRowMajor2 = &Gain{Shape: "decode step gqa2-4k (d = 128 row-major blocks)",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.72–0.77; f32 cache 0.71", Source: "bdaa768, 684cb5e; " + variantsDoc + "b"}
	scoreRowMajor3 = &Gain{Shape: "decode step gqa3-4k (d = 128 row-major blocks)",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.79–0.88", Source: "bdaa768, 684cb5e; " + variantsDoc + "b"}
	blendMultiZ1 = &Gain{Shape: "decode step gqa-4k, multi-row score and blend against the one-row kernels (the avx2 kernels: the avx512 one-row body has no figure of its own)",
		CPU: "Zen 5 (deduced)", Date: "2026-12-01", Ratio: "0.84 (1.40 → 1.18 ms)", Source: "9066505, 135937a; " + variantsDoc + "a"}
	blendSplit2 = &Gain{Shape: "decode step gqa2-4k (d = 128 blend a key stream at a time)",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.86 / 0.84", Source: "86365bd, ca89616; " + variantsDoc + "b"}
	blendSplit3 = &Gain{Shape: "decode step gqa3-4k (d = 128 blend a key stream at a time)",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.87 / 0.88", Source: "86365bd, ca89616; " + variantsDoc + "b"}
	blendSplit4 = &Gain{Shape: "decode step gqa-4k, 4 heads (d = 128 blend a key stream at a time)",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.91 / 0.93", Source: "86365bd, ca89616; " + variantsDoc + "b"}
	blendAskZ = remeasure("on avx512 next is not empty only for dv ∉ {64, 128}, and the copy's d = 64/128 sections are unreached (§2b, §2c, §4 #3); its figures were taken at d = 128 before the split blend:",
		&Gain{Shape: "decode step gqa-4k, next vs nil", CPU: "Xeon", Date: "2026-12-02",
			Ratio: "0.96 (1.37 → 1.32 ms); 49237e1: 0.98, 2 workers 0.95, gqa-512 0.92", Source: "f327b7d, 49237e1; " + variantsDoc + "b"})
	blendAsk2 = &Gain{Shape: "decode step mqa-32k, next vs nil (read fraction 0.31 → 0.34); kernel alone 58.5 → 50.8 µs (0.87)",
		CPU: "Zen 1", Date: "2026-12-03", Ratio: "≈ 0.91", Source: "108120b; " + variantsDoc + "b"}

	multi16Z = &Gain{Shape: "decode step gqa-4k over an f16 cache, the 16-bit multi-row kernels against the one-row ones row after row (score and blend together; no bf16 figure of its own)",
		CPU: "Zen 5 (deduced)", Date: "2026-12-01", Ratio: "≈ 0.45 (1.06 → 0.45–0.51 ms)", Source: "1fc53c6"}
	scoreF16Multi2 = &Gain{Shape: "decode step gqa-4k over an f16 cache, every row of the group through the prefetching kernel",
		CPU: "Zen 5", Date: "2026-12-02", Ratio: "0.70 (1.95 → 1.36 ms)", Source: "b0d0c24; " + variantsDoc + "a"}
	scoreBF16Multi2 = &Gain{Shape: "decode step gqa-4k over a bf16 cache, every row of the group through the prefetching kernel",
		CPU: "Zen 5", Date: "2026-12-02", Ratio: "0.72 (2.02 → 1.45 ms)", Source: "b0d0c24; " + variantsDoc + "a"}
	blend16Z = &Gain{Shape: "decode step gqa-4k over an f16 cache, row 0's blend through the multi-row kernel too (no bf16 figure of its own)",
		CPU: "Zen 5 (deduced)", Date: "2026-12-01", Ratio: "0.84 (0.49 → 0.41 ms); Tk 32768 0.92", Source: "1073a3c; " + variantsDoc + "a"}
	blendF16Multi2 = &Gain{Shape: "decode step gqa-4k over an f16 cache, the 16-bit multi-row kernels' wider blocks",
		CPU: "Zen 3", Date: "2026-12-02", Ratio: "0.91 (2.23 → 2.02 ms)", Source: "ad79075; " + variantsDoc + "a"}
	blendBF16Multi2 = &Gain{Shape: "decode step gqa-4k over a bf16 cache, blocks in pair order; gqa-32k 0.92–0.97",
		CPU: "Zen 3", Date: "2026-12-04", Ratio: "0.82–0.93", Source: "68f62af, 76f331e; " + variantsDoc + "b"}
	blendF16Ask2 = &Gain{Shape: "decode step gqa-4k over an f16 cache, the asking copy and a warm tile through it whole",
		CPU: "Zen 1", Date: "2026-12-03", Ratio: "0.90 (3.89 → 3.50 ms)", Source: "4618c6f; " + variantsDoc + "b"}
	blendBF16Ask2 = &Gain{Shape: "decode step gqa-4k over a bf16 cache, the asking copy and a warm tile through it whole",
		CPU: "Zen 1", Date: "2026-12-03", Ratio: "0.85 (3.34 → 2.83 ms)", Source: "4618c6f; " + variantsDoc + "b"}
	pairedBF16 = &Gain{Shape: "decode step gqa-4k over a bf16 cache, query rows in pair order; Tk 32768 0.90",
		CPU: "Zen 3", Date: "2026-12-02", Ratio: "0.86 (3.05 → 2.63 ms)", Source: "50f585f; " + variantsDoc + "a"}
)

// unreachedZ is g for an avx512 one-row body of a multi-row kernel, which
// the engine never calls (§2c, §4 #4).
func unreachedZ(g *Gain) *Gain {
	return remeasure("the engine passes rows = 1 to this avx512 kernel nowhere (§2c, §4 #4); the kernel's figure:", g)
}

// The kernels of 5 to 8 rows, avx512 (§2a, §2b).
var (
	wide8 = &Gain{Shape: "decode step mqa-32k, 8 heads a group, the eight-row score and blend",
		CPU: "Xeon", Date: "2026-12-02", Ratio: "0.89 (1.94 → 1.73 ms)", Source: "8867f66; " + variantsDoc + "a"}
	wide5 = &Gain{Shape: "decode step 40-on-8, 5 heads a group, the wide score and blend",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.62–0.73", Source: "6ba1b05; " + variantsDoc + "a"}
	wide6 = &Gain{Shape: "decode step 48-on-8, 6 heads a group, the wide score and blend",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.85", Source: "6ba1b05; " + variantsDoc + "a"}
	wide7 = &Gain{Shape: "decode step gqa7-8k, 7 heads a group, the wide score and blend",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.77–0.88", Source: "6ba1b05; " + variantsDoc + "a"}
	wideAsk = &Gain{Shape: "decode step mqa-32k, the eight-row blend asking for the next tile's V",
		CPU: "Xeon", Date: "2026-12-02", Ratio: "0.87 (1.70 → 1.48 ms)", Source: "f327b7d; " + variantsDoc + "b"}
	wideAlso = remeasure("no figure of its own: measured together with the blend's asking (§2b, §4 #2):", wideAsk)
	wideF16  = &Gain{Shape: "decode step mqa-32k over an f16 cache, 8 heads a group (with next and also); 2 workers 0.87",
		CPU: "Xeon", Date: "2026-12-02", Ratio: "0.86 (1.26 → 1.08 ms)", Source: "ed965d4; " + variantsDoc + "a"}
	wideBF16 = &Gain{Shape: "decode step mqa-32k over a bf16 cache, 8 heads a group (with next and also)",
		CPU: "Xeon", Date: "2026-12-02", Ratio: "0.88 (1.30 → 1.14 ms)", Source: "ed965d4; " + variantsDoc + "a"}
	wide16Few = remeasure("over 16-bit caches seven heads did not move, and five and six were never measured (§2a, §4 #1):",
		&Gain{Shape: "decode step gqa7-8k over a 16-bit cache, 7 heads a group", CPU: "Zen 4", Date: "2026-12-06",
			Ratio: "1.01–1.09", Source: "6ba1b05; " + variantsDoc + "a"})
	wide16Also = remeasure("no figure of its own: measured together with the blend's asking (§2b, §4 #2):", wideF16)
)

// The block kernels' variants (§2a).
var (
	blockAskZ = &Gain{Shape: "verify-4k over f16, the block kernels asking for the rows widened next; bf16 0.79, 2 workers 0.81/0.88 (f32 control 1.00)",
		CPU: "Zen 4", Date: "2026-12-06", Ratio: "0.81 (4.40 → 3.59 ms)", Source: "6b9fb3d; " + variantsDoc + "a"}
	blockAsk2 = remeasure("the unchanged f32 step moved 1.00/0.88, as much as the gain (§2a, §4 #10):",
		&Gain{Shape: "verify-4k, the block kernels asking for the rows widened next: f16 0.91/0.82, bf16 0.86/0.80",
			CPU: "Zen 4 running avx2", Date: "2026-12-06", Ratio: "0.80–0.91", Source: "bc3e6e7; " + variantsDoc + "a"})
	pairedBlocks = remeasure("the kernel alone ran 1.07–1.25× (blockBlend2 1.15–1.23×) the GFLOP/s, and the engine has no prefill figure before and after (§2a, §4 #7):",
		&Gain{Shape: "chunked prefill, paired block tasks; 2 workers 0.96", CPU: "Zen 5", Date: "2026-12-02",
			Ratio: "0.96 (3.57 → 3.43 ms)", Source: "5e5e189, 722dfd2, 3e76155; " + variantsDoc + "a"})
	pairedMax = remeasure("below 5% (§2a, §4 #6):",
		&Gain{Shape: "prefill 8×512×512×64, 8 rounds", CPU: "Zen 5", Date: "2026-12-02",
			Ratio: "0.974 (3373 → 3286 µs)", Source: "7892376; " + variantsDoc + "a"})
)

// Each kernel's variants, in the order of their row counts.
var (
	scoreRowsMultiVariants = []Variant{
		{Rows: 1, Impls: tiers{"avx512": prod(unreachedZ(scoreMultiZ)), "avx2": prod(scoreMulti2)}},
		{Rows: 2, Impls: tiers{"avx512": prod(scoreRowMajor2), "avx2": prod(scoreMulti2)}},
		{Rows: 3, Impls: tiers{"avx512": prod(scoreRowMajor3), "avx2": prod(scoreMulti2)}},
		{Rows: 4, Impls: tiers{"avx512": prod(scoreMultiZ), "avx2": prod(scoreMulti2)}},
	}
	blendRowsMultiVariants = []Variant{
		{Rows: 1, Impls: tiers{"avx512": prod(blendMultiZ1), "avx2": prod(scoreMulti2)}},
		{Rows: 1, Asks: true, Impls: tiers{"avx512": prod(blendAskZ), "avx2": prod(blendAsk2)}},
		{Rows: 2, Impls: tiers{"avx512": prod(blendSplit2), "avx2": prod(scoreMulti2)}},
		{Rows: 2, Asks: true, Impls: tiers{"avx512": prod(blendAskZ), "avx2": prod(blendAsk2)}},
		{Rows: 3, Impls: tiers{"avx512": prod(blendSplit3), "avx2": prod(scoreMulti2)}},
		{Rows: 3, Asks: true, Impls: tiers{"avx512": prod(blendAskZ), "avx2": prod(blendAsk2)}},
		{Rows: 4, Impls: tiers{"avx512": prod(blendSplit4), "avx2": prod(scoreMulti2)}},
		{Rows: 4, Asks: true, Impls: tiers{"avx512": prod(blendAskZ), "avx2": prod(blendAsk2)}},
	}
	scoreRowsMultiF16Variants    = scoreMulti16Variants(scoreF16Multi2)
	scoreRowsMultiBF16Variants   = scoreMulti16Variants(scoreBF16Multi2)
	scoreRowsMultiPairedVariants = []Variant{
		{Rows: 1, Impls: tiers{"avx2": prod(pairedBF16)}},
		{Rows: 2, Impls: tiers{"avx2": prod(pairedBF16)}},
		{Rows: 3, Impls: tiers{"avx2": prod(pairedBF16)}},
		{Rows: 4, Impls: tiers{"avx2": prod(pairedBF16)}},
	}
	blendRowsMultiF16Variants  = blendMulti16Variants(blendF16Multi2, blendF16Ask2)
	blendRowsMultiBF16Variants = blendMulti16Variants(blendBF16Multi2, blendBF16Ask2)

	scoreRowsMulti8Variants = []Variant{
		{Rows: 5, Impls: tiers{"avx512": prod(wide5)}},
		{Rows: 5, Asks: true, Impls: tiers{"avx512": prod(wideAlso)}},
		{Rows: 6, Impls: tiers{"avx512": prod(wide6)}},
		{Rows: 6, Asks: true, Impls: tiers{"avx512": prod(wideAlso)}},
		{Rows: 7, Impls: tiers{"avx512": prod(wide7)}},
		{Rows: 7, Asks: true, Impls: tiers{"avx512": prod(wideAlso)}},
		{Rows: 8, Impls: tiers{"avx512": prod(wide8)}},
		{Rows: 8, Asks: true, Impls: tiers{"avx512": prod(wideAlso)}},
	}
	blendRowsMulti8Variants = []Variant{
		{Rows: 5, Impls: tiers{"avx512": prod(wide5)}},
		{Rows: 5, Asks: true, Impls: tiers{"avx512": prod(wideAsk)}},
		{Rows: 6, Impls: tiers{"avx512": prod(wide6)}},
		{Rows: 6, Asks: true, Impls: tiers{"avx512": prod(wideAsk)}},
		{Rows: 7, Impls: tiers{"avx512": prod(wide7)}},
		{Rows: 7, Asks: true, Impls: tiers{"avx512": prod(wideAsk)}},
		{Rows: 8, Impls: tiers{"avx512": prod(wide8)}},
		{Rows: 8, Asks: true, Impls: tiers{"avx512": prod(wideAsk)}},
	}
	scoreRowsMulti8F16Variants  = wide16Variants(wide16Also, wideF16)
	scoreRowsMulti8BF16Variants = wide16Variants(remeasure("no figure of its own: measured together with the blend's asking (§2b, §4 #2):", wideBF16), wideBF16)
	blendRowsMulti8F16Variants  = wide16Variants(nil, wideF16)
	blendRowsMulti8BF16Variants = wide16Variants(nil, wideBF16)
)

// scoreMulti16Variants are a 16-bit score's: avx2's earned by gain2.
func scoreMulti16Variants(gain2 *Gain) []Variant {
	return []Variant{
		{Rows: 1, Impls: tiers{"avx512": prod(unreachedZ(multi16Z)), "avx2": prod(gain2)}},
		{Rows: 2, Impls: tiers{"avx512": prod(multi16Z), "avx2": prod(gain2)}},
		{Rows: 3, Impls: tiers{"avx512": prod(multi16Z), "avx2": prod(gain2)}},
		{Rows: 4, Impls: tiers{"avx512": prod(multi16Z), "avx2": prod(gain2)}},
	}
}

// blendMulti16Variants are a 16-bit blend's: avx512 has no asking copy
// (it streams V itself), avx2's plain copies are earned by plain and its
// asking ones by ask.
func blendMulti16Variants(plain, ask *Gain) []Variant {
	var v []Variant
	for R := 1; R <= 4; R++ {
		z := blend16Z
		if R == 1 {
			z = unreachedZ(blend16Z)
		}
		v = append(v,
			Variant{Rows: R, Impls: tiers{"avx512": prod(z), "avx2": prod(plain)}},
			Variant{Rows: R, Asks: true, Impls: tiers{"avx2": prod(ask)}})
	}
	return v
}

// wide16Variants are a 16-bit wide kernel's (avx512): eight rows earned
// by eight, its asking copy by also (eight if nil), five to seven rows to
// be measured again.
func wide16Variants(also, eight *Gain) []Variant {
	if also == nil {
		also = eight
	}
	var v []Variant
	for R := 5; R <= 8; R++ {
		plain, ask := wide16Few, wide16Few
		if R == 8 {
			plain, ask = eight, also
		}
		v = append(v,
			Variant{Rows: R, Impls: tiers{"avx512": prod(plain)}},
			Variant{Rows: R, Asks: true, Impls: tiers{"avx512": prod(ask)}})
	}
	return v
}
