package stream_test

import (
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// TestQSFOwnTypesStreaming quantizes stories260K (rows padded to 256) to
// each of QSF's own types and to the ternary types, with LZ4 layers, and
// streams each file under the smallest budget the planner accepts: the
// logits are bit-identical to the same file's resident.
func TestQSFOwnTypesStreaming(t *testing.T) {
	src := filepath.Join(filepath.Dir(testdata(t)), "stories260K-pad256-f32.gguf")
	ids := []int{1, 403, 407, 261, 378, 131}
	for _, typ := range []quant.Type{quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R, quant.QSF_Q2A, quant.QSF_Q3A, quant.QSF_Q4A, quant.TQ2_0, quant.TQ1_0} {
		path := filepath.Join(t.TempDir(), typ.String()+".qsf")
		if _, err := convert.Convert(src, path, convert.Options{Type: typ, Requantize: true, Compression: format.CompressLZ4}); err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
		want := sessionLogits(t, path, qsf.Config{ContextLength: 64, KVType: "f32", Threads: 2}, ids)
		cfg := smallestBudget(t, path, qsf.Config{ContextLength: 64, KVType: "f32", Threads: 2})
		got := sessionLogits(t, path, cfg, ids)
		for i := range want {
			for j := range want[i] {
				if got[i][j] != want[i][j] {
					t.Fatalf("%v: token %d logit %d: streaming %v, resident %v", typ, i, j, got[i][j], want[i][j])
				}
			}
		}
	}
}
