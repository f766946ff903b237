package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// TestRunAndLogitsMatchLlamaCpp runs the CLI as a user would — qsf run
// --temp 0 -n 64 --json and qsf logits --json — on a few stories260K files
// and compares with llama.cpp's reference outputs. (The full table over
// every file is TestReferenceParity in the root package.)
func TestRunAndLogitsMatchLlamaCpp(t *testing.T) {
	dir := testfiles.Dir(t)
	for _, stem := range []string{"stories260K-f32", "stories260K-Q8_0", "stories260K-pad256-Q4_K_M"} {
		t.Run(stem, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "reference", stem+"__once-upon-a-time.json"))
			if err != nil {
				t.Fatal(err)
			}
			var ref struct {
				Prompt       string      `json:"prompt"`
				PromptTokens []int       `json:"prompt_token_ids"`
				PromptLogits [][]float32 `json:"prompt_logits"`
				Greedy       struct {
					IDs  []int  `json:"ids"`
					Text string `json:"text"`
				} `json:"greedy"`
			}
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			model := filepath.Join(dir, "models", "gguf", stem+".gguf")

			var out, errb bytes.Buffer
			if code := runMain([]string{"run", "-m", model, "-p", ref.Prompt, "--temp", "0", "-n", "64", "--json", "--threads", "1"}, &out, &errb); code != 0 {
				t.Fatalf("run: exit %d: %s", code, errb.String())
			}
			var run struct {
				PromptTokens []int   `json:"prompt_tokens"`
				Tokens       []int   `json:"tokens"`
				Text         string  `json:"text"`
				PrefillTokS  float64 `json:"prefill_tok_s"`
				DecodeTokS   float64 `json:"decode_tok_s"`
			}
			if err := json.Unmarshal(out.Bytes(), &run); err != nil {
				t.Fatalf("run --json: %v: %s", err, out.String())
			}
			if fmt.Sprint(run.PromptTokens) != fmt.Sprint(ref.PromptTokens) {
				t.Errorf("prompt tokens %v, llama.cpp %v", run.PromptTokens, ref.PromptTokens)
			}
			if fmt.Sprint(run.Tokens) != fmt.Sprint(ref.Greedy.IDs) {
				t.Errorf("greedy tokens\n qsf %v\nllama %v", run.Tokens, ref.Greedy.IDs)
			}
			if run.Text != ref.Greedy.Text || run.DecodeTokS <= 0 || run.PrefillTokS <= 0 {
				t.Errorf("text %q (llama.cpp %q), speeds %v %v", run.Text, ref.Greedy.Text, run.PrefillTokS, run.DecodeTokS)
			}

			out.Reset()
			if code := runMain([]string{"logits", "-m", model, "-p", ref.Prompt, "--json"}, &out, &errb); code != 0 {
				t.Fatalf("logits: exit %d: %s", code, errb.String())
			}
			var lg struct {
				PromptTokens []int       `json:"prompt_tokens"`
				Logits       [][]float64 `json:"logits"`
			}
			if err := json.Unmarshal(out.Bytes(), &lg); err != nil {
				t.Fatal(err)
			}
			if len(lg.Logits) != len(ref.PromptLogits) {
				t.Fatalf("%d logit rows, want %d", len(lg.Logits), len(ref.PromptLogits))
			}
			for i, row := range lg.Logits {
				var ab, aa, bb float64
				for j, x := range row {
					y := float64(ref.PromptLogits[i][j])
					ab, aa, bb = ab+x*y, aa+x*x, bb+y*y
				}
				if cos := ab / math.Sqrt(aa*bb); cos < 0.9999 {
					t.Errorf("position %d: cosine %.6f", i, cos)
				}
			}
		})
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644)
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run", "-m", filepath.Join(dir, "missing.gguf"), "-p", "x"}, 1, "no such file"},
		{[]string{"run", "-m", bad, "-p", "x"}, 1, "truncated"},
		{[]string{"run", "-p", "x"}, 2, "no model"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"run", "--no-such-flag"}, 2, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		code := runMain(tt.args, &out, &errb)
		msg := errb.String()
		if code != tt.code || !strings.Contains(msg, tt.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tt.args, code, msg, tt.code, tt.msg)
		}
		if code == 1 && strings.Count(strings.TrimSpace(msg), "\n") != 0 {
			t.Errorf("%v: error is not one line: %q", tt.args, msg)
		}
	}
}

func TestHelp(t *testing.T) {
	for name := range commands {
		var out, errb bytes.Buffer
		if code := runMain([]string{name, "--help"}, &out, &errb); code != 0 {
			t.Errorf("%s --help: exit %d", name, code)
		}
		if !strings.Contains(errb.String(), "Usage: qsf "+name) {
			t.Errorf("%s --help prints %q", name, errb.String())
		}
	}
}
