package convert_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/quant"
)

// TestRequantizeMatchesLlamaQuantize re-quantizes the f32 stories260K to
// Q8_0 and compares every tensor that llama-quantize also made Q8_0 byte
// for byte with stories260K-Q8_0.gguf.
func TestRequantizeMatchesLlamaQuantize(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-f32.gguf")
	ref := testfiles.Path(t, "models", "gguf", "stories260K-Q8_0.gguf")
	out := filepath.Join(t.TempDir(), "q8.qsf")
	if _, err := convert.Convert(in, out, convert.Options{Type: quant.Q8_0, Requantize: true, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	q, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	g, err := format.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	same := 0
	for i := range g.Tensors {
		gt := &g.Tensors[i]
		qt, ok := q.Tensor(gt.Name)
		if !ok {
			t.Fatalf("tensor %s missing", gt.Name)
		}
		if gt.Type != quant.Q8_0 {
			continue
		}
		if qt.Type != quant.Q8_0 {
			t.Errorf("%s: %v, want Q8_0", gt.Name, qt.Type)
			continue
		}
		a, _ := q.TensorData(qt)
		b, _ := g.TensorData(gt)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: Q8_0 bytes differ from llama-quantize's", gt.Name)
		}
		same++
	}
	if same < 30 {
		t.Fatalf("only %d Q8_0 tensors compared", same)
	}
	t.Logf("%d Q8_0 tensors byte-identical to llama-quantize", same)
}

// TestRealFileFlips damages a converted real model at bytes spread over
// every section and requires an error at open or first read.
func TestRealFileFlips(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-Q4_0.gguf")
	dir := t.TempDir()
	out := filepath.Join(dir, "s.qsf")
	if _, err := convert.Convert(in, out, convert.Options{Compression: format.CompressLZ4}); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(out)
	f, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	q := f.QSF()
	var offs []uint64
	for _, s := range q.Sections() {
		for o := s.Offset; o < s.Offset+32+s.Length; o += 1 + (s.Length+32)/40 {
			offs = append(offs, o)
		}
	}
	for _, e := range q.Layers {
		for o := e.Offset; o < e.Offset+uint64(e.StoredSize); o += 1 + uint64(e.StoredSize)/40 {
			offs = append(offs, o)
		}
	}
	f.Close()
	bad := filepath.Join(dir, "bad.qsf")
	for _, off := range offs {
		b := bytes.Clone(orig)
		b[off] ^= 0x10
		os.WriteFile(bad, b, 0o644)
		err := readAll(bad)
		var qe *format.QSFError
		if off < 4 && errors.Is(err, format.ErrBadMagic) {
			continue
		}
		if err == nil || !errors.As(err, &qe) {
			t.Fatalf("flip at %d: %v", off, err)
		}
	}
	t.Logf("%d flips over %d sections and %d layers all reported", len(offs), len(q.Sections()), len(q.Layers))
}

func readAll(path string) error {
	f, err := format.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := range f.Tensors {
		if _, err := f.TensorData(&f.Tensors[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestConversionMemory bounds what a conversion allocates in total by
// twice the largest layer plus the embedding table (and 1 MiB for
// metadata): the converter streams, it never holds the model.
func TestConversionMemory(t *testing.T) {
	in := testfiles.Path(t, "models", "gguf", "stories260K-pad256-f32.gguf")
	out := filepath.Join(t.TempDir(), "m.qsf")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := convert.Convert(in, out, convert.Options{Compression: format.CompressLZ4})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	var largest uint64
	for _, e := range res.Layers {
		largest = max(largest, uint64(e.Size))
	}
	f, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	embd, _ := f.Tensor("token_embd.weight")
	f.Close()
	budget := 2*largest + embd.Size + 1<<20
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes converting %d; budget %d (largest layer %d, embedding %d)", alloc, res.InputBytes, budget, largest, embd.Size)
	if alloc > budget {
		t.Errorf("conversion allocated %d bytes, more than %d", alloc, budget)
	}
}
