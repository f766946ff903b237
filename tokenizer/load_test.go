package tokenizer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

func TestLoadFilesVectors(t *testing.T) {
	dir := testfiles.Dir(t)
	cases := []struct {
		file, vectors string
	}{
		{"tokenizers/llama3.2-encoder.json", "ggml-vocab-llama-bpe.gguf"},
		{"tokenizers/qwen.tiktoken", "ggml-vocab-qwen2.gguf"},
		{"tokenizers/qwen.tiktoken", "ggml-vocab-deepseek-r1-qwen.gguf"},
		{"tokenizers/gpt2-encoder.json", "ggml-vocab-gpt-2.gguf"},
		{"tokenizers/llama2-tokenizer.bin", "ggml-vocab-llama-spm.gguf"},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file)+"/"+c.vectors, func(t *testing.T) {
			tok, err := Load(filepath.Join(dir, "models", c.file))
			if err != nil {
				t.Fatal(err)
			}
			checkVectors(t, tok, filepath.Join(dir, "models/vocab", c.vectors))
		})
	}
}

func TestLoadLlama2CStories(t *testing.T) {
	dir := testfiles.Dir(t)
	tok, err := Load(filepath.Join(dir, "models/llama2c/tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	got := tok.Encode("Once upon a time", EncodeOptions{AddSpecial: true})
	if want := []int{1, 403, 407, 261, 378}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if tok.BOS() != 1 || tok.EOS() != 2 || !tok.IsEOG(2) {
		t.Errorf("BOS/EOS = %d/%d", tok.BOS(), tok.EOS())
	}
}

// TestLoadHFJSON builds a tokenizer.json from the GPT-2 encoder and merges
// and checks it against the gpt-2 vectors.
func TestLoadHFJSON(t *testing.T) {
	dir := testfiles.Dir(t)
	enc, err := os.ReadFile(filepath.Join(dir, "models/tokenizers/gpt2-encoder.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vocab map[string]int
	if err := json.Unmarshal(enc, &vocab); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "models/tokenizers/gpt2-vocab.bpe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var merges []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#version") {
			merges = append(merges, l)
		}
	}
	doc := map[string]any{
		"added_tokens":  []any{map[string]any{"id": 50256, "content": "<|endoftext|>", "special": true}},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, tok, filepath.Join(dir, "models/vocab/ggml-vocab-gpt-2.gguf"))
	got := tok.Encode("a<|endoftext|>", EncodeOptions{ParseSpecial: true})
	if len(got) != 2 || got[1] != 50256 {
		t.Errorf("ParseSpecial: %v", got)
	}
	if got := tok.Encode("a<|endoftext|>", EncodeOptions{}); slices.Contains(got, 50256) {
		t.Errorf("special token matched without ParseSpecial: %v", got)
	}
}
