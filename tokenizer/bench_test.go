package tokenizer

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
)

// BenchmarkEncode encodes War and Peace (3.2 MB) with each family; the MB/s
// column is the encode throughput (wall clock), cpu-MB/s the throughput per
// CPU second.
func BenchmarkEncode(b *testing.B) {
	fams := loadFamilies(b)
	text, err := os.ReadFile(filepath.Join(testfiles.Dir(b), "models/corpus/war-and-peace.txt"))
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
			c0, n := cpuTime(), 0
			for b.Loop() {
				tok.Encode(string(text), EncodeOptions{})
				n++
			}
			// On a shared machine wall-clock MB/s understates the speed;
			// cpu-MB/s divides by the CPU time the process used (GC included).
			if d := cpuTime() - c0; d > 0 {
				b.ReportMetric(float64(n*len(text))/1e6/d.Seconds(), "cpu-MB/s")
			}
		})
	}
}
