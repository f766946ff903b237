package convert

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/qsf-llm/qsf/tokenizer"
)

// TestHFTokenizer checks the GGUF tokenizer keys hfTokenizer derives from
// a byte-level BPE tokenizer.json (with pair-encoded merges) and
// tokenizer_config.json; config.json's ids override the vocabulary's.
func TestHFTokenizer(t *testing.T) {
	dir := t.TempDir()
	const n = 6
	js := `{"added_tokens": [{"id": 5, "content": "<|endoftext|>", "special": true}],
		"pre_tokenizer": {"type": "ByteLevel"},
		"model": {"type": "BPE", "vocab": {"h": 0, "e": 1, "l": 2, "he": 3, "ll": 4}, "merges": [["h", "e"], ["l", "l"]]}}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	tc := `{"add_bos_token": false, "add_eos_token": true, "chat_template": "{{ x }}"}`
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(tc), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := hfTokenizer(dir, hfConfig{"vocab_size": float64(n + 2), "eos_token_id": float64(2)})
	if err != nil {
		t.Fatal(err)
	}
	str := func(k string) string { s, _ := md.String(k); return s }
	if got := str("tokenizer.ggml.model"); got != "gpt2" {
		t.Errorf("model %q", got)
	}
	if got := str("tokenizer.ggml.pre"); got != "gpt-2" {
		t.Errorf("pre %q", got)
	}
	if got := str("tokenizer.chat_template"); got != "{{ x }}" {
		t.Errorf("chat_template %q", got)
	}
	if merges, _ := md.Strings("tokenizer.ggml.merges"); !reflect.DeepEqual(merges, []string{"h e", "l l"}) {
		t.Errorf("merges %q", merges)
	}
	toks, _ := md.Strings("tokenizer.ggml.tokens")
	types, _ := md.Int32s("tokenizer.ggml.token_type")
	if len(toks) != n+2 || len(types) != n+2 {
		t.Fatalf("%d tokens, %d types, want %d", len(toks), len(types), n+2)
	}
	for _, c := range []struct {
		id   int
		text string
		typ  tokenizer.TokenType
	}{
		{3, "he", tokenizer.TypeNormal},
		{5, "<|endoftext|>", tokenizer.TypeControl},
		{n + 1, "[PAD7]", tokenizer.TypeUnused},
	} {
		if toks[c.id] != c.text || tokenizer.TokenType(types[c.id]) != c.typ {
			t.Errorf("token %d = %q type %d, want %q type %d", c.id, toks[c.id], types[c.id], c.text, c.typ)
		}
	}
	for k, want := range map[string]uint64{"tokenizer.ggml.bos_token_id": 5, "tokenizer.ggml.eos_token_id": 2} {
		if got, ok := md.Uint(k); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", k, got, ok, want)
		}
	}
	for k, want := range map[string]bool{"tokenizer.ggml.add_bos_token": false, "tokenizer.ggml.add_eos_token": true} {
		if got, ok := md.Bool(k); !ok || got != want {
			t.Errorf("%s = %v, %v; want %v", k, got, ok, want)
		}
	}
}

// TestHFTokenizerErrors checks that tokenizer.json problems are reported
// as ErrUnsupported.
func TestHFTokenizerErrors(t *testing.T) {
	for _, js := range []string{
		`{"model":`,
		`{"model":{"type":"Unigram"}}`,
		`{"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0},"merges":[["a"]]}}`,
		`{"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{}}}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := hfTokenizer(dir, hfConfig{}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: err = %v, want ErrUnsupported", js, err)
		}
	}
}
