package qsf

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/tokenizer"
)

// tokenTextVocabs are byte-level BPE (synthetic qwen2 and gpt2 models,
// GPT-2's vocabulary) and SentencePiece (llama, phi-3) vocabularies.
var tokenTextVocabs = []string{
	"models/synthetic/synth-qwen2-f32.gguf",
	"models/synthetic/synth-gpt2-f32.gguf",
	"models/vocab/ggml-vocab-gpt-2.gguf",
	"models/vocab/ggml-vocab-llama-spm.gguf",
	"models/vocab/ggml-vocab-phi-3.gguf",
}

func loadTokenTextVocabs(t testing.TB) []*tokenizer.Tokenizer {
	dir := testfiles.Dir(t)
	var toks []*tokenizer.Tokenizer
	for _, name := range tokenTextVocabs {
		f, err := format.OpenWith(filepath.Join(dir, name), format.OpenOptions{NoMmap: true})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := tokenizer.FromGGUF(&f.Metadata)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		toks = append(toks, tok)
	}
	return toks
}

// FuzzTokenText passes random token sequences through the writer Generate
// emits Token.Text with and checks that every Text is valid UTF-8, that
// nothing is lost when the pieces are valid UTF-8 together, and that an
// incomplete character at the end becomes U+FFFD.
func FuzzTokenText(f *testing.F) {
	toks := loadTokenTextVocabs(f)
	f.Add(uint8(0), "", []byte{0x01, 0x00, 0x02, 0x00})
	f.Add(uint8(3), "\n", []byte{0xe4, 0x00, 0xb8, 0x01})
	f.Add(uint8(1), "ab", []byte{0xff, 0xff, 0x10, 0x00, 0x80, 0x00})
	f.Fuzz(func(t *testing.T, which uint8, stop string, raw []byte) {
		tok := toks[int(which)%len(toks)]
		vocab := tok.VocabSize()
		var stops []string
		if stop != "" {
			stops = []string{stop}
		}
		w := newStopWriter(tok.NewStreamDecoder(), stops)
		var got, pieces strings.Builder
		// At most 128 tokens: longer inputs add nothing a shorter one
		// does not, and the fuzzer minimizes every input it keeps in
		// about the square of its length.
		for i := 0; i+1 < len(raw) && i < 2*128; i += 2 {
			id := int(binary.LittleEndian.Uint16(raw[i:])) % vocab
			pieces.WriteString(tok.Piece(id))
			text, stopped := w.push(id)
			if !utf8.ValidString(text) {
				t.Fatalf("Text %q of token %d is not valid UTF-8", text, id)
			}
			got.WriteString(text)
			if stopped {
				return
			}
		}
		rest := w.flush()
		if !utf8.ValidString(rest) {
			t.Fatalf("flushed Text %q is not valid UTF-8", rest)
		}
		got.WriteString(rest)
		if utf8.ValidString(pieces.String()) && got.String() != pieces.String() {
			t.Fatalf("text %q, want the pieces %q", got.String(), pieces.String())
		}
		if !strings.HasSuffix(got.String(), "\uFFFD") && !utf8.FullRuneInString(lastRuneStart(pieces.String())) {
			t.Fatalf("text %q ends without U+FFFD for the incomplete character at the end of %q", got.String(), pieces.String())
		}
	})
}

// lastRuneStart returns s from the start of its last character (which may
// be incomplete), or "a" when s is empty.
func lastRuneStart(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	if s == "" {
		return "a"
	}
	return s[len(s)-1:]
}

// TestTokenTextRandom is FuzzTokenText's check on a fixed number of random
// sequences per vocabulary, so that go test covers it without -fuzz; it
// also counts how many pieces are invalid UTF-8 alone, to show the test
// exercises the case.
func TestTokenTextRandom(t *testing.T) {
	toks := loadTokenTextVocabs(t)
	for i, tok := range toks {
		var rng uint64 = 1
		invalid := 0
		w := newStopWriter(tok.NewStreamDecoder(), nil)
		for range 20000 {
			rng = rng*6364136223846793005 + 1442695040888963407
			id := int(rng>>33) % tok.VocabSize()
			if !utf8.ValidString(tok.Piece(id)) {
				invalid++
			}
			if text, _ := w.push(id); !utf8.ValidString(text) {
				t.Fatalf("%s: Text %q of token %d is not valid UTF-8", tokenTextVocabs[i], text, id)
			}
		}
		if rest := w.flush(); !utf8.ValidString(rest) {
			t.Fatalf("%s: flushed %q", tokenTextVocabs[i], rest)
		}
		t.Logf("%s: %d of 20000 random pieces are not valid UTF-8 alone", tokenTextVocabs[i], invalid)
	}
}

// TestGenerateValidUTF8 generates 200 sampled tokens on the synthetic
// byte-level models (random weights pick many partial-character tokens)
// and checks every Token.Text.
func TestGenerateValidUTF8(t *testing.T) {
	for _, name := range []string{"synth-qwen2-Q8_0.gguf", "synth-gpt2-Q8_0.gguf"} {
		m, err := Load(testfiles.Path(t, "models", "synthetic", name), Config{Threads: 1, ContextLength: 256})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		res, err := s.Generate(context.Background(), "Hello", GenerateOptions{MaxTokens: 200, Sampling: SamplerOptions{Temperature: 1, Seed: 3}},
			func(tk Token) error {
				n++
				if !utf8.ValidString(tk.Text) {
					t.Errorf("%s: token %d: Text %q is not valid UTF-8", name, tk.ID, tk.Text)
				}
				return nil
			})
		s.Close()
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(res.Text) || n < 100 {
			t.Errorf("%s: %d callbacks, Result.Text valid %v", name, n, utf8.ValidString(res.Text))
		}
	}
}
