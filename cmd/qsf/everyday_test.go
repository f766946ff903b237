package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

func runOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runMain(args, &out, &errb); code != 0 {
		t.Fatalf("qsf %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), errb.String()
}

// TestPromptSources checks that -p -, --file and -p give the same greedy
// text.
func TestPromptSources(t *testing.T) {
	model := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	common := []string{"run", "-m", model, "-n", "8", "--temp", "0", "--threads", "1"}
	want, _ := runOK(t, append(common, "-p", "Once upon a time")...)

	stdin = strings.NewReader("Once upon a time")
	defer func() { stdin = os.Stdin }()
	if got, _ := runOK(t, append(common, "-p", "-")...); got != want {
		t.Errorf("-p -: %q, want %q", got, want)
	}
	file := filepath.Join(t.TempDir(), "prompt.txt")
	os.WriteFile(file, []byte("Once upon a time"), 0o644)
	if got, _ := runOK(t, append(common, "--file", file)...); got != want {
		t.Errorf("--file: %q, want %q", got, want)
	}
	var out, errb bytes.Buffer
	if code := runMain(append(common, "--file", file, "-p", "x"), &out, &errb); code != 2 {
		t.Errorf("--file and -p: exit %d, want 2", code)
	}
}

func TestInspectJSON(t *testing.T) {
	model := testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf")
	out, _ := runOK(t, "inspect", "--json", model)
	var v struct {
		Format   string         `json:"format"`
		Metadata map[string]any `json:"metadata"`
		Tensors  []struct {
			Name  string   `json:"name"`
			Type  string   `json:"type"`
			Shape []uint64 `json:"shape"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v.Format != "GGUF" || v.Metadata["general.architecture"] != "llama" || v.Metadata["llama.context_length"] != float64(128) {
		t.Errorf("format %q, metadata %v", v.Format, v.Metadata)
	}
	if len(v.Tensors) == 0 || v.Tensors[0].Name == "" || len(v.Tensors[0].Shape) == 0 {
		t.Errorf("tensors %+v", v.Tensors)
	}
	if toks, ok := v.Metadata["tokenizer.ggml.tokens"].(map[string]any); !ok || toks["len"] != float64(512) {
		t.Errorf("tokenizer.ggml.tokens = %v, want a summary of 512 strings", v.Metadata["tokenizer.ggml.tokens"])
	}
}

func TestVersion(t *testing.T) {
	out, _ := runOK(t, "version")
	if !strings.HasPrefix(out, "qsf ") || !strings.Contains(out, "go1.") {
		t.Errorf("version: %q", out)
	}
}

func TestLlama2cHint(t *testing.T) {
	bin := testfiles.Path(t, "models", "llama2c", "stories260K.bin")
	var out, errb bytes.Buffer
	if code := runMain([]string{"run", "-m", bin, "-p", "x"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "qsf convert "+bin) {
		t.Errorf("exit %d, stderr %q: want a pointer to qsf convert", code, errb.String())
	}
}

func TestLoadBar(t *testing.T) {
	var buf bytes.Buffer
	b := &loadBar{w: &buf, name: "m.gguf", start: time.Now()}
	b.update(1, 2)
	b.clear()
	if buf.Len() != 0 {
		t.Errorf("drew %q within the first second", buf.String())
	}
	b.start = time.Now().Add(-2 * time.Second)
	b.update(45, 100)
	b.clear()
	if s := buf.String(); !strings.Contains(s, "loading m.gguf:  45%") || !strings.HasSuffix(s, "\r\x1b[K") {
		t.Errorf("drew %q", s)
	}
}
