package format

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// realFiles returns every staged GGUF, relative to models/.
func realFiles(t *testing.T, dir string) []string {
	var files []string
	for _, sub := range []string{"gguf", "synthetic", "vocab"} {
		m, err := filepath.Glob(filepath.Join(dir, "models", sub, "*.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			files = append(files, filepath.Join(sub, filepath.Base(p)))
		}
	}
	if len(files) == 0 {
		t.Skip("no GGUF files in the test data")
	}
	return files
}

func TestReadRealFiles(t *testing.T) {
	dir := testdataDir(t)
	exp := expectations(t, dir)
	for _, rel := range realFiles(t, dir) {
		t.Run(rel, func(t *testing.T) {
			f, err := Open(filepath.Join(dir, "models", rel))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			e, ok := exp[rel]
			if !ok {
				t.Fatalf("%s is not described in the test data documentation", rel)
			}
			if e.version >= 0 && int(f.Version) != e.version {
				t.Errorf("version %d, want %d", f.Version, e.version)
			}
			if len(f.Tensors) != e.tensors {
				t.Errorf("%d tensors, want %d", len(f.Tensors), e.tensors)
			}
			if e.kv >= 0 && f.Metadata.Len() != e.kv {
				t.Errorf("%d kv, want %d", f.Metadata.Len(), e.kv)
			}
			if got := f.Architecture(); got != e.arch {
				t.Errorf("architecture %q, want %q", got, e.arch)
			}
			if e.types != nil {
				got := map[string]int{}
				for _, ti := range f.Tensors {
					got[ti.Type.String()]++
				}
				if !mapsEqual(got, e.types) {
					t.Errorf("tensor types %v, want %v", got, e.types)
				}
			}
			if !f.Mapped() {
				t.Errorf("not memory-mapped")
			}
			checkRanges(t, f.GGUF, f.Size())
			tokens, _ := f.Metadata.Strings("tokenizer.ggml.tokens")
			if len(tokens) == 0 {
				t.Errorf("no tokenizer.ggml.tokens")
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkRanges checks that every tensor lies inside a file of the given size.
func checkRanges(t testing.TB, g *GGUF, size int64) {
	t.Helper()
	for _, ti := range g.Tensors {
		end := uint64(g.DataOffset) + ti.Offset + ti.Size
		if g.DataOffset < 0 || end > uint64(size) || end < ti.Offset {
			t.Fatalf("tensor %q [%d+%d, +%d) outside %d bytes", ti.Name, g.DataOffset, ti.Offset, ti.Size, size)
		}
	}
}

func TestStories260KF32(t *testing.T) {
	path := filepath.Join(testdataDir(t), "models", "gguf", "stories260K-f32.gguf")
	mapped, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close()
	plain, err := OpenWith(path, OpenOptions{NoMmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.Mapped() || !mapped.Mapped() {
		t.Fatalf("Mapped: %v with mmap, %v without", mapped.Mapped(), plain.Mapped())
	}

	if n := len(mapped.Tensors); n != 48 {
		t.Errorf("%d tensors, want 48", n)
	}
	if a := mapped.Architecture(); a != "llama" {
		t.Errorf("architecture %q", a)
	}
	if n, ok := mapped.Metadata.Uint("llama.embedding_length"); !ok || n != 64 {
		t.Errorf("llama.embedding_length = %d, %v", n, ok)
	}
	if eps, ok := mapped.Metadata.Float("llama.attention.layer_norm_rms_epsilon"); !ok || eps <= 0 || eps > 1e-3 {
		t.Errorf("rms epsilon = %g, %v", eps, ok)
	}
	for _, c := range []struct {
		name  string
		shape []uint64
		rows  int
	}{
		{"blk.0.attn_q.weight", []uint64{64, 64}, 64},
		{"token_embd.weight", []uint64{64, 512}, 512},
		{"output_norm.weight", []uint64{64}, 1},
	} {
		ti, ok := mapped.Tensor(c.name)
		if !ok {
			t.Errorf("no tensor %s", c.name)
			continue
		}
		if !slices.Equal(ti.Shape, c.shape) || ti.Type != quant.F32 || ti.Cols() != 64 || ti.Rows() != c.rows {
			t.Errorf("%s: shape %v type %v cols %d rows %d", c.name, ti.Shape, ti.Type, ti.Cols(), ti.Rows())
		}
		if ti.Size != uint64(64*c.rows*4) || ti.RowBytes() != 256 {
			t.Errorf("%s: size %d, row bytes %d", c.name, ti.Size, ti.RowBytes())
		}
	}

	emb, _ := mapped.Tensor("token_embd.weight")
	a, err := mapped.TensorData(emb)
	if err != nil {
		t.Fatal(err)
	}
	b, err := plain.TensorData(emb)
	if err != nil {
		t.Fatal(err)
	}
	c := make([]byte, emb.Size)
	if _, err := mapped.ReadAt(c, mapped.DataOffset+int64(emb.Offset)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := raw[mapped.DataOffset+int64(emb.Offset):][:64*512*4]
	if len(a) != 64*512*4 || !bytes.Equal(a, want) || !bytes.Equal(b, want) || !bytes.Equal(c, want) {
		t.Errorf("token_embd data differs between mmap (%d bytes), ReadAt and os.ReadFile", len(a))
	}
	if cap(a) != len(a) {
		t.Errorf("TensorData slice has spare capacity %d", cap(a)-len(a))
	}

	// Every tensor: mapped and unmapped bytes agree.
	for i := range mapped.Tensors {
		ti := &mapped.Tensors[i]
		x, err1 := mapped.TensorData(ti)
		y, err2 := plain.TensorData(ti)
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: mmap and ReadAt data differ (%v, %v)", ti.Name, err1, err2)
		}
	}

	if err := mapped.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mapped.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := mapped.TensorData(emb); !errors.Is(err, os.ErrClosed) {
		t.Errorf("TensorData after Close: %v", err)
	}
}

// TestRewriteRealFiles re-writes real files with WriteGGUF and checks that
// the result parses to the same metadata and tensors. llama.cpp lays files
// out exactly as WriteGGUF does, so the bytes must be identical too.
func TestRewriteRealFiles(t *testing.T) {
	dir := testdataDir(t)
	for _, rel := range []string{
		"gguf/stories260K-f32.gguf",
		"gguf/stories260K-pad256-Q4_K_M.gguf",
		"synthetic/synth-qwen3-Q4_0.gguf",
		"vocab/ggml-vocab-phi-3.gguf",
	} {
		t.Run(rel, func(t *testing.T) {
			path := filepath.Join(dir, "models", rel)
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var buf bytes.Buffer
			if err := WriteGGUF(&buf, &f.Metadata, writerTensors(f.GGUF), func(i int, w io.Writer) error {
				d, err := f.TensorData(&f.Tensors[i])
				if err != nil {
					return err
				}
				_, err = w.Write(d)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			g, err := ReadGGUF(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			compareGGUF(t, f.GGUF, g)
			for i := range g.Tensors {
				a, _ := f.TensorData(&f.Tensors[i])
				ti := &g.Tensors[i]
				b := buf.Bytes()[g.DataOffset+int64(ti.Offset):][:ti.Size]
				if !bytes.Equal(a, b) {
					t.Errorf("tensor %s data differs", ti.Name)
				}
			}
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(orig, buf.Bytes()) {
				t.Errorf("re-written file differs from the original (%d vs %d bytes)", buf.Len(), len(orig))
			}
		})
	}
}
