package format

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// FuzzReadGGUF checks that ReadGGUF never panics and that whatever it
// accepts is self-consistent: every tensor lies inside the input, and
// writing the parsed file back out with WriteGGUF and parsing that gives
// the same header.
func FuzzReadGGUF(f *testing.F) {
	f.Add(writeTest(f, smallValues(), testTensors))
	f.Add(writeTest(f, nil, nil))
	f.Add(writeTest(f, nil, testTensors[:2]))
	md := &Metadata{}
	md.Set(KeyAlignment, Uint32Value(8))
	md.Set(KeyArchitecture, StringValue("llama"))
	md.Set("tokenizer.ggml.tokens", StringsValue([]string{"<unk>", "<s>", "a"}))
	f.Add(writeTest(f, md, []WriterTensor{{Name: "w", Shape: []uint64{32, 2}, Type: quant.Q8_0}, {Name: "b", Shape: []uint64{3}, Type: quant.F32}}))
	f.Add([]byte(nested(3)))
	// I2_S, whose size is the span up to the next tensor.
	f.Add(writeTest(f, nil, []WriterTensor{{Name: "t", Shape: []uint64{256, 2}, Type: quant.I2_S, Size: 160}, {Name: "b", Shape: []uint64{3}, Type: quant.F32}}))
	// The start of a real file (its header cut short).
	if dir, err := locateTestdata(); err == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "models", "gguf", "stories260K-f32.gguf")); err == nil {
			f.Add(b[:4096])
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ReadGGUF(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		checkRanges(t, g, int64(len(data)))
		if g.DataOffset%int64(g.Alignment) != 0 {
			t.Fatalf("data offset %d not aligned to %d", g.DataOffset, g.Alignment)
		}
		var buf bytes.Buffer
		err = WriteGGUF(&buf, &g.Metadata, writerTensors(g), func(i int, w io.Writer) error {
			ti := &g.Tensors[i]
			_, err := w.Write(data[g.DataOffset+int64(ti.Offset):][:ti.Size])
			return err
		})
		if err != nil {
			t.Fatalf("re-writing an accepted file: %v", err)
		}
		g2, err := ReadGGUF(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("re-reading a re-written file: %v", err)
		}
		compareGGUF(t, g, g2)
	})
}
