// Package tokenizer converts text to token ids and back exactly as llama.cpp
// does for the vocabularies found in GGUF files (SentencePiece-style "llama"
// vocabularies and byte-level "gpt2" BPE vocabularies), and loads the same
// vocabularies from Hugging Face tokenizer.json, OpenAI encoder.json +
// vocab.bpe, tiktoken rank files and llama2.c tokenizer.bin files.
//
// A Tokenizer is immutable after construction and safe for concurrent use.
package tokenizer

import (
	"errors"
	"sort"
)

// Sentinel errors returned (wrapped) by the constructors and loaders.
var (
	// ErrUnsupported reports a tokenizer model or file layout that this
	// package does not implement.
	ErrUnsupported = errors.New("tokenizer: unsupported tokenizer")
	// ErrMalformed reports inconsistent or truncated tokenizer data.
	ErrMalformed = errors.New("tokenizer: malformed tokenizer data")
)

// Model is the tokenization algorithm of a vocabulary.
type Model int

const (
	// SPM is SentencePiece-style BPE driven by token scores with byte
	// fallback (GGUF tokenizer.ggml.model = "llama").
	SPM Model = iota + 1
	// BPE is byte-level BPE driven by merge ranks with a regex-like
	// pre-tokenizer (GGUF tokenizer.ggml.model = "gpt2").
	BPE
)

// String returns the GGUF name of the model.
func (m Model) String() string {
	switch m {
	case SPM:
		return "llama"
	case BPE:
		return "gpt2"
	}
	return "unknown"
}

// TokenType is the GGUF token type (tokenizer.ggml.token_type values).
type TokenType int32

// GGUF token types.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// attr is llama.cpp's per-token attribute bit set.
type attr uint16

const (
	attrUndefined   attr = 0
	attrUnknown     attr = 1 << 0
	attrUnused      attr = 1 << 1
	attrNormal      attr = 1 << 2
	attrControl     attr = 1 << 3
	attrUserDefined attr = 1 << 4
	attrByte        attr = 1 << 5
	attrLStrip      attr = 1 << 7
	attrRStrip      attr = 1 << 8
)

func attrOf(t TokenType) attr {
	switch t {
	case TypeUnknown:
		return attrUnknown
	case TypeUnused:
		return attrUnused
	case TypeNormal:
		return attrNormal
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeByte:
		return attrByte
	}
	return attrUndefined
}

// Tokenizer encodes text to token ids and decodes ids to text.
type Tokenizer struct {
	model    Model
	pre      string   // pre-tokenizer name (BPE only), as in tokenizer.ggml.pre
	split    pretokFn // pre-tokenizer (BPE only)
	tiktoken bool     // BPE merges are ranks of concatenations (tiktoken files)

	tokens []string
	scores []float32
	attrs  []attr
	index  map[string]int // token text -> id (last duplicate wins)

	// BPE merges: each side string gets a small id, and ranks maps the pair.
	sideID map[string]int32
	ranks  map[uint64]int32

	bos, eos, eot, eom, unk, pad int
	eog                          []int

	addBOS, addEOS, addSpacePrefix bool
	ignoreMerges, cleanSpaces      bool

	spmPairs *pairSet // SPM: symbol pairs that occur inside a token

	special []int    // candidates for special-token partitioning, longest first
	byteTok [256]int // SPM byte-fallback token ids (-1 when missing)
}

// EncodeOptions control Encode.
type EncodeOptions struct {
	// AddSpecial adds BOS and/or EOS as the vocabulary's add_bos/add_eos
	// flags ask (llama_tokenize's add_special).
	AddSpecial bool
	// ParseSpecial matches the text of control tokens such as "<s>" or
	// "<|endoftext|>" as those tokens; otherwise it is plain text.
	// User-defined tokens are always matched, as in llama.cpp.
	ParseSpecial bool
}

// Model returns the tokenization algorithm.
func (t *Tokenizer) Model() Model { return t.model }

// Pre returns the name of the BPE pre-tokenizer ("" for SPM).
func (t *Tokenizer) Pre() string { return t.pre }

// VocabSize returns the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS returns the beginning-of-sequence token id, or -1.
func (t *Tokenizer) BOS() int { return t.bos }

// EOS returns the end-of-sequence token id, or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// EOT returns the end-of-turn token id, or -1.
func (t *Tokenizer) EOT() int { return t.eot }

// Unknown returns the unknown token id, or -1.
func (t *Tokenizer) Unknown() int { return t.unk }

// AddBOS reports whether Encode with AddSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with AddSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the other
// end-of-generation tokens llama.cpp recognizes).
func (t *Tokenizer) IsEOG(id int) bool {
	for _, e := range t.eog {
		if e == id {
			return true
		}
	}
	return false
}

// EOG returns the end-of-generation token ids in ascending order.
func (t *Tokenizer) EOG() []int { return append([]int(nil), t.eog...) }

// TokenText returns the raw vocabulary string of id ("" when out of range).
func (t *Tokenizer) TokenText(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// TokenType returns the type of id as llama.cpp sees it after loading
// (TypeUndefined when out of range).
func (t *Tokenizer) TokenType(id int) TokenType {
	if id < 0 || id >= len(t.attrs) {
		return TypeUndefined
	}
	a := t.attrs[id]
	switch {
	case a&attrUnknown != 0:
		return TypeUnknown
	case a&attrControl != 0:
		return TypeControl
	case a&attrUserDefined != 0:
		return TypeUserDefined
	case a&attrByte != 0:
		return TypeByte
	case a&attrUnused != 0:
		return TypeUnused
	case a&attrNormal != 0:
		return TypeNormal
	}
	return TypeUndefined
}

// Lookup returns the id of the token whose raw vocabulary string is text.
func (t *Tokenizer) Lookup(text string) (int, bool) {
	id, ok := t.index[text]
	return id, ok
}

// vocab is the raw material every constructor fills before finish.
type vocab struct {
	model  Model
	pre    string
	tokens []string
	scores []float32
	types  []TokenType
	merges []string // "left right" (BPE from GGUF / files)
	name   string   // general.name, for per-model token attributes

	bos, eos, eot, eom, unk, pad int // -2 = not given (use model default)
	addBOS, addEOS, addSpace     *bool
	tiktoken                     bool
}

func boolPtr(b bool) *bool { return &b }

const notGiven = -2

func newVocab(m Model) *vocab {
	return &vocab{model: m, bos: notGiven, eos: notGiven, eot: notGiven, eom: notGiven, unk: notGiven, pad: notGiven}
}

// build turns a vocab into a Tokenizer, applying llama.cpp's load rules.
func (v *vocab) build() (*Tokenizer, error) {
	n := len(v.tokens)
	if n == 0 {
		return nil, errorf(ErrMalformed, "empty vocabulary")
	}
	if v.scores != nil && len(v.scores) != n {
		return nil, errorf(ErrMalformed, "%d scores for %d tokens", len(v.scores), n)
	}
	if v.types != nil && len(v.types) != n {
		return nil, errorf(ErrMalformed, "%d token types for %d tokens", len(v.types), n)
	}
	t := &Tokenizer{
		model:  v.model,
		tokens: make([]string, n),
		scores: make([]float32, n),
		attrs:  make([]attr, n),
		index:  make(map[string]int, n),
		eot:    -1, eom: -1, pad: -1,
	}
	for i, w := range v.tokens {
		if w == "" {
			w = "[EMPTY_" + itoa(i) + "]"
		}
		t.tokens[i] = w
		t.index[w] = i
		if v.scores != nil {
			t.scores[i] = v.scores[i]
		}
		t.attrs[i] = attrNormal
		if v.types != nil {
			t.attrs[i] = attrOf(v.types[i])
		}
	}

	// Model defaults, as llama_vocab::impl::load.
	switch v.model {
	case SPM:
		t.bos, t.eos, t.unk = 1, 2, 0
		t.addSpacePrefix, t.addBOS, t.addEOS = true, true, false
	case BPE:
		t.bos, t.eos, t.unk = 11, 11, -1
		t.cleanSpaces = true
		t.pre = v.pre
		if err := t.setPre(v.pre); err != nil {
			return nil, err
		}
		t.tiktoken = v.tiktoken
		if !v.tiktoken {
			t.loadMerges(v.merges)
		}
	default:
		return nil, errorf(ErrUnsupported, "model %d", v.model)
	}
	if v.addSpace != nil {
		t.addSpacePrefix = *v.addSpace
	}
	set := func(dst *int, id int) {
		if id == notGiven {
			return
		}
		if id >= 0 && id < n {
			*dst = id
		} else if id == -1 {
			*dst = -1
		}
	}
	set(&t.bos, v.bos)
	set(&t.eos, v.eos)
	set(&t.eot, v.eot)
	set(&t.eom, v.eom)
	set(&t.unk, v.unk)
	set(&t.pad, v.pad)
	if t.bos >= n {
		t.bos = -1
	}
	if t.eos >= n {
		t.eos = -1
	}
	if t.unk >= n {
		t.unk = -1
	}
	if v.addBOS != nil {
		t.addBOS = *v.addBOS
	}
	if v.addEOS != nil {
		t.addEOS = *v.addEOS
	}
	t.detectSpecial()
	t.applyModelAttrs(v.name)

	// Special-token partitioning candidates, longest text first.
	for id, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, id)
		}
	}
	sort.SliceStable(t.special, func(i, j int) bool {
		return len(t.tokens[t.special[i]]) > len(t.tokens[t.special[j]])
	})

	for b := range t.byteTok {
		t.byteTok[b] = -1
		if id, ok := t.index[byteTokenText(byte(b))]; ok {
			t.byteTok[b] = id
		} else if id, ok := t.index[string([]byte{byte(b)})]; ok {
			t.byteTok[b] = id
		}
	}
	if t.model == SPM {
		t.buildSPMPairs()
	}
	return t, nil
}

// eotTexts are the texts llama.cpp uses to find the end-of-turn token.
var eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<|end_of_text|>", "<EOT>", "_<EOT>", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}

// eogTexts are the texts llama.cpp marks as end of generation.
var eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
	"<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>"}

// fimTexts are FIM tokens whose type llama.cpp forces to control; the last
// three groups (pad, repo, file separator) also end generation.
var fimTexts = [][]string{
	{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>"},
	{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>"},
	{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>"},
	{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"},
	{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
	{"<|file_sep|>"},
}

// detectSpecial applies llama.cpp's text-based detection of EOT/EOM/FIM/EOG
// tokens, which also forces their type to control.
func (t *Tokenizer) detectSpecial() {
	find := func(texts []string) int {
		for _, s := range texts {
			if id, ok := t.index[s]; ok {
				return id
			}
		}
		return -1
	}
	force := func(id int) {
		if id >= 0 && t.attrs[id]&attrControl == 0 {
			t.attrs[id] = attrControl
		}
	}
	if t.eot < 0 {
		t.eot = find(eotTexts)
	}
	force(t.eot)
	if t.eom < 0 {
		t.eom = find([]string{"<|eom_id|>"})
	}
	force(t.eom)
	eog := map[int]bool{}
	for i, g := range fimTexts {
		id := find(g)
		force(id)
		if i >= 3 && id >= 0 {
			eog[id] = true
		}
	}
	for _, s := range eogTexts {
		if id, ok := t.index[s]; ok {
			eog[id] = true
			force(id)
		}
	}
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.index[s]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int{t.eos, t.eot, t.eom} {
		if id >= 0 {
			eog[id] = true
		}
	}
	if ret, ok1 := t.index["<|return|>"]; ok1 && eog[ret] {
		if call, ok2 := t.index["<|call|>"]; ok2 && eog[call] {
			if end, ok3 := t.index["<|end|>"]; ok3 && eog[end] {
				delete(eog, end)
				t.attrs[end] = attrUserDefined
			}
		}
	}
	t.eog = t.eog[:0]
	for id := range eog {
		t.eog = append(t.eog, id)
	}
	sort.Ints(t.eog)
}

// applyModelAttrs applies llama.cpp's per-model token attribute fix-ups.
func (t *Tokenizer) applyModelAttrs(name string) {
	lower := toLowerASCII(name)
	if !containsAny(lower, "phi-3", "phi3") {
		return
	}
	for id, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.attrs[id] |= attrRStrip
		}
	}
	if id, ok := t.index["</s>"]; ok {
		t.attrs[id] |= attrRStrip
	}
	for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
		if id, ok := t.index[s]; ok {
			t.attrs[id] &^= attrRStrip
		}
	}
}
