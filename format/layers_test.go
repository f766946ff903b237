package format

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// checkLayers checks LayerTensors, LayerRecord and TensorOffset of f
// against the bytes each tensor should hold.
func checkLayers(t *testing.T, f *File, layers int, data map[string][]byte) {
	t.Helper()
	got := f.LayerTensors(layers)
	if len(got) != layers {
		t.Fatalf("%d layers, want %d", len(got), layers)
	}
	for l, ts := range got {
		if len(ts) == 0 {
			t.Fatalf("layer %d: no tensors", l)
		}
		rec, isQSF := f.LayerRecord(l)
		if isQSF != (f.QSF() != nil) {
			t.Fatalf("layer %d: LayerRecord ok %v for a QSF file %v", l, isQSF, f.QSF() != nil)
		}
		var payload []byte
		if isQSF {
			var err error
			if payload, err = f.QSF().ReadLayer(l, nil); err != nil {
				t.Fatal(err)
			}
		}
		for _, lt := range ts {
			want := data[lt.Name]
			var at []byte
			switch {
			case isQSF:
				at = payload[lt.At : lt.At+int64(lt.Size)]
			default:
				at = make([]byte, lt.Size)
				if _, err := f.ReadAt(at, lt.At); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(at, want) {
				t.Errorf("layer %d: %s: the bytes at At differ from its data", l, lt.Name)
			}
			off := f.TensorOffset(lt.TensorInfo)
			if isQSF && rec.Compression != CompressNone {
				if off != int64(rec.Offset) {
					t.Errorf("%s: TensorOffset %d, want the record's %d", lt.Name, off, rec.Offset)
				}
				continue
			}
			b := make([]byte, lt.Size)
			if _, err := f.ReadAt(b, off); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("layer %d: %s: the bytes at TensorOffset differ from its data", l, lt.Name)
			}
		}
	}
	if n := f.LayerTensors(layers - 1); len(n) != layers-1 {
		t.Errorf("LayerTensors(%d) has %d layers", layers-1, len(n))
	}
}

func TestLayerTensorsQSF(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []Compression{CompressNone, CompressLZ4} {
		path, data := writeTiny(t, dir, 3, comp)
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		checkLayers(t, f, 3, data)
		if f.MetadataBytes() <= 0 || f.MetadataBytes() >= f.Size() {
			t.Errorf("MetadataBytes %d of a %d-byte file", f.MetadataBytes(), f.Size())
		}
		f.Close()
	}
}

func TestLayerTensorsGGUF(t *testing.T) {
	var md Metadata
	md.Set("general.architecture", StringValue("llama"))
	tensors := []WriterTensor{
		{Name: "token_embd.weight", Shape: []uint64{32, 4}, Type: quant.F32},
		{Name: "blk.1.attn_q.weight", Shape: []uint64{32, 2}, Type: quant.Q8_0},
		{Name: "blk.0.attn_norm.weight", Shape: []uint64{32}, Type: quant.F32},
		{Name: "blk.0.attn_q.weight", Shape: []uint64{32, 2}, Type: quant.Q8_0},
		{Name: "blk.2.attn_q.weight", Shape: []uint64{32, 2}, Type: quant.Q8_0},
		{Name: "output.weight", Shape: []uint64{32, 4}, Type: quant.F32},
	}
	b := writeTest(t, &md, tensors)
	path := filepath.Join(t.TempDir(), "l.gguf")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{}
	for i, wt := range tensors {
		data[wt.Name] = tensorBytes(i, wt)
	}
	for _, noMmap := range []bool{false, true} {
		f, err := OpenWith(path, OpenOptions{NoMmap: noMmap})
		if err != nil {
			t.Fatal(err)
		}
		checkLayers(t, f, 3, data)
		if got := f.LayerTensors(3); len(got[0]) != 2 || got[0][0].Name != "blk.0.attn_norm.weight" {
			t.Errorf("layer 0 is %v, want its two tensors in file order", got[0])
		}
		if f.MetadataBytes() != f.DataOffset {
			t.Errorf("MetadataBytes %d, want the data offset %d", f.MetadataBytes(), f.DataOffset)
		}
		f.Close()
	}
}

// TestMap maps a file opened without a mapping: its tensors then come
// from the mapping, with the same bytes.
func TestMap(t *testing.T) {
	dir := t.TempDir()
	for _, comp := range []Compression{CompressNone, CompressLZ4} {
		path, data := writeTiny(t, dir, 2, comp)
		f, err := OpenWith(path, OpenOptions{NoMmap: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Map(); err != nil {
			t.Skipf("cannot map here: %v", err)
		}
		if !f.Mapped() {
			t.Fatal("Map succeeded but the file is not mapped")
		}
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			b, err := f.TensorData(ti)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, data[ti.Name]) {
				t.Errorf("%v: %s differs after Map", comp, ti.Name)
			}
			if mapped := f.IsMapped(b); mapped != (comp == CompressNone || !strings.HasPrefix(ti.Name, "blk.")) {
				t.Errorf("%v: %s: IsMapped %v", comp, ti.Name, mapped)
			}
		}
		if err := f.Map(); err != nil {
			t.Errorf("second Map: %v", err)
		}
		f.Close()
	}
}
