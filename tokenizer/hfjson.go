package tokenizer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// hfTokenizer is the part of a Hugging Face tokenizer.json this package
// reads.
type hfTokenizer struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Model struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		ByteFallback bool            `json:"byte_fallback"`
		IgnoreMerges bool            `json:"ignore_merges"`
	} `json:"model"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
}

// LoadHFJSON reads a Hugging Face tokenizer.json with a byte-level BPE
// model. The pre-tokenizer is recognised from its Split regex (Llama 3,
// Qwen2) or ByteLevel (GPT-2); others fall back to "gpt-2". Added tokens
// become control tokens when marked special and user-defined otherwise.
func LoadHFJSON(r io.Reader) (*Tokenizer, error) {
	var hf hfTokenizer
	if err := json.NewDecoder(r).Decode(&hf); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %v", ErrMalformed, err)
	}
	if hf.Model.Type != "BPE" {
		return nil, fmt.Errorf("%w: tokenizer.json model type %q", ErrUnsupported, hf.Model.Type)
	}
	pre := string(hf.PreTokenizer)
	if hf.Model.ByteFallback || !strings.Contains(pre, "ByteLevel") {
		return nil, fmt.Errorf("%w: tokenizer.json BPE without a ByteLevel pre-tokenizer (SentencePiece-style); convert it to GGUF", ErrUnsupported)
	}
	merges, err := hfMerges(hf.Model.Merges)
	if err != nil {
		return nil, err
	}
	all := make(map[string]int, len(hf.Model.Vocab)+len(hf.AddedTokens))
	for s, id := range hf.Model.Vocab {
		all[s] = id
	}
	for _, a := range hf.AddedTokens {
		all[a.Content] = a.ID
	}
	tokens, err := tokensFromMap(all, len(hf.AddedTokens))
	if err != nil {
		return nil, err
	}
	v := newVocab(BPE)
	v.tokens, v.merges = tokens, merges
	v.types = make([]TokenType, len(tokens))
	for i := range v.types {
		v.types[i] = TypeNormal
	}
	for _, a := range hf.AddedTokens {
		if a.Special {
			v.types[a.ID] = TypeControl
		} else {
			v.types[a.ID] = TypeUserDefined
		}
	}
	switch {
	case strings.Contains(pre, `\\p{N}{1,3}`):
		v.pre = "llama-bpe"
	case strings.Contains(pre, `\\p{N}|`) && strings.Contains(pre, `[^\\r\\n\\p{L}\\p{N}]?\\p{L}+`):
		v.pre = "qwen2"
	default:
		v.pre = "gpt-2"
	}
	for _, name := range []string{"<|begin_of_text|>", "<s>", "<|endoftext|>"} {
		if id, ok := all[name]; ok {
			v.bos = id
			break
		}
	}
	for _, name := range []string{"<|end_of_text|>", "</s>", "<|endoftext|>"} {
		if id, ok := all[name]; ok {
			v.eos = id
			break
		}
	}
	t, err := v.build()
	if err != nil {
		return nil, err
	}
	if hf.Model.IgnoreMerges {
		t.ignoreMerges = true
	}
	return t, nil
}

// hfMerges accepts both merge encodings: ["a b", ...] and [["a","b"], ...].
func hfMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var flat []string
	if err := json.Unmarshal(raw, &flat); err == nil {
		return flat, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json merges: %v", ErrMalformed, err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("%w: tokenizer.json merge %d has %d parts", ErrMalformed, i, len(p))
		}
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}
