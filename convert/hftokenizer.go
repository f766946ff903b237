package convert

import (
	"bufio"
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
	f, err := os.Open(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hv, err := tokenizer.ParseHFJSON(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %w", ErrUnsupported, err)
	}
	tok, err := hv.Tokenizer()
	if err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %w", ErrUnsupported, err)
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
	md.Set("tokenizer.ggml.merges", format.StringsValue(hv.Merges))
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
