package tokenizer

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

var (
	familiesOnce sync.Once
	families     map[string]*Tokenizer
)

// loadFamilies loads one tokenizer per family from the shared test data.
func loadFamilies(t testing.TB) map[string]*Tokenizer {
	dir := testfiles.Dir(t)
	familiesOnce.Do(func() {
		families = map[string]*Tokenizer{}
		for _, name := range []string{"llama-spm", "gpt-2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "mpt", "refact"} {
			if tok, err := ggufTokenizer(filepath.Join(dir, "models/vocab/ggml-vocab-"+name+".gguf")); err == nil {
				families[name] = tok
			}
		}
		if tok, err := Load(filepath.Join(dir, "models/tokenizers/llama3.2-encoder.json")); err == nil {
			families["llama-bpe"] = tok
		}
		if tok, err := Load(filepath.Join(dir, "models/tokenizers/qwen.tiktoken")); err == nil {
			families["qwen2"] = tok
		}
	})
	if len(families) == 0 {
		t.Skip("no tokenizers loaded")
	}
	return families
}

// FuzzEncodeDecode checks that each family round-trips valid UTF-8
// (pieces concatenate back to the input) and that no input panics.
func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"", " ", "Hello world", "  leading", "trailing  ", "\n\n\t x", "I've 'RE 123456 ½ ⅷ",
		"世界 🦙🙂", "a\xffb", "\xe4\xb8", "<s> </s> <|endoftext|>", "ก็", "Ἐν ἀρχῇ", "$+<=>^`|~ ...!!"} {
		f.Add(s, uint8(0))
	}
	fams := loadFamilies(f)
	names := slices.Sorted(maps.Keys(fams))
	for i := range names {
		f.Add("Hello world's 123 <s> ½ 世界 🦙", uint8(i))
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		// One family per input keeps an execution cheap; the seeds start
		// one input in each family.
		for _, name := range names[int(which)%len(names):][:1] {
			tok := fams[name]
			for _, parse := range []bool{false, true} {
				ids := tok.Encode(s, EncodeOptions{ParseSpecial: parse, AddSpecial: parse})
				for _, id := range ids {
					if id < 0 || id >= tok.VocabSize() {
						t.Fatalf("%s: id %d out of range", name, id)
					}
				}
				_ = tok.Decode(ids)
			}
			if !utf8.ValidString(s) {
				continue
			}
			if !bytesRepresentable(tok, s) {
				continue // bytes without a token are dropped, as llama.cpp does
			}
			ids := tok.Encode(s, EncodeOptions{})
			var got string
			if tok.Model() == SPM {
				if strings.Contains(s, "▁") {
					continue // SentencePiece cannot tell "▁" from an escaped space
				}
				got = tok.Detokenize(ids, false, false)
			} else {
				var b bytes.Buffer
				for _, id := range ids {
					b.WriteString(tok.Piece(id))
				}
				got = b.String()
			}
			if got != s {
				t.Errorf("%s: round trip of %q gave %q (ids %v)", name, s, got, ids)
			}
		}
	})
}

// FuzzLoaders feeds arbitrary bytes to the file loaders: they must return
// an error or a usable tokenizer, never panic.
func FuzzLoaders(f *testing.F) {
	f.Add([]byte("IQ== 0\nIg== 1\n"))
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'a'})
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"a":0,"b":1}`))
	f.Add([]byte(`{"added_tokens":[{"id":50,"content":"x","special":true},{"id":0,"content":"x"}],"model":{"type":"BPE","vocab":{"a":0}},"pre_tokenizer":{"type":"ByteLevel"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		use := func(tok *Tokenizer, err error) {
			if err != nil {
				return
			}
			ids := tok.Encode("ab a\xff", EncodeOptions{AddSpecial: true, ParseSpecial: true})
			tok.Decode(ids)
		}
		use(LoadTiktoken(bytes.NewReader(data), ""))
		use(LoadLlama2C(bytes.NewReader(data)))
		use(LoadHFJSON(bytes.NewReader(data)))
		use(LoadEncoderJSON(bytes.NewReader(data), strings.NewReader("a b\n"), ""))
	})
}

// bytesRepresentable reports whether a byte-level BPE vocabulary has a
// token for every byte of s (SentencePiece vocabularies always pass: they
// fall back to byte tokens or <unk>). Some vocabularies (falcon) lack
// tokens for a few bytes, which both llama.cpp and this package drop.
func bytesRepresentable(tok *Tokenizer, s string) bool {
	if tok.Model() != BPE {
		return true
	}
	for i := 0; i < len(s); i++ {
		if _, ok := tok.Lookup(byteToUTF8[s[i]]); !ok {
			return false
		}
	}
	return true
}
