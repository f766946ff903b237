package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// lastJSON decodes the last line of out.
func lastJSON(t *testing.T, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
}

// TestQuantizeCalibrated quantizes stories260K (rows padded to 256) to
// each QSF type with a calibration text, checks the bits per weight, and
// runs the result.
func TestQuantizeCalibrated(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte(strings.Repeat("Once upon a time, there was a little girl named Lily. She liked to play with her ball in the park.\n", 8)), 0o644)
	for _, tc := range []struct {
		quant string
		bpw   float64
	}{{"2bit", 2.5}, {"3bit", 3.5}, {"QSF_Q4A", 4.5}} {
		out := filepath.Join(dir, tc.quant+".qsf")
		var stdout, stderr bytes.Buffer
		if code := runMain([]string{"quantize", in, out, "--quant", tc.quant, "--calibration", calib, "--json"}, &stdout, &stderr); code != 0 {
			t.Fatalf("quantize %s: exit %d: %s", tc.quant, code, stderr.String())
		}
		var rep quantizeReport
		lastJSON(t, stdout.String(), &rep)
		if rep.BPW != tc.bpw || rep.CalibrationTokens == 0 || len(rep.Tensors) != 37 {
			t.Errorf("%s: bpw %v (want %v), %d calibration tokens, %d tensors", tc.quant, rep.BPW, tc.bpw, rep.CalibrationTokens, len(rep.Tensors))
		}
		for _, q := range rep.Tensors {
			if !(q.Cosine > 0.8) {
				t.Errorf("%s: %s cosine %v", tc.quant, q.Name, q.Cosine)
			}
		}
		stdout.Reset()
		if code := runMain([]string{"run", "-m", out, "-p", "Once upon a time", "-n", "8", "--temp", "0"}, &stdout, &stderr); code != 0 || len(stdout.String()) < len("Once upon a time")+4 {
			t.Fatalf("run %s: exit %d: %q %s", tc.quant, code, stdout.String(), stderr.String())
		}
	}
}

// TestQuantizeErrors: bad input, calibration and options fail clearly and
// leave no output file.
func TestQuantizeErrors(t *testing.T) {
	f32 := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	q8 := testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf")
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte(" \n"), 0o644)
	binary := filepath.Join(dir, "bin.txt")
	os.WriteFile(binary, []byte{'a', 0, 0xff, 0xfe}, 0o644)
	raw, err := os.ReadFile(f32)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.gguf")
	os.WriteFile(truncated, raw[:len(raw)/2], 0o644)
	out := filepath.Join(dir, "out.qsf")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no type", []string{f32, out}, "no type"},
		{"bad type", []string{f32, out, "--quant", "5bit"}, "unknown type"},
		{"float type", []string{f32, out, "--quant", "F32"}, "not a type"},
		{"quantized input", []string{q8, out, "--quant", "2bit"}, "wants an f32"},
		{"not gguf", []string{empty, out, "--quant", "2bit"}, "not a GGUF file"},
		{"truncated", []string{truncated, out, "--quant", "2bit"}, "truncated"},
		{"empty calibration", []string{f32, out, "--quant", "2bit", "--calibration", empty}, "is empty"},
		{"binary calibration", []string{f32, out, "--quant", "2bit", "--calibration", binary}, "not UTF-8 text"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runMain(append([]string{"quantize"}, tc.args...), &stdout, &stderr); code == 0 {
			t.Errorf("%s: exit 0", tc.name)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q lacks %q", tc.name, stderr.String(), tc.want)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*out.qsf*")); len(left) != 0 {
			t.Fatalf("%s: left %v behind", tc.name, left)
		}
	}
}

// TestQuantizeImportanceFile: --save-importance then --importance gives the
// same file as --calibration; --output-type sets the LM head's type.
func TestQuantizeImportanceFile(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte("Lily and Ben went to the park. They saw a big dog and a red ball.\n"), 0o644)
	imp := filepath.Join(dir, "imp.json")
	a, b := filepath.Join(dir, "a.qsf"), filepath.Join(dir, "b.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"quantize", in, a, "--quant", "2bit", "--calibration", calib, "--save-importance", imp, "--output-type", "4bit", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep quantizeReport
	lastJSON(t, stdout.String(), &rep)
	for _, q := range rep.Tensors {
		want := "QSF_Q2R"
		if q.Name == "output.weight" {
			want = "QSF_Q4R"
		}
		if q.Type != want {
			t.Errorf("%s is %s, want %s", q.Name, q.Type, want)
		}
	}
	if !(rep.BPW > 2.5 && rep.BPW < 2.7) {
		t.Errorf("bpw %v, want between 2.5 and 2.7", rep.BPW)
	}
	if code := runMain([]string{"quantize", in, b, "--quant", "2bit", "--importance", imp, "--output-type", "4bit"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Error("--importance gives another file than --calibration")
	}
	// Without importance the rounding differs.
	if code := runMain([]string{"quantize", in, b, "--quant", "2bit", "--output-type", "4bit"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if bb, _ = os.ReadFile(b); bytes.Equal(ab, bb) {
		t.Error("calibration changed nothing")
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"tokens":1,"energy":{"blk.0.attn_q.weight":[1,2]}}`), 0o644)
	stderr.Reset()
	if code := runMain([]string{"quantize", in, filepath.Join(dir, "c.qsf"), "--quant", "2bit", "--importance", bad}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "2 columns") {
		t.Errorf("importance of the wrong width: exit %d, %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "c.qsf")); err == nil {
		t.Error("output left behind")
	}
	stderr.Reset()
	if code := runMain([]string{"quantize", in, filepath.Join(dir, "c.qsf"), "--quant", "2bit", "--importance", bad, "--calibration", calib}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "exclude") {
		t.Errorf("--importance with --calibration: exit %d, %s", code, stderr.String())
	}
}

// TestQuantizeMixed: --bpw chooses types per matrix within the budget and
// reports each matrix's measured sensitivity; an impossible --bpw or
// --target-size fails without leaving an output file.
func TestQuantizeMixed(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	dir := t.TempDir()
	calib := filepath.Join(dir, "calib.txt")
	os.WriteFile(calib, []byte(strings.Repeat("Lily and Ben went to the park. They saw a big dog and a red ball.\n", 6)), 0o644)
	out := filepath.Join(dir, "m.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"quantize", in, out, "--bpw", "3.2", "--calibration", calib, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep quantizeReport
	lastJSON(t, stdout.String(), &rep)
	if !(rep.BPW > 2.9 && rep.BPW <= 3.2) || rep.Type != "mixed" || len(rep.Mixed) != 37 {
		t.Errorf("bpw %v (want in (2.9, 3.2]), type %q, %d sensitivities", rep.BPW, rep.Type, len(rep.Mixed))
	}
	types := map[string]bool{}
	for _, q := range rep.Tensors {
		types[q.Type] = true
	}
	if len(types) < 2 {
		t.Errorf("one type for every matrix: %v", types)
	}
	for _, m := range rep.Mixed {
		if !(m.KLSmallest >= 0) {
			t.Errorf("%s: sensitivity %v", m.Name, m.KLSmallest)
		}
	}
	for _, args := range [][]string{{"--bpw", "2"}, {"--target-size", "0.5"}} {
		bad := filepath.Join(dir, "bad.qsf")
		stderr.Reset()
		if code := runMain(append([]string{"quantize", in, bad, "--calibration", calib}, args...), &stdout, &stderr); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
		if !strings.Contains(stderr.String(), "target too small") {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "bad.qsf*")); len(left) != 0 {
			t.Errorf("%v: left %v behind", args, left)
		}
	}
}
