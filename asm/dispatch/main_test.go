package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glancelab/attention/asm/internal/gentest"
	"github.com/glancelab/attention/internal/kernels"
)

// The committed fronts, the root's and internal/kernel's, are what the
// generator produces from the table now.
func TestCommittedFilesAreCurrent(t *testing.T) {
	files := map[string][]byte{}
	for _, p := range []struct{ pkg, dir, prefix string }{
		{"attention", "../../", "dispatch_"},
		{"kernel", "../../internal/kernel/", "zdispatch_"},
	} {
		dir := t.TempDir()
		if out, err := exec.Command("go", "run", ".", "-dir", dir, "-pkg", p.pkg).CombinedOutput(); err != nil {
			t.Fatalf("generator failed: %v\n%s", err, out)
		}
		names := []string{p.prefix + "amd64.go", p.prefix + "arm64.go", p.prefix + "other.go"}
		if p.pkg == "kernel" {
			names = append(names, "zfallback_amd64.go")
		}
		for _, name := range names {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			files[p.dir+name] = b
		}
	}
	gentest.CheckCommitted(t, files)
}

func TestTableIsValid(t *testing.T) {
	if err := check(kernels.All); err != nil {
		t.Fatal(err)
	}
}

// check refuses the table entries the generated code would get wrong.
func TestCheckRefusesBadEntries(t *testing.T) {
	good := kernels.Kernel{Name: "k", Params: "x []float32", Impls: map[string]kernels.Use{"avx2": kernels.Asm}}
	for name, edit := range map[string]func(k *kernels.Kernel){
		"bad params":    func(k *kernels.Kernel) { k.Params = "x []float32," + "(" },
		"reserved name": func(k *kernels.Kernel) { k.Params = "lo []float32" },
		"unknown impl":  func(k *kernels.Kernel) { k.Impls = map[string]kernels.Use{"sse9": kernels.Asm} },
		"pair no doc":   func(k *kernels.Kernel) { k.Impls = map[string]kernels.Use{"avx2": kernels.Pair} },
		"noop result":   func(k *kernels.Kernel) { k.Results = "float32"; k.Generic = kernels.NoOp },
		"split, no sum": func(k *kernels.Kernel) {
			k.Results = "float32"
			k.Split = &kernels.Split{N: "len(x)", Per: "maxCall", Args: "x[lo:hi]"}
		},
		"named result":   func(k *kernels.Kernel) { k.Results = "(s float32)" },
		"generic is asm": func(k *kernels.Kernel) { k.Generic = kernels.Asm },
		"reuse nothing": func(k *kernels.Kernel) {
			k.Impls = map[string]kernels.Use{"avx512": kernels.Reuse}
		},
		"reuse self": func(k *kernels.Kernel) { k.Impls = map[string]kernels.Use{"avx2": kernels.Reuse} },
		"reuse other arch": func(k *kernels.Kernel) {
			k.Impls = map[string]kernels.Use{"neon": kernels.Reuse, "avx2": kernels.Asm}
		},
	} {
		k := good
		edit(&k)
		if err := check([]kernels.Kernel{k}); err == nil {
			t.Errorf("%s: check accepted %+v", name, k)
		}
	}
	if err := check([]kernels.Kernel{good, good}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("check accepted a kernel listed twice: %v", err)
	}
	if err := check([]kernels.Kernel{good}); err != nil {
		t.Errorf("check refused a good entry: %v", err)
	}
	reuse := good
	reuse.Impls = map[string]kernels.Use{"avx512": kernels.Reuse, "avx2": kernels.Asm}
	if err := check([]kernels.Kernel{reuse}); err != nil {
		t.Errorf("check refused a good reuse: %v", err)
	}
}

// check refuses variants without the gain that earns a production tier,
// and functions per row count that do not cover the Doc's range.
func TestCheckRefusesBadVariants(t *testing.T) {
	gain := &kernels.Gain{Shape: "decode", CPU: "Zen 4", Date: "2026-12-07", Ratio: "0.9", Source: "abc1234"}
	prod := map[string]kernels.Tiered{"avx2": {Tier: kernels.Production, Gain: gain}}
	good := func() kernels.Kernel {
		k := kernels.Kernel{
			Name: "k", Params: "x []float32, rows int, next []float32", Doc: "sets x; 1 <= rows <= 2.",
			Impls: map[string]kernels.Use{"avx2": kernels.Asm},
			Rows:  &kernels.ByRows{Param: "rows", Ask: "next"},
		}
		for R := 1; R <= 2; R++ {
			k.Rows.Variants = append(k.Rows.Variants,
				kernels.Variant{Rows: R, Impls: prod}, kernels.Variant{Rows: R, Asks: true, Impls: prod})
		}
		return k
	}
	if err := check([]kernels.Kernel{good()}); err != nil {
		t.Fatalf("check refused good variants: %v", err)
	}
	exp := good()
	exp.Rows.Variants[1].Impls = map[string]kernels.Tiered{"avx2": {Tier: kernels.Experimental}}
	if err := check([]kernels.Kernel{exp}); err != nil {
		t.Errorf("check refused an experimental variant without a gain: %v", err)
	}
	for name, edit := range map[string]func(k *kernels.Kernel){
		"no gain": func(k *kernels.Kernel) {
			k.Rows.Variants[0].Impls = map[string]kernels.Tiered{"avx2": {Tier: kernels.Production}}
		},
		"gain without ratio": func(k *kernels.Kernel) {
			g := *gain
			g.Ratio = ""
			k.Rows.Variants[0].Impls = map[string]kernels.Tiered{"avx2": {Gain: &g}}
		},
		"under 5%": func(k *kernels.Kernel) {
			g := *gain
			g.Ratio = "0.97"
			k.Rows.Variants[0].Impls = map[string]kernels.Tiered{"avx2": {Gain: &g}}
		},
		"width without gain": func(k *kernels.Kernel) {
			k.Widths = map[string][]kernels.Width{"avx2": {{Cols: 64}}}
		},
		"width not of vectors": func(k *kernels.Kernel) {
			k.Widths = map[string][]kernels.Width{"avx2": {{Cols: 72, Gain: gain}}}
		},
		"unsettled": func(k *kernels.Kernel) {
			g := *gain
			g.Note = "re-measure: later"
			k.Rows.Variants[0].Impls = map[string]kernels.Tiered{"avx2": {Gain: &g}}
		},
		"kernel tier without gain": func(k *kernels.Kernel) {
			k.Tiers = map[string]kernels.Tiered{"avx2": {}}
		},
		"row count missing":  func(k *kernels.Kernel) { k.Rows.Variants = k.Rows.Variants[:2] },
		"beyond the range":   func(k *kernels.Kernel) { k.Doc = "sets x; 1 <= rows <= 3." },
		"no range":           func(k *kernels.Kernel) { k.Doc = "sets x." },
		"one asking copy":    func(k *kernels.Kernel) { k.Rows.Variants = k.Rows.Variants[:3] },
		"listed twice":       func(k *kernels.Kernel) { k.Rows.Variants = append(k.Rows.Variants, k.Rows.Variants[0]) },
		"rows shares a type": func(k *kernels.Kernel) { k.Params = "x []float32, stride, rows int, next []float32" },
		"ask not a slice":    func(k *kernels.Kernel) { k.Rows.Ask = "rows" },
		"no ask parameter":   func(k *kernels.Kernel) { k.Rows.Ask = "" },
		"generic impl": func(k *kernels.Kernel) {
			k.Impls = map[string]kernels.Use{"avx2": kernels.Asm, "avx512": kernels.Generic}
			k.Rows.Variants[0].Impls = map[string]kernels.Tiered{"avx2": prod["avx2"], "avx512": prod["avx2"]}
		},
		"experimental on neon": func(k *kernels.Kernel) {
			k.Impls = map[string]kernels.Use{"avx2": kernels.Asm, "neon": kernels.Asm}
			for i := range k.Rows.Variants {
				k.Rows.Variants[i].Impls = map[string]kernels.Tiered{"avx2": prod["avx2"], "neon": {Tier: kernels.Experimental}}
			}
		},
	} {
		k := good()
		edit(&k)
		if err := check([]kernels.Kernel{k}); err == nil {
			t.Errorf("%s: check accepted %+v", name, k)
		}
	}
}
