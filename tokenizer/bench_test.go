package tokenizer

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// BenchmarkEncode encodes War and Peace (3.2 MB) with each family; the MB/s
// column is the encode throughput.
func BenchmarkEncode(b *testing.B) {
	fams := loadFamilies(b)
	text, err := os.ReadFile(filepath.Join(testdata(b), "models/corpus/war-and-peace.txt"))
	if err != nil {
		b.Skip(err)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		tok := fams[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tok.Encode(string(text), EncodeOptions{})
			}
		})
	}
}
