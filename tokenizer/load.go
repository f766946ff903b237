package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Load reads a tokenizer from a file, choosing the loader from the file name
// and content:
//   - *.json with a "model" object: Hugging Face tokenizer.json
//   - other *.json (e.g. encoder.json): OpenAI-style encoder with the merges
//     in vocab.bpe (or merges.txt) in the same directory
//   - *.tiktoken: tiktoken rank file
//   - anything else starting like a llama2.c tokenizer.bin
//
// GGUF files are read with package format and FromGGUF.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	lower := strings.ToLower(filepath.Base(path))
	switch {
	case strings.HasSuffix(lower, ".json"):
		if isHFTokenizerJSON(data) {
			return LoadHFJSON(bytes.NewReader(data))
		}
		mergesPath := ""
		dir := filepath.Dir(path)
		stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		cands := []string{
			filepath.Join(dir, strings.Replace(stem, "encoder", "vocab", 1)+".bpe"),
			filepath.Join(dir, "vocab.bpe"),
			filepath.Join(dir, "merges.txt"),
		}
		for _, c := range cands {
			if _, err := os.Stat(c); err == nil {
				mergesPath = c
				break
			}
		}
		if mergesPath == "" {
			return nil, fmt.Errorf("%w: no vocab.bpe beside %s", ErrMalformed, path)
		}
		mf, err := os.Open(mergesPath)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		defer mf.Close()
		return LoadEncoderJSON(bytes.NewReader(data), mf, "")
	case strings.HasSuffix(lower, ".tiktoken"):
		return LoadTiktoken(bytes.NewReader(data), "")
	case strings.HasSuffix(lower, ".gguf"):
		return nil, fmt.Errorf("%w: read GGUF files with package format and FromGGUF", ErrUnsupported)
	}
	return LoadLlama2C(bytes.NewReader(data))
}

func isHFTokenizerJSON(data []byte) bool {
	var probe struct {
		Model json.RawMessage `json:"model"`
	}
	return json.Unmarshal(data, &probe) == nil && len(probe.Model) > 0 && probe.Model[0] == '{'
}

// readMerges reads "left right" lines, skipping a "#version" header and
// blank lines.
func readMerges(r io.Reader) ([]string, error) {
	var merges []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	first := true
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if first && strings.HasPrefix(line, "#version") {
			first = false
			continue
		}
		first = false
		if line == "" {
			continue
		}
		merges = append(merges, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: merges: %v", ErrMalformed, err)
	}
	return merges, nil
}

// tokensFromMap orders a token -> id map into a dense vocabulary; ids no
// text has (or only the empty text) are filled with "[PADn]".
func tokensFromMap(m map[string]int, extra int) ([]string, error) {
	n := 0
	for _, id := range m {
		if id < 0 || id > len(m)+extra+1<<16 {
			return nil, fmt.Errorf("%w: token id %d out of range", ErrMalformed, id)
		}
		n = max(n, id+1)
	}
	tokens := make([]string, n)
	set := make([]bool, n)
	for s, id := range m {
		// Several texts with one id: the smallest text wins, so the
		// table does not depend on map iteration order.
		if !set[id] || s < tokens[id] {
			tokens[id], set[id] = s, true
		}
	}
	for i := range tokens {
		if tokens[i] == "" {
			tokens[i] = "[PAD" + strconv.Itoa(i) + "]"
		}
	}
	return tokens, nil
}

// LoadEncoderJSON reads an OpenAI-style encoder.json (token -> id, GPT-2
// byte-level strings) and vocab.bpe merges. pre names the pre-tokenizer as
// tokenizer.ggml.pre does; "" picks "llama-bpe" for vocabularies of 100k
// tokens or more and "gpt-2" otherwise. Llama 3 vocabularies (128000
// tokens) get Llama 3's special tokens appended.
func LoadEncoderJSON(encoder, merges io.Reader, pre string) (*Tokenizer, error) {
	var m map[string]int
	if err := json.NewDecoder(encoder).Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: encoder.json: %v", ErrMalformed, err)
	}
	tokens, err := tokensFromMap(m, 0)
	if err != nil {
		return nil, err
	}
	ml, err := readMerges(merges)
	if err != nil {
		return nil, err
	}
	v := newVocab(BPE)
	v.tokens, v.merges = tokens, ml
	if pre == "" {
		pre = "gpt-2"
		if len(tokens) >= 100000 {
			pre = "llama-bpe"
		}
	}
	v.pre = pre
	v.types = make([]TokenType, len(tokens))
	for i := range v.types {
		v.types[i] = TypeNormal
	}
	if len(tokens) == 128000 {
		appendLlama3Specials(v)
	}
	if id, ok := m["<|endoftext|>"]; ok {
		v.types[id] = TypeControl
		v.bos, v.eos = id, id
	}
	return v.build()
}

// appendLlama3Specials adds Llama 3's 256 special tokens.
func appendLlama3Specials(v *vocab) {
	named := map[int]string{0: "<|begin_of_text|>", 1: "<|end_of_text|>", 4: "<|finetune_right_pad_id|>",
		6: "<|start_header_id|>", 7: "<|end_header_id|>", 8: "<|eom_id|>", 9: "<|eot_id|>", 10: "<|python_tag|>"}
	reserved := 0
	base := len(v.tokens)
	for i := 0; i < 256; i++ {
		s, ok := named[i]
		if !ok {
			s = "<|reserved_special_token_" + strconv.Itoa(reserved) + "|>"
			reserved++
		}
		v.tokens = append(v.tokens, s)
		v.types = append(v.types, TypeControl)
	}
	v.bos, v.eos = base, base+9
}

// LoadTiktoken reads a tiktoken rank file ("base64(token) rank" lines).
// Merges follow tiktoken: the adjacent pair whose concatenation has the
// lowest rank merges first. pre names the pre-tokenizer; "" picks "qwen2"
// for Qwen's 151643-token file and "llama-bpe" (the cl100k pattern)
// otherwise. Known vocabularies (Qwen, cl100k) get their special tokens.
func LoadTiktoken(r io.Reader, pre string) (*Tokenizer, error) {
	ranks := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: tiktoken line %d", ErrMalformed, line)
		}
		raw, err := base64.StdEncoding.DecodeString(f[0])
		if err != nil {
			return nil, fmt.Errorf("%w: tiktoken line %d: %v", ErrMalformed, line, err)
		}
		rank, err := strconv.Atoi(f[1])
		if err != nil || rank < 0 {
			return nil, fmt.Errorf("%w: tiktoken line %d: bad rank", ErrMalformed, line)
		}
		ranks[string(encodeByteLevel(nil, string(raw)))] = rank
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: tiktoken: %v", ErrMalformed, err)
	}
	tokens, err := tokensFromMap(ranks, 0)
	if err != nil {
		return nil, err
	}
	v := newVocab(BPE)
	v.tokens = tokens
	v.tiktoken = true
	v.types = make([]TokenType, len(tokens))
	for i := range v.types {
		v.types[i] = TypeNormal
	}
	var specials []string
	switch len(tokens) {
	case 151643: // Qwen
		specials = []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"}
		if pre == "" {
			pre = "qwen2"
		}
	case 100256: // cl100k_base
		specials = []string{"<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"}
	}
	if pre == "" {
		pre = "llama-bpe"
	}
	v.pre = pre
	base := len(v.tokens)
	for _, s := range specials {
		v.tokens = append(v.tokens, s)
		v.types = append(v.types, TypeControl)
	}
	if len(specials) > 0 {
		v.bos, v.eos = base, base
		if len(tokens) == 151643 {
			v.eos = base + 2
			v.eot = base + 2
		}
	}
	t, err := v.build()
	if err != nil {
		return nil, err
	}
	t.addBOS = false
	t.ignoreMerges = true
	return t, nil
}

// LoadLlama2C reads a llama2.c tokenizer.bin: int32 max_token_length, then
// per token a float32 score, an int32 length and the bytes. llama2.c stores
// "▁" as a space and BOS/EOS as "\n<s>\n" and "\n</s>\n"; they are mapped
// back to SentencePiece form and the vocabulary uses the SPM model.
func LoadLlama2C(r io.Reader) (*Tokenizer, error) {
	br := bufio.NewReader(r)
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.bin header: %v", ErrMalformed, err)
	}
	maxLen := binary.LittleEndian.Uint32(hdr[:])
	if maxLen == 0 || maxLen > 1<<16 {
		return nil, fmt.Errorf("%w: tokenizer.bin max_token_length %d", ErrMalformed, maxLen)
	}
	v := newVocab(SPM)
	var rec [8]byte
	for {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("%w: tokenizer.bin token %d: %v", ErrMalformed, len(v.tokens), err)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(rec[:4]))
		n := binary.LittleEndian.Uint32(rec[4:])
		if n > maxLen {
			return nil, fmt.Errorf("%w: tokenizer.bin token %d length %d > %d", ErrMalformed, len(v.tokens), n, maxLen)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("%w: tokenizer.bin token %d: %v", ErrMalformed, len(v.tokens), err)
		}
		v.tokens = append(v.tokens, string(b))
		v.scores = append(v.scores, score)
	}
	if len(v.tokens) < 3 {
		return nil, fmt.Errorf("%w: tokenizer.bin has %d tokens", ErrMalformed, len(v.tokens))
	}
	v.types = make([]TokenType, len(v.tokens))
	for i, s := range v.tokens {
		switch {
		case i == 0:
			v.types[i] = TypeUnknown
		case i == 1 || i == 2:
			v.types[i] = TypeControl
			v.tokens[i] = strings.TrimSpace(s)
		case len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>':
			v.types[i] = TypeByte
		default:
			v.types[i] = TypeNormal
			v.tokens[i] = strings.ReplaceAll(s, " ", "▁")
		}
	}
	return v.build()
}
