package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/tokenizer"
)

// hfTokenizer translates tokenizer.json (with tokenizer_config.json when
// present) into GGUF tokenizer keys, as llama.cpp's converter does for
// byte-level BPE vocabularies: tokens by id, token types, merges, the
// pre-tokenizer name and the special ids. The token list is padded to
// config.json's vocab_size with "[PADn]" tokens of type unused.
func hfTokenizer(dir string, cfg hfConfig) (*format.Metadata, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.LoadHFJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %w", ErrUnsupported, err)
	}
	var hf struct {
		Model struct {
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &hf); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %v", ErrInput, err)
	}
	merges, err := parseMerges(hf.Model.Merges)
	if err != nil {
		return nil, err
	}
	n := tok.VocabSize()
	vocab := max(cfg.int(n, "vocab_size"), n)
	tokens := make([]string, vocab)
	types := make([]int32, vocab)
	for i := range vocab {
		if i < n {
			tokens[i], types[i] = tok.TokenText(i), int32(tok.TokenType(i))
		} else {
			tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), int32(tokenizer.TypeUnused)
		}
	}
	md := &format.Metadata{}
	md.Set("tokenizer.ggml.model", format.StringValue("gpt2"))
	md.Set("tokenizer.ggml.pre", format.StringValue(tok.Pre()))
	md.Set("tokenizer.ggml.tokens", format.StringsValue(tokens))
	md.Set("tokenizer.ggml.token_type", format.Int32sValue(types))
	md.Set("tokenizer.ggml.merges", format.StringsValue(merges))
	bos, ok := cfg.id("bos_token_id")
	if !ok {
		bos = tok.BOS()
	}
	eos, ok := cfg.id("eos_token_id")
	if !ok {
		eos = tok.EOS()
	}
	if bos >= 0 && bos < vocab {
		md.Set("tokenizer.ggml.bos_token_id", format.Uint32Value(uint32(bos)))
	}
	if eos >= 0 && eos < vocab {
		md.Set("tokenizer.ggml.eos_token_id", format.Uint32Value(uint32(eos)))
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		var tc map[string]any
		if json.Unmarshal(raw, &tc) == nil {
			if b, ok := tc["add_bos_token"].(bool); ok {
				md.Set("tokenizer.ggml.add_bos_token", format.BoolValue(b))
			}
			if b, ok := tc["add_eos_token"].(bool); ok {
				md.Set("tokenizer.ggml.add_eos_token", format.BoolValue(b))
			}
			if s, ok := tc["chat_template"].(string); ok {
				md.Set("tokenizer.chat_template", format.StringValue(s))
			}
		}
	}
	return md, nil
}

// parseMerges accepts both merge encodings: ["a b", ...] and
// [["a", "b"], ...].
func parseMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var flat []string
	if err := json.Unmarshal(raw, &flat); err == nil {
		return flat, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json merges: %v", ErrInput, err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("%w: tokenizer.json merge %d has %d parts", ErrInput, i, len(p))
		}
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}
