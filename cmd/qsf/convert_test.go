package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestConvertVerifyInspect runs qsf convert, verify and inspect on a real
// model, then damages one layer and expects verify to name it.
func TestConvertVerifyInspect(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf")
	out := filepath.Join(t.TempDir(), "s.qsf")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"convert", in, out, "--compress", "lz4", "--threads", "2"}, &stdout, &stderr); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "ratio") || !strings.Contains(stderr.String(), "layer 5/5") {
		t.Errorf("convert output lacks the summary or progress:\n%s\n%s", stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := runMain([]string{"verify", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("verify: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	if n := strings.Count("\n"+stdout.String(), "\nok "); n != 12 { // 7 sections, 5 layers
		t.Errorf("verify printed %d ok lines, want 12:\n%s", n, stdout.String())
	}
	stdout.Reset()
	if code := runMain([]string{"inspect", out}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "format: QSF v1") ||
		!strings.Contains(stdout.String(), "layers (5)") {
		t.Fatalf("inspect: exit %d:\n%s", code, stdout.String())
	}

	f, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	off := f.QSF().Layers[2].Offset + 100
	f.Close()
	b, _ := os.ReadFile(out)
	b[off] ^= 0x20
	os.WriteFile(out, b, 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := runMain([]string{"verify", out}, &stdout, &stderr); code != 1 {
		t.Fatalf("verify of a damaged file: exit %d", code)
	}
	if !strings.Contains(stdout.String(), "FAIL  layer 2") || !strings.Contains(stdout.String(), "checksum mismatch") {
		t.Fatalf("verify does not name layer 2:\n%s", stdout.String())
	}
}
