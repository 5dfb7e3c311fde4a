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
		for _, arch := range []string{"amd64", "arm64", "other"} {
			name := p.prefix + arch + ".go"
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
