package qsf_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/convert"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/quant"
)

// writeI2S rewrites the GGUF at src with every ternary projection (TQ2_0,
// block scale 1: the synthetic bitnet model's) stored as I2_S in layout l,
// its one-element .scale folded into the layout's scales, and writes the
// result to dst.
func writeI2S(t *testing.T, src, dst string, l quant.I2SLayout) {
	t.Helper()
	writeI2SScales(t, src, dst, l, nil)
}

// writeI2SScales is writeI2S with the scale of 32-element block j of a
// tensor whose .scale is s set to blockScale(s, j) (nil: s) in the layouts
// with block scales.
func writeI2SScales(t *testing.T, src, dst string, l quant.I2SLayout, blockScale func(s float32, j int) float32) {
	t.Helper()
	f, err := format.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := func(ti *format.TensorInfo) []byte {
		b, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	scaleOf := func(weight string) float32 {
		ti, ok := f.Tensor(strings.TrimSuffix(weight, ".weight") + ".scale")
		if !ok {
			t.Fatalf("%s: no .scale", weight)
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(data(ti)))
	}
	var tensors []format.WriterTensor
	var payload [][]byte
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		switch {
		case strings.HasSuffix(ti.Name, ".scale"):
			continue // folded into the I2_S scales
		case ti.Type != quant.TQ2_0 || ti.Name == "token_embd.weight":
			tensors = append(tensors, format.WriterTensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type})
			payload = append(payload, data(ti))
			continue
		}
		n := ti.Rows() * ti.Cols()
		vals := make([]float32, n)
		if err := quant.DequantizeRow(quant.TQ2_0, vals, data(ti)); err != nil {
			t.Fatal(err)
		}
		tern := make([]int8, n)
		for j, v := range vals {
			tern[j] = int8(v)
		}
		s := scaleOf(ti.Name)
		blocks := make([]float32, n/32)
		for j := range blocks {
			blocks[j] = s
			if blockScale != nil {
				blocks[j] = blockScale(s, j)
			}
		}
		var enc []byte
		switch l {
		case quant.I2STensorScale:
			enc, err = quant.EncodeI2S(l, tern, s, nil)
		case quant.I2SBlockScale:
			enc, err = quant.EncodeI2S(l, tern, 0, blocks)
		case quant.I2SSiblingScale:
			enc, err = quant.EncodeI2S(l, tern, 0, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, format.WriterTensor{Name: ti.Name, Shape: ti.Shape, Type: quant.I2_S, Size: uint64(len(enc))})
		payload = append(payload, enc)
		if l == quant.I2SSiblingScale {
			sb := make([]byte, 4*len(blocks))
			for j, v := range blocks {
				binary.LittleEndian.PutUint32(sb[4*j:], math.Float32bits(v))
			}
			tensors = append(tensors, format.WriterTensor{Name: quant.I2SScalesName(ti.Name), Shape: []uint64{uint64(len(blocks))}, Type: quant.F32})
			payload = append(payload, sb)
		}
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := format.WriteGGUF(out, &f.Metadata, tensors, func(i int, w io.Writer) error {
		_, err := w.Write(payload[i])
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// promptLogits runs the reference prompt ids through the model at path
// one token at a time and returns the logits after each.
func promptLogits(t *testing.T, path string, ids []int) [][]float32 {
	t.Helper()
	m, err := qsf.Load(path, qsf.Config{Threads: 1, ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rows [][]float32
	for _, id := range ids {
		l, err := s.Forward(context.Background(), []int{id})
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, append([]float32(nil), l...))
	}
	return rows
}

// TestI2SLayouts builds a file of each I2_S layout from the synthetic
// bitnet model's ternary weights and checks that its logits agree with
// the TQ2_0 file's at every prompt position (cosine ≥ 0.999, same top-1).
func TestI2SLayouts(t *testing.T) {
	src := testfiles.Path(t, "models", "ternary", "synth-bitnet-TQ2_0.gguf")
	ids := []int{1, 403, 407, 261, 378} // "Once upon a time"
	want := promptLogits(t, src, ids)
	for _, l := range []quant.I2SLayout{quant.I2STensorScale, quant.I2SBlockScale, quant.I2SSiblingScale} {
		t.Run(strconv.Itoa(int(l)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "i2s.gguf")
			writeI2S(t, src, path, l)
			f, err := format.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			ti, _ := f.Tensor("blk.0.ffn_down.weight")
			got, err := quant.DetectI2S(ti.Name, ti.Rows()*ti.Cols(), int(ti.Size))
			f.Close()
			if err != nil || got != l {
				t.Fatalf("detected %v (%v), want %v", got, err, l)
			}
			logits := promptLogits(t, path, ids)
			for pos := range ids {
				c, d := compare(logits[pos], want[pos])
				if c < 0.999 || argmax(logits[pos]) != argmax(want[pos]) {
					t.Errorf("%v position %d: cosine %.6f, max diff %.3g, top-1 %d vs %d", l, pos, c, d, argmax(logits[pos]), argmax(want[pos]))
				} else {
					t.Logf("%v position %d: cosine %.7f, max diff %.3g", l, pos, c, d)
				}
			}
		})
	}
}

// TestI2SBadSize checks that an I2_S tensor whose size matches no layout
// is refused with an error naming it, the sizes each layout expects and
// the size found.
func TestI2SBadSize(t *testing.T) {
	const rows, cols = 64, 256
	n := rows * cols
	size := n/4 + 200 // past the padding of the codes-only layouts, short of the fp16 one
	path := filepath.Join(t.TempDir(), "bad.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	src := testfiles.Path(t, "models", "ternary", "synth-bitnet-TQ2_0.gguf")
	f, err := format.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tensors []format.WriterTensor
	var payload [][]byte
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		b, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		wt := format.WriterTensor{Name: ti.Name, Shape: ti.Shape, Type: ti.Type}
		if ti.Name == "blk.0.attn_k.weight" { // 256×64
			b = make([]byte, size)
			wt.Type, wt.Size = quant.I2_S, uint64(size)
		}
		tensors = append(tensors, wt)
		payload = append(payload, b)
	}
	if err := format.WriteGGUF(out, &f.Metadata, tensors, func(i int, w io.Writer) error {
		_, err := w.Write(payload[i])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	out.Close()
	_, err = qsf.Load(path, qsf.Config{Threads: 1})
	if !errors.Is(err, quant.ErrI2SLayout) {
		t.Fatalf("Load: %v, want ErrI2SLayout", err)
	}
	msg := err.Error()
	for _, s := range []string{"blk.0.attn_k.weight", strconv.Itoa(n/4 + 32), strconv.Itoa(n / 32 * 10), strconv.Itoa(n / 4)} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q does not mention %s", msg, s)
		}
	}
	t.Log(msg)
}

// TestI2SConvertKeepsType converts each I2_S layout file to QSF and
// checks that the QSF file keeps I2_S, with its layout, and gives the same
// logits bit for bit.
func TestI2SConvertKeepsType(t *testing.T) {
	src := testfiles.Path(t, "models", "ternary", "synth-bitnet-TQ2_0.gguf")
	ids := []int{1, 403, 407, 261, 378}
	for _, l := range []quant.I2SLayout{quant.I2STensorScale, quant.I2SBlockScale, quant.I2SSiblingScale} {
		dir := t.TempDir()
		gguf, qsfPath := filepath.Join(dir, "i2s.gguf"), filepath.Join(dir, "i2s.qsf")
		writeI2S(t, src, gguf, l)
		if _, err := convert.Convert(gguf, qsfPath, convert.Options{}); err != nil {
			t.Fatalf("%v: %v", l, err)
		}
		f, err := format.Open(qsfPath)
		if err != nil {
			t.Fatal(err)
		}
		ti, _ := f.Tensor("blk.1.attn_q.weight")
		typ, size := ti.Type, ti.Size
		got, err := quant.DetectI2S(ti.Name, ti.Rows()*ti.Cols(), int(size))
		f.Close()
		if typ != quant.I2_S || err != nil || got != l {
			t.Fatalf("%v: QSF tensor is %v of %d bytes, layout %v (%v)", l, typ, size, got, err)
		}
		a, b := promptLogits(t, gguf, ids), promptLogits(t, qsfPath, ids)
		for pos := range a {
			if _, d := compare(a[pos], b[pos]); d != 0 {
				t.Errorf("%v position %d: QSF logits differ from GGUF by %.3g", l, pos, d)
			}
		}
	}
}

// TestI2SStreamed streams files of each I2_S layout under a RAM budget
// that forces streaming (the matrices converted as they are read) and
// requires the resident model's logits bit for bit: with one scale per
// tensor (TQ2_0 and a tensor scale), one per 256 elements (TQ2_0 with
// those scales) and one per 32 (Q8_0).
func TestI2SStreamed(t *testing.T) {
	src := testfiles.Path(t, "models", "ternary", "synth-bitnet-TQ2_0.gguf")
	ids := []int{1, 403, 407, 261, 378}
	per256 := func(s float32, j int) float32 { return quant.FP16ToFP32(quant.FP32ToFP16(s * float32(2+j/8%3) / 2)) }
	per32 := func(s float32, j int) float32 { return s * float32(3+j%5) / 4 }
	for _, c := range []struct {
		name   string
		l      quant.I2SLayout
		scales func(float32, int) float32
		typ    quant.Type
	}{
		{"tensor", quant.I2STensorScale, nil, quant.TQ2_0},
		{"block", quant.I2SBlockScale, nil, quant.TQ2_0},
		{"block-256", quant.I2SBlockScale, per256, quant.TQ2_0},
		{"block-32", quant.I2SBlockScale, per32, quant.Q8_0},
		{"sibling", quant.I2SSiblingScale, nil, quant.TQ2_0},
		{"sibling-256", quant.I2SSiblingScale, per256, quant.TQ2_0},
		{"sibling-32", quant.I2SSiblingScale, per32, quant.Q8_0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "i2s.gguf")
			writeI2SScales(t, src, path, c.l, c.scales)
			if typ := i2sTypeOf(t, path, "blk.0.attn_q.weight"); typ != c.typ {
				t.Fatalf("the I2_S matrices convert to %v, want %v", typ, c.typ)
			}
			cfg := qsf.Config{Threads: 2, ContextLength: 64, KVType: "f32"}
			resident, err := qsf.PlanFile(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			run := func(cfg qsf.Config) [][]float32 {
				m, err := qsf.Load(path, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				if cfg.RAMBudget > 0 && !m.Streaming() {
					t.Fatalf("budget %d did not force streaming", cfg.RAMBudget)
				}
				s, err := m.NewSession()
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				var out [][]float32
				for _, id := range ids {
					l, err := s.Forward(context.Background(), []int{id})
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, append([]float32(nil), l...))
				}
				return out
			}
			want := run(cfg)
			budget := cfg
			budget.RAMBudget = resident.PeakBytes - 1
			got := run(budget)
			for i := range want {
				for j := range want[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("token %d logit %d: streamed %v, resident %v", i, j, got[i][j], want[i][j])
					}
				}
			}
			// The same from an uncompressed QSF file (its layers' CRCs
			// checked on the I2_S bytes as read).
			qsfPath := filepath.Join(t.TempDir(), "i2s.qsf")
			if _, err := convert.Convert(path, qsfPath, convert.Options{}); err != nil {
				t.Fatal(err)
			}
			path = qsfPath
			if resident, err = qsf.PlanFile(path, cfg); err != nil {
				t.Fatal(err)
			}
			budget.RAMBudget = resident.PeakBytes - 1
			got = run(budget)
			for i := range want {
				for j := range want[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("QSF: token %d logit %d: streamed %v, resident GGUF %v", i, j, got[i][j], want[i][j])
					}
				}
			}
		})
	}
}

// i2sTypeOf returns the type the I2_S tensor name of the file at path
// converts to.
func i2sTypeOf(t *testing.T, path, name string) quant.Type {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("no %s", name)
	}
	data, err := f.TensorData(ti)
	if err != nil {
		t.Fatal(err)
	}
	l, err := quant.DetectI2S(name, ti.Rows()*ti.Cols(), len(data))
	if err != nil {
		t.Fatal(err)
	}
	var scales []float32
	if si, ok := f.Tensor(quant.I2SScalesName(name)); ok {
		sd, err := f.TensorData(si)
		if err != nil {
			t.Fatal(err)
		}
		scales = make([]float32, si.Elements())
		if err := quant.DequantizeRow(si.Type, scales, sd); err != nil {
			t.Fatal(err)
		}
	}
	typ, _, _, err := quant.ConvertI2S(l, data, ti.Rows(), ti.Cols(), scales)
	if err != nil {
		t.Fatal(err)
	}
	return typ
}
