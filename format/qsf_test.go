package format

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// tinyQSF describes a small two-layer model with every kind of section and
// a named tensor, and returns its data by tensor name.
func tinyQSF(layers int) (*QSFModel, map[string][]byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := map[string][]byte{}
	mk := func(role Role, name string, layer int, typ quant.Type, shape ...uint64) QSFTensor {
		t := QSFTensor{Role: role, Name: name, Shape: shape, Type: typ}
		if role != RoleNamed {
			t.Name = TensorName(role, layer)
		}
		size, err := tensorSize(shape, typ)
		if err != nil {
			panic(err)
		}
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.IntN(4)) // compressible
		}
		data[t.Name] = b
		return t
	}
	m := &QSFModel{
		Header: QSFHeader{Arch: ArchLlama, Position: PosRoPE, HiddenDim: 32, Heads: 4, KVHeads: 2, Vocab: 8,
			MaxSeqLen: 64, FFNDim: 64, HeadDim: 8, RopeTheta: 10000, BOS: 1, EOS: 2, PAD: -1},
		Arch:      ArchConfig{RopeDim: 8, RopeStyle: RopeNormal, NormEps: 1e-5, KeyDim: 8, ValueDim: 8, Features: FeatGatedFFN},
		Tokenizer: &Metadata{},
		Metadata:  &Metadata{},
	}
	m.Tokenizer.Set("tokenizer.ggml.model", StringValue("llama"))
	m.Tokenizer.Set("tokenizer.ggml.tokens", StringsValue([]string{"<unk>", "<s>", "</s>", "a", "b", "c", "d", "e"}))
	m.Metadata.Set("general.name", StringValue("tiny"))
	m.Embedding = []QSFTensor{
		mk(RoleTokenEmbd, "", 0, quant.F32, 32, 8),
		mk(RoleNamed, "rope_freqs.weight", 0, quant.F32, 4),
	}
	for l := range layers {
		m.Layers = append(m.Layers, []QSFTensor{
			mk(RoleAttnNorm, "", l, quant.F32, 32),
			mk(RoleQ, "", l, quant.Q8_0, 32, 32),
			mk(RoleK, "", l, quant.F16, 32, 16),
			mk(RoleNamed, fmt.Sprintf("blk.%d.extra", l), l, quant.F32, 3),
			mk(RoleDown, "", l, quant.Q4_0, 64, 32),
		})
	}
	m.Final = []QSFTensor{
		mk(RoleOutputNorm, "", 0, quant.F32, 32),
		mk(RoleOutput, "", 0, quant.Q8_0, 32, 8),
	}
	return m, data
}

func writeTiny(t testing.TB, dir string, layers int, comp Compression) (string, map[string][]byte) {
	t.Helper()
	m, data := tinyQSF(layers)
	path := filepath.Join(dir, fmt.Sprintf("tiny-%v.qsf", comp))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := func(place QSFPlacement, layer, i int) string {
		switch place {
		case PlaceEmbedding:
			return m.Embedding[i].Name
		case PlaceFinal:
			return m.Final[i].Name
		}
		return m.Layers[layer][i].Name
	}
	_, _, err = WriteQSF(f, m, func(place QSFPlacement, layer, i int, w io.Writer) error {
		_, err := w.Write(data[names(place, layer, i)])
		return err
	}, QSFWriteOptions{Compression: comp})
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestQSFRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []Compression{CompressNone, CompressLZ4, CompressLZ4HC} {
		path, data := writeTiny(t, dir, 2, comp)
		for _, noMmap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/nommap=%v", comp, noMmap), func(t *testing.T) {
				f, err := OpenWith(path, OpenOptions{NoMmap: noMmap})
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				q := f.QSF()
				if q == nil {
					t.Fatal("QSF() is nil for a QSF file")
				}
				if len(f.Tensors) != len(data) {
					t.Fatalf("%d tensors, want %d", len(f.Tensors), len(data))
				}
				for i := range f.Tensors {
					ti := &f.Tensors[i]
					got, err := f.TensorData(ti)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, data[ti.Name]) {
						t.Errorf("tensor %s: data differs", ti.Name)
					}
				}
				for key, want := range map[string]string{
					"general.architecture":                   `"llama"`,
					"llama.block_count":                      "2",
					"llama.attention.head_count_kv":          "2",
					"llama.rope.dimension_count":             "8",
					"llama.attention.layer_norm_rms_epsilon": "1e-05",
					"tokenizer.ggml.bos_token_id":            "1",
					"general.name":                           `"tiny"`,
				} {
					v, ok := f.Metadata.Get(key)
					if !ok || v.String() != want {
						t.Errorf("%s = %v (%v), want %s", key, v, ok, want)
					}
				}
				if _, ok := f.Metadata.Get("tokenizer.ggml.padding_token_id"); ok {
					t.Error("padding id presented although PAD is -1")
				}
				if comp != CompressNone && q.Layers[0].Compression != comp {
					t.Errorf("layer 0 stored with %v, want %v", q.Layers[0].Compression, comp)
				}
				for i := range q.Layers {
					p, err := q.ReadLayer(i, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, ts := range q.LayerTensors[i] {
						if !bytes.Equal(p[ts.DataOffset:ts.DataOffset+ts.Size], data[ts.Name]) {
							t.Errorf("ReadLayer(%d): tensor %s differs", i, ts.Name)
						}
					}
					if err := q.VerifyLayer(i); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}

// openAndRead opens path and reads every tensor, returning the first
// error.
func openAndRead(path string, opts OpenOptions) error {
	f, err := OpenWith(path, opts)
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

// readAllBytes parses a QSF file held in memory, as if memory-mapped when
// mapped is set, and reads every tensor through the GGUF view.
func readAllBytes(b []byte, mapped bool) error {
	var data []byte
	if mapped {
		data = b
	}
	q, err := readQSF(bytes.NewReader(b), uint64(len(b)), data, false)
	if err != nil {
		return err
	}
	g, locs, err := q.view()
	if err != nil {
		return err
	}
	for i, t := range g.Tensors {
		if _, err := q.tensorData(t.Name, locs[i]); err != nil {
			return err
		}
	}
	return nil
}

// sectionAt names the section holding byte off of a QSF file.
func sectionAt(q *QSF, off uint64) string {
	if off < QSFHeaderSize {
		return "header"
	}
	name := "header"
	for _, s := range q.sections[1:] {
		if off >= s.Offset {
			name = s.Name
		}
	}
	for i, e := range q.Layers {
		if off >= e.Offset && off < q.Header.FinalOffset {
			name = fmt.Sprintf("layer %d", i)
		}
	}
	return name
}

// TestQSFEveryByteFlip flips every byte of small files, compressed and not,
// and requires an error at open or first read that names the section.
func TestQSFEveryByteFlip(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []Compression{CompressNone, CompressLZ4} {
		path, _ := writeTiny(t, dir, 2, comp)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		q, err := ReadQSF(bytes.NewReader(orig), int64(len(orig)))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for off := range orig {
			for _, x := range []byte{0x01, 0x80} {
				b := bytes.Clone(orig)
				b[off] ^= x
				var err error
				if isQSF(bytes.NewReader(b)) {
					err = readAllBytes(b, off%2 == 0)
				} else {
					_, err = ReadGGUF(bytes.NewReader(b), int64(len(b)))
				}
				want := sectionAt(q, uint64(off))
				if err == nil {
					t.Fatalf("%v: flipping byte %d (%s) ^%#x went unnoticed", comp, off, want, x)
				}
				if off < 4 {
					if !errors.Is(err, ErrBadMagic) {
						t.Fatalf("%v: magic byte %d: %v, want ErrBadMagic", comp, off, err)
					}
					continue
				}
				var qe *QSFError
				if !errors.As(err, &qe) {
					t.Fatalf("%v: byte %d (%s): error is not a *QSFError: %v", comp, off, want, err)
				}
				seen[want]++
				if !strings.Contains(err.Error(), strings.Fields(want)[0]) && !strings.Contains(err.Error(), "header") &&
					!strings.Contains(err.Error(), "index") {
					t.Errorf("%v: byte %d in %s: error does not name it: %v", comp, off, want, err)
				}
			}
		}
		t.Logf("%v: %d bytes flipped, errors per section %v", comp, len(orig), seen)
	}
}

func TestQSFTruncated(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeTiny(t, dir, 2, CompressLZ4)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(orig) {
		_, err := ReadQSF(bytes.NewReader(orig[:n]), int64(n))
		if err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(orig))
		}
		if n >= 4 && !errors.Is(err, ErrTruncated) {
			t.Errorf("truncated to %d bytes: %v does not match ErrTruncated", n, err)
		}
	}
}

func TestQSFErrorsMatchSentinels(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeTiny(t, dir, 1, CompressNone)
	orig, _ := os.ReadFile(path)
	q, err := ReadQSF(bytes.NewReader(orig), int64(len(orig)))
	if err != nil {
		t.Fatal(err)
	}
	set := func(off int, v []byte, fixCRC bool) []byte {
		b := bytes.Clone(orig)
		copy(b[off:], v)
		if fixCRC {
			le.PutUint32(b[qsfHeaderCRCAt:], qsfCRC(b[:qsfHeaderCRCAt]))
		}
		return b
	}
	layer := q.Layers[0]
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"magic", set(0, []byte("QSF2"), false), ErrBadMagic},
		{"gguf", set(0, []byte("GGUF"), false), ErrBadMagic},
		{"version", set(4, []byte{2, 0}, true), ErrVersion},
		{"header crc", set(20, []byte{9}, false), ErrChecksum},
		{"layer crc", set(int(layer.Offset)+60, []byte{0xff}, false), ErrChecksum},
		{"trailing", append(bytes.Clone(orig), 0), ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q, err := ReadQSF(bytes.NewReader(c.b), int64(len(c.b)))
			if err == nil {
				_, err = q.ReadLayer(0, nil)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestQSFDeferLayerCRC(t *testing.T) {
	dir := t.TempDir()
	path, _ := writeTiny(t, dir, 1, CompressNone)
	b, _ := os.ReadFile(path)
	q, _ := ReadQSF(bytes.NewReader(b), int64(len(b)))
	// Flip a byte of the first tensor's data (not its record).
	b[q.Layers[0].Offset+q.LayerTensors[0][0].DataOffset] ^= 1
	os.WriteFile(path, b, 0o644)
	if err := openAndRead(path, OpenOptions{DeferLayerCRC: true}); err != nil {
		t.Fatalf("deferred CRC: %v", err)
	}
	f, err := OpenWith(path, OpenOptions{DeferLayerCRC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.QSF().VerifyLayer(0); !errors.Is(err, ErrChecksum) {
		t.Fatalf("VerifyLayer: %v, want ErrChecksum", err)
	}
}

func TestQSFClosed(t *testing.T) {
	path, _ := writeTiny(t, t.TempDir(), 1, CompressLZ4)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	q := f.QSF()
	f.Close()
	if _, err := q.ReadLayer(0, nil); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("ReadLayer after Close: %v", err)
	}
}

// TestQSFConcurrentReads reads every tensor from several goroutines at
// once; run with -race.
func TestQSFConcurrentReads(t *testing.T) {
	path, data := writeTiny(t, t.TempDir(), 3, CompressLZ4)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for i := range f.Tensors {
				b, err := f.TensorData(&f.Tensors[i])
				if err == nil && !bytes.Equal(b, data[f.Tensors[i].Name]) {
					err = fmt.Errorf("tensor %s differs", f.Tensors[i].Name)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
