package impl

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// fake swaps in an empty registry, no EnvVar request and two made-up
// features, one present.
func fake(t *testing.T) {
	saved, savedActive, savedInitial, savedRequested := registry, active, initial, requested
	yes, no := true, false
	Features["TESTYES"], Features["TESTNO"] = flag(&yes), flag(&no)
	t.Cleanup(func() {
		registry, active, initial, requested = saved, savedActive, savedInitial, savedRequested
		delete(Features, "TESTYES")
		delete(Features, "TESTNO")
	})
	registry, active, initial, requested = nil, nil, 0, ""
}

func TestRegistry(t *testing.T) {
	fake(t)
	var sel uint8
	Register(&sel, 1, "wide", "TESTYES", "TESTNO")
	Register(&sel, 2, "fast", "TESTYES", "SSE2")
	Register(&sel, 3, "slow", "TESTYES")

	if got := List(); !slices.Equal(got, []string{"fast", "slow", Generic}) {
		t.Fatalf("List() = %v, want [fast slow generic]", got)
	}
	all := All()
	if len(all) != 4 || all[0].Name != "wide" || !slices.Equal(all[0].Missing, []string{"TESTNO"}) || all[3].Name != Generic {
		t.Fatalf("All() = %v", all)
	}
	if Active() != "fast" || sel != 2 {
		t.Fatalf("Active() = %q (sel %d), want the first available, fast", Active(), sel)
	}
	if !Select(Generic) || sel != 0 || Active() != Generic {
		t.Fatalf("Select(generic): sel=%d active=%q", sel, Active())
	}
	if Select("wide") || sel != 0 {
		t.Fatal("Select(wide) enabled an unavailable path")
	}
	if !Select("slow") || Active() != "slow" {
		t.Fatalf("Select(slow): active=%q", Active())
	}
	Reset()
	if Active() != "fast" {
		t.Fatalf("Reset: active=%q", Active())
	}
}

func TestRegisterRejectsBadEntries(t *testing.T) {
	for _, c := range []struct {
		name string
		id   uint8
	}{{Generic, 1}, {"a b", 1}, {"x/y", 1}, {"k=v", 1}, {"", 1}, {"Upper", 1}, {"zero", 0}, {"dup", 1}} {
		func() {
			fake(t)
			var sel uint8
			if c.name == "dup" {
				Register(&sel, 1, "first")
			}
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, id %d) did not panic", c.name, c.id)
				}
			}()
			Register(&sel, c.id, c.name)
		}()
	}
}

// Register follows EnvVar as read at init, which fake stands in for.
func TestEnvVarChoosesPath(t *testing.T) {
	fake(t)
	requested = Generic
	var sel uint8
	Register(&sel, 1, "fast", "TESTYES")
	if sel != 0 || Active() != Generic {
		t.Fatalf("%s=generic: sel=%d, Active()=%q", EnvVar, sel, Active())
	}
	if got := List(); len(got) != 2 {
		t.Fatalf("List() = %v: an env choice must not hide what the CPU can run", got)
	}
	Select("fast")
	Reset()
	if sel != 0 {
		t.Fatal("Reset re-enabled a path the environment turned off")
	}

	fake(t)
	requested = "slow"
	sel = 0
	Register(&sel, 1, "fast", "TESTYES")
	Register(&sel, 2, "slow", "TESTYES")
	if Active() != "slow" {
		t.Fatalf("%s=slow: Active()=%q", EnvVar, Active())
	}
}

func TestFeatures(t *testing.T) {
	if has, ok := Has("SSE2"); !has || !ok {
		t.Error("SSE2 is baseline")
	}
	if _, ok := Has("SHA"); ok {
		t.Error("SHA has no x/sys/cpu flag, so dispatch cannot check it")
	}
	if _, ok := Has("NOSUCH"); ok {
		t.Error("an unknown feature is checkable")
	}
	if m := Missing([]string{"SSE2", "NOSUCH"}); !slices.Equal(m, []string{"NOSUCH"}) {
		t.Errorf("Missing = %v, want [NOSUCH]", m)
	}
}

// Each feature's flag is the x/sys/cpu field of that name (FMA3 is HasFMA,
// BMI HasBMI1, SSE4.1 HasSSE41): a flag wired to the wrong field would
// enable code on CPUs without its instructions.
func TestFeatureFlagsAreTheirFields(t *testing.T) {
	fields := map[*bool]string{}
	for _, s := range []any{&cpu.X86, &cpu.ARM64} {
		v := reflect.ValueOf(s).Elem()
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Bool {
				fields[f.Addr().Interface().(*bool)] = v.Type().Field(i).Name
			}
		}
	}
	rename := map[string]string{"FMA3": "FMA", "BMI": "BMI1"}
	for name, f := range Features {
		if f.has == nil {
			continue
		}
		want := name
		if r, ok := rename[name]; ok {
			want = r
		}
		want = "Has" + strings.ReplaceAll(want, ".", "")
		if got := fields[f.has]; got != want {
			t.Errorf("feature %s reads cpu field %q, want %s", name, got, want)
		}
	}
}

// The selection rule: EnvVar's value, trimmed and in any case, selects an
// available implementation or generic; anything else selects the default,
// never generic, and Request says why.
func TestRequest(t *testing.T) {
	for _, c := range []struct {
		value   string
		active  string
		missing []string // of the Rejection; nil if the name is unknown
		ok      bool     // the value is honoured (no Rejection)
	}{
		{value: "", active: "fast", ok: true},
		{value: "   ", active: "fast", ok: true},
		{value: Generic, active: Generic, ok: true},
		{value: " Generic\n", active: Generic, ok: true},
		{value: "slow", active: "slow", ok: true},
		{value: "SLOW", active: "slow", ok: true},
		{value: "\tslow ", active: "slow", ok: true},
		{value: "fast", active: "fast", ok: true},
		{value: "fsat", active: "fast"},                              // unknown name
		{value: "slow2", active: "fast"},                             // unknown name
		{value: "wide", active: "fast", missing: []string{"TESTNO"}}, // unavailable
		{value: " WIDE", active: "fast", missing: []string{"TESTNO"}},
	} {
		fake(t)
		requested = c.value
		var sel uint8
		Register(&sel, 1, "wide", "TESTYES", "TESTNO")
		Register(&sel, 2, "fast", "TESTYES")
		Register(&sel, 3, "slow", "TESTYES")
		if got := Active(); got != c.active {
			t.Errorf("%s=%q: Active() = %q, want %q", EnvVar, c.value, got, c.active)
		}
		value, rej := Request()
		if value != c.value {
			t.Errorf("%s=%q: Request() value = %q", EnvVar, c.value, value)
		}
		switch {
		case c.ok && rej != nil:
			t.Errorf("%s=%q: Request() rejected it: %+v", EnvVar, c.value, rej)
		case !c.ok && rej == nil:
			t.Errorf("%s=%q: Request() did not reject it", EnvVar, c.value)
		case !c.ok && (rej.Instead != c.active || !slices.Equal(rej.Missing, c.missing) || (rej.Missing == nil) != (c.missing == nil)):
			t.Errorf("%s=%q: Request() = %+v, want Missing %v, Instead %q", EnvVar, c.value, rej, c.missing, c.active)
		}
		Select("slow")
		Reset()
		if got := Active(); got != c.active {
			t.Errorf("%s=%q: after Reset, Active() = %q, want %q", EnvVar, c.value, got, c.active)
		}
	}
}

// With no accelerated path at all (purego, or an architecture without
// assembly) generic runs whatever the request, and a name other than
// generic is still reported.
func TestRequestWithoutRegistry(t *testing.T) {
	fake(t)
	requested = "avx2"
	if Active() != Generic {
		t.Fatalf("Active() = %q with nothing registered", Active())
	}
	if value, rej := Request(); value != "avx2" || rej == nil || rej.Missing != nil || rej.Instead != Generic {
		t.Fatalf("Request() = %q, %+v; want avx2 rejected as unknown, generic instead", value, rej)
	}
	requested = "GENERIC"
	if _, rej := Request(); rej != nil {
		t.Fatalf("generic rejected: %+v", rej)
	}
}

// When no implementation is available the default is generic, so a
// request for one the CPU lacks runs generic, and says so.
func TestRequestNoneAvailable(t *testing.T) {
	fake(t)
	requested = "wide"
	var sel uint8
	Register(&sel, 1, "wide", "TESTNO")
	if sel != 0 || Active() != Generic {
		t.Fatalf("sel = %d, Active() = %q; want generic", sel, Active())
	}
	if _, rej := Request(); rej == nil || !slices.Equal(rej.Missing, []string{"TESTNO"}) || rej.Instead != Generic {
		t.Fatalf("Request() = %+v", rej)
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{"AVX512": "avx512", " avx2 ": "avx2", "\tNeon\n": "neon", "": "", "avx513": "avx513"} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}
