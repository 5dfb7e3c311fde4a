package onnxattn

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/glancelab/attention"
	"github.com/glancelab/attention/internal/testutil"
)

// conformanceArchive holds the ONNX backend test cases of the Attention
// operator converted to JSON, one <case>.json per case in a bzip2-compressed
// tar. The README beside it gives their provenance, license, format and
// semantics, and ends with the sha256 of every file, which the cases are
// checked against.
const (
	conformanceArchive = "testdata/onnx-attention/cases.tar.bz2"
	conformanceReadme  = "testdata/onnx-attention/README.md"
)

// conformanceCases is how many cases the archive holds: all of them must
// load, run and pass, on every implementation.
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
		t.DType = map[string]DType{"float32": Float32, "float16": Float16, "bool": Bool, "int64": Int64, "int32": Int32}[*j.DType]
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

// The README's checksum lines, as sha256sum prints them.
var sumLine = regexp.MustCompile(`^([0-9a-f]{64})  (test_attention\S*\.json)$`)

// readmeSums returns the sha256 of every case file listed in the README.
func readmeSums() (map[string]string, error) {
	f, err := os.Open(conformanceReadme)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if m := sumLine.FindStringSubmatch(s.Text()); m != nil {
			if _, dup := sums[m[2]]; dup {
				return nil, fmt.Errorf("%s: %s listed twice", conformanceReadme, m[2])
			}
			sums[m[2]] = m[1]
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(sums) != conformanceCases {
		return nil, fmt.Errorf("%s lists the sha256 of %d cases, want %d", conformanceReadme, len(sums), conformanceCases)
	}
	return sums, nil
}

// readCases reads every case of the archive, in the archive's (name)
// order. Each file must be a plain <case>.json whose bytes have the sha256
// the README lists for it, and the archive must hold exactly the
// conformanceCases files the README lists.
func readCases() ([]*jsonCase, error) {
	sums, err := readmeSums()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(conformanceArchive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []*jsonCase
	tr := tar.NewReader(bzip2.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", conformanceArchive, err)
		}
		name := h.Name
		if h.Typeflag != tar.TypeReg || strings.Contains(name, "/") || !strings.HasSuffix(name, ".json") {
			return nil, fmt.Errorf("%s: unexpected entry %q (type %q): want only <case>.json files", conformanceArchive, name, h.Typeflag)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %v", conformanceArchive, name, err)
		}
		want, ok := sums[name]
		if !ok {
			return nil, fmt.Errorf("%s: %s is not listed in %s (or appears twice)", conformanceArchive, name, conformanceReadme)
		}
		delete(sums, name)
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != want {
			return nil, fmt.Errorf("%s: %s has sha256 %x, %s lists %s", conformanceArchive, name, got, conformanceReadme, want)
		}
		var c jsonCase
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", conformanceArchive, name, err)
		}
		if c.Name+".json" != name {
			return nil, fmt.Errorf("%s: %s holds case %q", conformanceArchive, name, c.Name)
		}
		cases = append(cases, &c)
	}
	if len(cases) != conformanceCases {
		return nil, fmt.Errorf("%s holds %d cases, want %d", conformanceArchive, len(cases), conformanceCases)
	}
	return cases, nil
}

// The archive is read once per test binary: TestConformance and
// TestConformanceCache share the cases (which the tests only read).
var conformanceOnce = sync.OnceValues(readCases)

// loadCases returns every case of the archive, failing the test (never
// skipping it) if any is missing or altered.
func loadCases(t *testing.T) []*jsonCase {
	t.Helper()
	cases, err := conformanceOnce()
	if err != nil {
		t.Fatalf("ONNX Attention conformance vectors: %v", err)
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
		// t.Run reports success for a case a -run or -skip pattern left
		// out, so what ran is counted here: fewer than all fails.
		ran, passed := 0, 0
		for _, c := range cases {
			run := false
			if t.Run(c.Name, func(t *testing.T) { run = true; runCase(t, e, c) }) && run {
				passed++
			}
			if run {
				ran++
			}
		}
		t.Logf("implementation %s: %d/%d ONNX Attention conformance cases pass", attention.Implementation(), passed, conformanceCases)
		if ran != conformanceCases {
			t.Errorf("implementation %s: %d of the %d cases ran (a -run or -skip pattern on the cases counts too)", attention.Implementation(), ran, conformanceCases)
		}
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
