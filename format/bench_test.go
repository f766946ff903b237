package format

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadVocab parses the header of the largest vocab-only GGUF
// (deepseek-llm, 100k tokens and merges).
func BenchmarkReadVocab(b *testing.B) {
	file, err := os.ReadFile(filepath.Join(testdataDir(b), "models", "vocab", "ggml-vocab-deepseek-llm.gguf"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if _, err := ReadGGUF(bytes.NewReader(file), int64(len(file))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteVocab writes the same metadata back out.
func BenchmarkWriteVocab(b *testing.B) {
	file, err := os.ReadFile(filepath.Join(testdataDir(b), "models", "vocab", "ggml-vocab-deepseek-llm.gguf"))
	if err != nil {
		b.Skip(err)
	}
	g, err := ReadGGUF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if err := WriteGGUF(io.Discard, &g.Metadata, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
