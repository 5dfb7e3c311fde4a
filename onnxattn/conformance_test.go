package onnxattn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// conformanceDir holds the ONNX backend test cases of the Attention
// operator converted to JSON (its README gives the format). It sits beside
// the repository in CI; from this package's directory that is two levels up.
const conformanceDir = "../../shared/conformance/onnx-attention"

// conformanceCases is how many cases the folder holds: all of them must
// load and pass.
const conformanceCases = 76

// Tolerances of ONNX's own test runner (numpy.testing.assert_allclose):
// |got − want| <= atol + rtol·|want|.
const rtol, atol = 1e-3, 1e-7

type jsonTensor struct {
	Name  string            `json:"name"`
	DType *string           `json:"dtype"`
	Shape []int             `json:"shape"`
	Data  []json.RawMessage `json:"data"`
}

type jsonCase struct {
	Name       string                     `json:"name"`
	Opset      int                        `json:"opset"`
	Attributes map[string]json.RawMessage `json:"attributes"`
	Inputs     []jsonTensor               `json:"inputs"`
	Outputs    []jsonTensor               `json:"outputs"`
}

func parseFloat(raw json.RawMessage) (float64, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		return strconv.ParseFloat(s, 64) // "-Infinity", "Infinity", "NaN"
	}
	return strconv.ParseFloat(string(raw), 64)
}

// tensor converts a JSON tensor; nil when the slot is empty.
func (j jsonTensor) tensor() (*Tensor, error) {
	if j.DType == nil {
		return nil, nil
	}
	t := &Tensor{Shape: j.Shape}
	for _, raw := range j.Data {
		switch *j.DType {
		case "float32", "float16":
			f, err := parseFloat(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", j.Name, err)
			}
			if *j.DType == "float32" {
				t.DType, t.F32 = Float32, append(t.F32, float32(f))
			} else {
				t.DType, t.F16 = Float16, append(t.F16, Float32ToFloat16(float32(f)))
			}
		case "bool":
			var b bool
			if err := json.Unmarshal(raw, &b); err != nil {
				return nil, fmt.Errorf("%s: %v", j.Name, err)
			}
			t.DType, t.Bool = Bool, append(t.Bool, b)
		case "int64":
			n, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", j.Name, err)
			}
			t.DType, t.I64 = Int64, append(t.I64, n)
		default:
			return nil, fmt.Errorf("%s: dtype %q", j.Name, *j.DType)
		}
	}
	if len(j.Data) == 0 {
		t.DType = map[string]DType{"float32": Float32, "float16": Float16, "bool": Bool, "int64": Int64}[*j.DType]
	}
	return t, nil
}

func (c *jsonCase) attributes() (Attributes, error) {
	var a Attributes
	for k, raw := range c.Attributes {
		f, err := parseFloat(raw)
		if err != nil {
			return a, fmt.Errorf("attribute %s: %v", k, err)
		}
		switch k {
		case "is_causal":
			a.IsCausal = f != 0
		case "q_num_heads":
			a.QNumHeads = int(f)
		case "kv_num_heads":
			a.KVNumHeads = int(f)
		case "qk_matmul_output_mode":
			a.QKMatmulOutputMode = int(f)
		case "scale":
			a.Scale = float32(f)
		case "softcap":
			a.Softcap = float32(f)
		case "softmax_precision":
			a.SoftmaxPrecision = int(f)
		default:
			return a, fmt.Errorf("unknown attribute %s", k)
		}
	}
	return a, nil
}

func loadCase(path string) (*jsonCase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c jsonCase
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &c, nil
}

func conformanceFiles(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(conformanceDir); err != nil {
		t.Skipf("ONNX conformance vectors not found (%v): they live in shared/conformance/onnx-attention beside the repository, as in CI", err)
	}
	files, err := filepath.Glob(filepath.Join(conformanceDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != conformanceCases {
		t.Fatalf("%s holds %d cases, want %d", conformanceDir, len(files), conformanceCases)
	}
	return files
}

// loadCases loads every case of the folder (skipping the test without
// it).
func loadCases(t *testing.T) []*jsonCase {
	t.Helper()
	files := conformanceFiles(t)
	cases := make([]*jsonCase, len(files))
	for i, f := range files {
		c, err := loadCase(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[i] = c
	}
	return cases
}

// TestConformance runs every ONNX backend test case of the Attention
// operator under every implementation and checks every expected output:
// shape and type exactly, values with ONNX's tolerances, non-finite values
// and present_key/present_value exactly.
func TestConformance(t *testing.T) {
	cases := loadCases(t)
	testutil.ForEachImpl(t, func(t *testing.T) {
		e := attention.NewBatched(2)
		defer e.Close()
		passed := 0
		for _, c := range cases {
			if t.Run(c.Name, func(t *testing.T) { runCase(t, e, c) }) {
				passed++
			}
		}
		t.Logf("implementation %s: %d/%d ONNX Attention conformance cases pass", attention.Implementation(), passed, len(cases))
	})
}

// decode returns a case's attributes, inputs and expected outputs (Y,
// present_key, present_value, qk_matmul_output; nil where the case has
// none).
func (c *jsonCase) decode(t *testing.T) (Attributes, Inputs, []*Tensor) {
	t.Helper()
	a, err := c.attributes()
	if err != nil {
		t.Fatal(err)
	}
	var ins [7]*Tensor
	for i, j := range c.Inputs {
		if ins[i], err = j.tensor(); err != nil {
			t.Fatal(err)
		}
	}
	in := Inputs{Q: ins[0], K: ins[1], V: ins[2], AttnMask: ins[3], PastKey: ins[4], PastValue: ins[5], NonpadKVSeqlen: ins[6]}
	if len(c.Outputs) != 4 {
		t.Fatalf("%d outputs, want 4", len(c.Outputs))
	}
	want := make([]*Tensor, 4)
	for i, j := range c.Outputs {
		if want[i], err = j.tensor(); err != nil {
			t.Fatal(err)
		}
	}
	return a, in, want
}

func runCase(t *testing.T, e *attention.Batched, c *jsonCase) {
	a, in, want := c.decode(t)
	got, err := Run(e, a, in, Want{Present: want[1] != nil || want[2] != nil, QKMatmulOutput: want[3] != nil})
	if err != nil {
		t.Fatal(err)
	}
	outs := []*Tensor{got.Y, got.PresentKey, got.PresentValue, got.QKMatmulOutput}
	for i, w := range want {
		if w != nil {
			compare(t, c.Outputs[i].Name, outs[i], w, i == 1 || i == 2)
		}
	}
}

// compare checks got against want: dtype and shape exactly, then every
// element within atol + rtol·|want| (exactly if exact is set or want is
// not finite).
func compare(t *testing.T, name string, got, want *Tensor, exact bool) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: missing", name)
	}
	if got.DType != want.DType || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		t.Fatalf("%s: %v %v, want %v %v", name, got.DType, got.Shape, want.DType, want.Shape)
	}
	g, w := got.Floats(), want.Floats()
	if len(g) != len(w) {
		t.Fatalf("%s: %d elements, want %d", name, len(g), len(w))
	}
	bad := 0
	for i := range w {
		gi, wi := float64(g[i]), float64(w[i])
		var ok bool
		switch {
		case math.IsNaN(wi):
			ok = math.IsNaN(gi)
		case exact || math.IsInf(wi, 0):
			ok = gi == wi
		default:
			ok = math.Abs(gi-wi) <= atol+rtol*math.Abs(wi)
			if want.DType == Float32 {
				// A float32 computation does far better than ONNX's
				// tolerance; hold it to that too.
				ok = ok && math.Abs(gi-wi) <= 1e-5+1e-4*math.Abs(wi)
			}
		}
		if !ok {
			if bad < 5 {
				t.Errorf("%s[%d] (of %v) = %v, want %v", name, i, want.Shape, gi, wi)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d elements differ", name, bad, len(w))
	}
}
