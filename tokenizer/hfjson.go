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

// HFVocab is the vocabulary of a Hugging Face tokenizer.json byte-level BPE
// model as plain values, in the form of GGUF's tokenizer.ggml.* keys.
type HFVocab struct {
	// Tokens holds the token texts by id: the model vocabulary and the
	// added tokens, with unused ids filled by "[PADn]".
	Tokens []string
	// Types holds the token types by id: TypeNormal, or for added tokens
	// TypeControl when marked special and TypeUserDefined otherwise.
	Types []TokenType
	// Merges holds the merge rules as "left right", by rank.
	Merges []string
	// Pre names the pre-tokenizer as tokenizer.ggml.pre does.
	Pre string
	// BOS and EOS are the ids of the well-known BOS and EOS texts
	// (<|begin_of_text|>, <s>, <|endoftext|>, ...), or -1.
	BOS, EOS int
	// IgnoreMerges is the model's ignore_merges flag: words that are
	// whole tokens are not split.
	IgnoreMerges bool
}

// ParseHFJSON reads a Hugging Face tokenizer.json with a byte-level BPE
// model. The pre-tokenizer is recognised from its Split regex (Llama 3,
// Qwen2) or ByteLevel (GPT-2); others fall back to "gpt-2". Errors wrap
// ErrMalformed or ErrUnsupported.
func ParseHFJSON(r io.Reader) (*HFVocab, error) {
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
	// Added tokens take precedence over the model vocabulary, as in HF's
	// AddedVocabulary: an added token's id is its own whatever text the
	// vocabulary gave that id, and of added tokens sharing a text the
	// last one listed wins (the earlier ids are left unused). The result
	// does not depend on map iteration order.
	added := make(map[string]int, len(hf.AddedTokens))
	for _, a := range hf.AddedTokens {
		added[a.Content] = a.ID
	}
	addedIDs := make(map[int]bool, len(added))
	for _, id := range added {
		addedIDs[id] = true
	}
	all := make(map[string]int, len(hf.Model.Vocab)+len(added))
	for s, id := range hf.Model.Vocab {
		if !addedIDs[id] {
			all[s] = id
		}
	}
	for s, id := range added {
		all[s] = id
	}
	tokens, err := tokensFromMap(all, len(hf.AddedTokens))
	if err != nil {
		return nil, err
	}
	h := &HFVocab{Tokens: tokens, Merges: merges, BOS: -1, EOS: -1, IgnoreMerges: hf.Model.IgnoreMerges}
	h.Types = make([]TokenType, len(tokens))
	for i := range h.Types {
		h.Types[i] = TypeNormal
	}
	for _, a := range hf.AddedTokens {
		// A later added token with the same text wins the text's id (as
		// in all), so type the id the text ended up with.
		id := all[a.Content]
		if a.Special {
			h.Types[id] = TypeControl
		} else {
			h.Types[id] = TypeUserDefined
		}
	}
	switch {
	case strings.Contains(pre, `\\p{N}{1,3}`):
		h.Pre = "llama-bpe"
	case strings.Contains(pre, `\\p{N}|`) && strings.Contains(pre, `[^\\r\\n\\p{L}\\p{N}]?\\p{L}+`):
		h.Pre = "qwen2"
	default:
		h.Pre = "gpt-2"
	}
	for _, name := range []string{"<|begin_of_text|>", "<s>", "<|endoftext|>"} {
		if id, ok := all[name]; ok {
			h.BOS = id
			break
		}
	}
	for _, name := range []string{"<|end_of_text|>", "</s>", "<|endoftext|>"} {
		if id, ok := all[name]; ok {
			h.EOS = id
			break
		}
	}
	return h, nil
}

// Tokenizer builds a Tokenizer from h, applying llama.cpp's load rules
// (model defaults for ids h leaves at -1). It does not modify h.
func (h *HFVocab) Tokenizer() (*Tokenizer, error) {
	v := newVocab(BPE)
	v.tokens, v.types, v.merges, v.pre = h.Tokens, h.Types, h.Merges, h.Pre
	if h.BOS >= 0 {
		v.bos = h.BOS
	}
	if h.EOS >= 0 {
		v.eos = h.EOS
	}
	t, err := v.build()
	if err != nil {
		return nil, err
	}
	if h.IgnoreMerges {
		t.ignoreMerges = true
	}
	return t, nil
}

// LoadHFJSON reads a Hugging Face tokenizer.json with a byte-level BPE
// model: ParseHFJSON followed by HFVocab.Tokenizer.
func LoadHFJSON(r io.Reader) (*Tokenizer, error) {
	h, err := ParseHFJSON(r)
	if err != nil {
		return nil, err
	}
	return h.Tokenizer()
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
