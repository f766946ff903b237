package main

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSynthDeterministic(t *testing.T) {
	dir := t.TempDir()
	var sums [][32]byte
	for i, threads := range []string{"1", "2"} {
		path := filepath.Join(dir, "m"+threads+".gguf")
		var out, errb bytes.Buffer
		code := runMain([]string{"synth", "--shape", "tiny", "--type", "q4_0", "--seed", "5", "--threads", threads, "-o", path}, &out, &errb)
		if code != 0 {
			t.Fatalf("synth: exit %d: %s", code, errb.String())
		}
		if !strings.Contains(out.String(), "wrote "+path) {
			t.Errorf("summary %q does not name the file", out.String())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sha256.Sum256(b))
		if i > 0 && sums[i] != sums[0] {
			t.Error("the same seed gave different files")
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files in the output folder, want 2 (temporary files left behind?)", len(entries))
	}
}

func TestSynthPlan(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"synth", "--shape", "12L-768", "--type", "q4_k_m", "--plan"}, &out, &errb); code != 0 {
		t.Fatalf("synth --plan: exit %d: %s", code, errb.String())
	}
	if want := "111 tensors (25 F32 + 73 Q4_K + 13 Q6_K), tensor data 85181952 bytes"; !strings.Contains(out.String(), want) {
		t.Errorf("plan output lacks %q:\n%s", want, out.String())
	}
}

func TestSynthUsage(t *testing.T) {
	for _, args := range [][]string{
		{"synth", "--shape", "nope", "-o", "x"},
		{"synth", "--type", "q3_k", "-o", "x"},
		{"synth", "--shape", "tiny"},
	} {
		var out, errb bytes.Buffer
		if code := runMain(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}
