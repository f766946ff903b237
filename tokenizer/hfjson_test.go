package tokenizer

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParseHFJSON checks the plain values ParseHFJSON returns for small
// tokenizer.json documents, and its errors.
func TestParseHFJSON(t *testing.T) {
	const byteLevel = `"pre_tokenizer":{"type":"ByteLevel"}`
	tests := []struct {
		name    string
		json    string
		want    *HFVocab
		wantErr error
	}{
		{
			name: "flat merges and special added token",
			json: `{` + byteLevel + `,"added_tokens":[{"id":3,"content":"<|endoftext|>","special":true}],
				"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`,
			want: &HFVocab{
				Tokens: []string{"a", "b", "ab", "<|endoftext|>"},
				Types:  []TokenType{TypeNormal, TypeNormal, TypeNormal, TypeControl},
				Merges: []string{"a b"}, Pre: "gpt-2", BOS: 3, EOS: 3,
			},
		},
		{
			name: "pair merges, gap in ids, ignore_merges",
			json: `{` + byteLevel + `,"model":{"type":"BPE","vocab":{"a":0,"b":2},"merges":[["a","b"]],"ignore_merges":true}}`,
			want: &HFVocab{
				Tokens: []string{"a", "[PAD1]", "b"},
				Types:  []TokenType{TypeNormal, TypeNormal, TypeNormal},
				Merges: []string{"a b"}, Pre: "gpt-2", BOS: -1, EOS: -1, IgnoreMerges: true,
			},
		},
		{
			// The later added token takes the text's id; the earlier id
			// (past the vocabulary) must not be indexed.
			name: "duplicate added token text",
			json: `{` + byteLevel + `,"added_tokens":[{"id":50,"content":"x","special":true},{"id":0,"content":"x"}],
				"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
			want: &HFVocab{
				Tokens: []string{"x"}, Types: []TokenType{TypeUserDefined},
				Merges: []string{}, Pre: "gpt-2", BOS: -1, EOS: -1,
			},
		},
		{
			// Two vocabulary texts with one id: the smallest text wins,
			// whatever the map's iteration order.
			name: "duplicate vocabulary id",
			json: `{` + byteLevel + `,"model":{"type":"BPE","vocab":{"b":0,"c":0,"a":0,"d":1},"merges":[]}}`,
			want: &HFVocab{
				Tokens: []string{"a", "d"}, Types: []TokenType{TypeNormal, TypeNormal},
				Merges: []string{}, Pre: "gpt-2", BOS: -1, EOS: -1,
			},
		},
		{
			// An added token takes its id from a vocabulary text.
			name: "added token over vocabulary id",
			json: `{` + byteLevel + `,"added_tokens":[{"id":1,"content":"<s>","special":true}],
				"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":[]}}`,
			want: &HFVocab{
				Tokens: []string{"a", "<s>"}, Types: []TokenType{TypeNormal, TypeControl},
				Merges: []string{}, Pre: "gpt-2", BOS: 1, EOS: -1,
			},
		},
		{name: "bad json", json: `{"model":`, wantErr: ErrMalformed},
		{name: "bad merge", json: `{` + byteLevel + `,"model":{"type":"BPE","vocab":{"a":0},"merges":[["a"]]}}`, wantErr: ErrMalformed},
		{name: "negative id", json: `{` + byteLevel + `,"model":{"type":"BPE","vocab":{"a":-1}}}`, wantErr: ErrMalformed},
		{name: "unigram", json: `{` + byteLevel + `,"model":{"type":"Unigram"}}`, wantErr: ErrUnsupported},
		{name: "sentencepiece bpe", json: `{"model":{"type":"BPE","vocab":{"a":0},"byte_fallback":true}}`, wantErr: ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHFJSON(strings.NewReader(tt.json))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			tok, err := got.Tokenizer()
			if err != nil {
				t.Fatal(err)
			}
			if tok.VocabSize() != len(tt.want.Tokens) || tok.Pre() != tt.want.Pre {
				t.Errorf("Tokenizer: %d tokens, pre %q", tok.VocabSize(), tok.Pre())
			}
		})
	}
}
