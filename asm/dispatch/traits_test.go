package main

import (
	"slices"
	"testing"

	"github.com/glancelab/attention/internal/kernels"
)

// Every implementation's traits hold of the kernels the table gives it.
func TestTraitsAreValid(t *testing.T) {
	if err := checkTraits(kernels.Impls, kernels.All); err != nil {
		t.Fatal(err)
	}
}

// checkTraits refuses a trait whose kernels an implementation runs the
// generic twin of, or lacks, and groups the multi-row kernels do not take.
func TestCheckTraitsRefusesBadTraits(t *testing.T) {
	for name, c := range map[string]struct {
		impl string
		edit func(tr *kernels.Traits)
	}{
		"wide avx2":          {"avx2", func(tr *kernels.Traits) { tr.MultiWide = true }},
		"paired blocks avx2": {"avx2", func(tr *kernels.Traits) { tr.PairedBlocks = true }},
		"paired bf16 avx512": {"avx512", func(tr *kernels.Traits) { tr.PairedBF16 = true }},
		"asks ahead neon":    {"neon", func(tr *kernels.Traits) { tr.MultiAsksAhead = true }},
		"score streams neon": {"neon", func(tr *kernels.Traits) { tr.MultiScoreStreams = true }},
		"row major neon": {"neon", func(tr *kernels.Traits) {
			tr.MultiScoreRowMajor = []kernels.RowMajor{{Cols: 64, MaxRows: 2}}
		}},
		"splits neon": {"neon", func(tr *kernels.Traits) {
			tr.MultiBlendSplits = kernels.BlendSplits{MinRows: 2, MaxRows: 4, Widths: []int{64}}
		}},
		"negative cols":      {"avx2", func(tr *kernels.Traits) { tr.Blend16Cols = -1 }},
		"splits no width":    {"avx512", func(tr *kernels.Traits) { tr.MultiBlendSplits.Widths = nil }},
		"splits rows 5":      {"avx512", func(tr *kernels.Traits) { tr.MultiBlendSplits.MaxRows = 5 }},
		"splits rows 0":      {"avx512", func(tr *kernels.Traits) { tr.MultiBlendSplits.MinRows = 0 }},
		"splits upside down": {"avx512", func(tr *kernels.Traits) { tr.MultiBlendSplits.MinRows = 4; tr.MultiBlendSplits.MaxRows = 3 }},
		"splits width twice": {"avx512", func(tr *kernels.Traits) { tr.MultiBlendSplits.Widths = []int{64, 64} }},
		"row major width 0":  {"avx512", func(tr *kernels.Traits) { tr.MultiScoreRowMajor[0].Cols = 0 }},
		"row major twice":    {"avx512", func(tr *kernels.Traits) { tr.MultiScoreRowMajor[1].Cols = tr.MultiScoreRowMajor[0].Cols }},
		"row major 0 rows":   {"avx512", func(tr *kernels.Traits) { tr.MultiScoreRowMajor[0].MaxRows = 0 }},
		"row major 5 rows":   {"avx512", func(tr *kernels.Traits) { tr.MultiScoreRowMajor[0].MaxRows = 5 }},
	} {
		impls := slices.Clone(kernels.Impls)
		for i := range impls {
			if tr := &impls[i].Traits; impls[i].Name == c.impl {
				tr.MultiBlendSplits.Widths = slices.Clone(tr.MultiBlendSplits.Widths)
				tr.MultiScoreRowMajor = slices.Clone(tr.MultiScoreRowMajor)
				c.edit(tr)
			}
		}
		if err := checkTraits(impls, kernels.All); err == nil {
			t.Errorf("%s: checkTraits accepted it", name)
		}
	}
	// avx512's WholeTileBlend names blockBlend, which this table lacks.
	var all []kernels.Kernel
	for _, k := range kernels.All {
		if k.Name != "blockBlend" {
			all = append(all, k)
		}
	}
	if err := checkTraits(kernels.Impls, all); err == nil {
		t.Error("checkTraits accepted a trait whose kernel the table lacks")
	}
}
