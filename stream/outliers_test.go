package stream_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/quant"
)

// outlierFile quantizes stories260K (rows padded to 256) to typ with k
// outliers per row of every layer matrix (none when k is 0).
func outlierFile(t *testing.T, typ quant.Type, k int, comp format.Compression) string {
	t.Helper()
	src := filepath.Join(filepath.Dir(testdata(t)), "stories260K-pad256-f32.gguf")
	path := filepath.Join(t.TempDir(), "m.qsf")
	opts := convert.Options{Type: typ, Requantize: true, Compression: comp}
	if k > 0 {
		opts.Outliers = func(string, int, int) int { return k }
	}
	if _, err := convert.Convert(src, path, opts); err != nil {
		t.Fatal(err)
	}
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for _, ti := range f.Tensors {
		if strings.HasSuffix(ti.Name, quant.OutlierSuffix) {
			n++
		}
	}
	if k > 0 && n == 0 || k == 0 && n != 0 {
		t.Fatalf("%d outlier tables with %d outliers per row", n, k)
	}
	return path
}

// TestOutlierTableStreaming: a QSF_Q2R file with outlier tables gives the
// same logits bit for bit on every kernel tier, resident and streamed under
// the smallest budget (LZ4 and uncompressed layers), decoding token by
// token and in one batched prefill.
func TestOutlierTableStreaming(t *testing.T) {
	ids := []int{1, 403, 407, 261, 378, 131}
	for _, comp := range []format.Compression{format.CompressNone, format.CompressLZ4} {
		path := outlierFile(t, quant.QSF_Q2R, 2, comp)
		base := qsf.Config{ContextLength: 64, KVType: "f32", Threads: 2, Kernel: "generic"}
		want := sessionLogits(t, path, base, ids)
		for _, tier := range kernels.Tiers() {
			cfg := base
			cfg.Kernel = tier
			for _, c := range []qsf.Config{cfg, smallestBudget(t, path, cfg)} {
				got := sessionLogits(t, path, c, ids)
				sameLogits(t, comp.String()+"/"+tier, got, want)
				last := prefillLogits(t, path, c, ids)
				sameLogits(t, comp.String()+"/"+tier+" prefill", [][]float32{last}, want[len(want)-1:])
			}
		}
	}
}

// TestOutlierTableApplied: an F16 file whose layer matrices keep their 4
// largest entries per row in outlier tables computes what the plain F16
// file does, up to the rounding of the activations to fp16 that the
// tables' products skip, while the same
// matrices without their tables (the entries zeroed) do not.
func TestOutlierTableApplied(t *testing.T) {
	ids := []int{1, 403, 407, 261}
	cfg := qsf.Config{ContextLength: 64, KVType: "f32", Threads: 2}
	plain := sessionLogits(t, outlierFile(t, quant.F16, 0, format.CompressNone), cfg, ids)
	with := sessionLogits(t, outlierFile(t, quant.F16, 4, format.CompressNone), cfg, ids)
	dWith := maxDiff(plain, with)
	if dWith > 0.05 || dWith == 0 {
		t.Fatalf("F16 with outlier tables: logits differ from plain F16 by up to %g, want (0, 0.05]", dWith)
	}
	// The same matrices (their 4 largest entries per row split off)
	// without the tables: the model then sees the entries zeroed.
	src := filepath.Join(filepath.Dir(testdata(t)), "stories260K-pad256-f32.gguf")
	zeroed := filepath.Join(t.TempDir(), "zeroed.qsf")
	split := func(name string, typ quant.Type, rows, cols int, w []float32) ([]byte, error) {
		if !strings.HasPrefix(name, "blk.") {
			return nil, nil
		}
		table := make([]byte, 4*quant.OutlierPairBytes)
		rb, _ := quant.RowBytes(typ, cols)
		out := make([]byte, rows*rb)
		for r := range rows {
			if err := quant.SplitOutliers(table, w[r*cols:(r+1)*cols], nil, 4); err != nil {
				return nil, err
			}
			if err := quant.QuantizeRow(typ, out[r*rb:(r+1)*rb], w[r*cols:(r+1)*cols]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if _, err := convert.Convert(src, zeroed, convert.Options{Type: quant.F16, Requantize: true, QuantizeMatrix: split}); err != nil {
		t.Fatal(err)
	}
	without := sessionLogits(t, zeroed, cfg, ids)
	dWithout := maxDiff(plain, without)
	t.Logf("max |logit - F16's|: %g with the outlier tables, %g with their entries zeroed", dWith, dWithout)
	if dWithout < 20*dWith {
		t.Fatalf("without the outlier tables the logits differ from plain F16 by %g, with them by %g: the tables did not make up for the zeroed entries", dWithout, dWith)
	}
}

func sameLogits(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("%s: token %d logit %d: %v, want %v", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

func maxDiff(a, b [][]float32) float64 {
	d := 0.0
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(float64(a[i][j]-b[i][j])))
		}
	}
	return d
}

// prefillLogits returns the logits of the last of ids fed as one prompt.
func prefillLogits(t *testing.T, path string, cfg qsf.Config, ids []int) []float32 {
	t.Helper()
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Forward(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
