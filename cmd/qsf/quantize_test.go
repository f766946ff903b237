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
