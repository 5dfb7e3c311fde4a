package impl

import "testing"

func TestRegistry(t *testing.T) {
	saved := registry
	defer func() { registry = saved }()
	registry = nil

	fast, missing := true, false
	Register("fast", &fast)
	Register("missing", &missing)

	if got := List(); len(got) != 2 || got[0] != "fast" || got[1] != Generic {
		t.Fatalf("List() = %v, want [fast generic]", got)
	}
	if Active() != "fast" {
		t.Fatalf("Active() = %q, want fast", Active())
	}
	if !Select(Generic) || fast || Active() != Generic {
		t.Fatalf("Select(generic): fast=%v active=%q", fast, Active())
	}
	if Select("missing") || missing {
		t.Fatal("Select(missing) enabled an unavailable path")
	}
	Reset()
	if !fast || missing || Active() != "fast" {
		t.Fatalf("Reset: fast=%v missing=%v", fast, missing)
	}
}

func TestRegisterRejectsBadNames(t *testing.T) {
	for _, name := range []string{Generic, "a b", "x/y", "k=v"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			b := true
			saved := registry
			defer func() { registry = saved }()
			Register(name, &b)
		}()
	}
}

func TestEnvVarDisablesOtherPaths(t *testing.T) {
	saved := registry
	defer func() { registry = saved }()
	registry = nil
	t.Setenv(EnvVar, Generic)
	fast := true
	Register("fast", &fast)
	if fast || Active() != Generic {
		t.Fatalf("%s=generic: fast=%v, Active()=%q", EnvVar, fast, Active())
	}
	if got := List(); len(got) != 2 {
		t.Fatalf("List() = %v: an env choice must not hide what the CPU can run", got)
	}
	Select("fast")
	Reset()
	if fast {
		t.Fatal("Reset re-enabled a path the environment turned off")
	}
}
