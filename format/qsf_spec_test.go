package format

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// specField is one row of a field table in docs/FORMAT.md.
type specField struct {
	off, size int
	typ, name string
}

// specTables parses the field tables (| offset | size | type | field | ...)
// of docs/FORMAT.md, keyed by the heading above each.
func specTables(t *testing.T) map[string][]specField {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tables := map[string][]specField{}
	heading := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			heading = strings.TrimSpace(strings.TrimLeft(line, "#"))
			continue
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 6 {
			continue
		}
		off, err1 := strconv.Atoi(strings.TrimSpace(cells[1]))
		size, err2 := strconv.Atoi(strings.TrimSpace(cells[2]))
		if err1 != nil || err2 != nil {
			continue // the header row, the separator, or another table
		}
		tables[heading] = append(tables[heading], specField{off, size, strings.TrimSpace(cells[3]), strings.TrimSpace(cells[4])})
	}
	return tables
}

var specWidths = map[string]int{"u8": 1, "u16": 2, "u32": 4, "i32": 4, "f32": 4, "u64": 8}

// checkTable checks that the fields of a table tile b exactly and that the
// bytes at each field's offset hold the expected value.
func checkTable(t *testing.T, table string, fields []specField, b []byte, want map[string]any) {
	t.Helper()
	if len(fields) == 0 {
		t.Fatalf("%s: no field table in docs/FORMAT.md", table)
	}
	at := 0
	for _, f := range fields {
		if f.off != at {
			t.Errorf("%s: field %s at %d, previous field ends at %d", table, f.name, f.off, at)
		}
		at = f.off + f.size
		if w, ok := specWidths[f.typ]; ok && w != f.size {
			t.Errorf("%s: field %s is %s but %d bytes", table, f.name, f.typ, f.size)
		}
		exp, ok := want[f.name]
		if !ok {
			t.Errorf("%s: the spec names field %s, which the test does not know", table, f.name)
			continue
		}
		delete(want, f.name)
		if at > len(b) {
			t.Errorf("%s: field %s ends at %d, past the %d encoded bytes", table, f.name, at, len(b))
			continue
		}
		raw := b[f.off:at]
		var got any
		switch f.typ {
		case "u8":
			got = uint64(raw[0])
		case "u16":
			got = uint64(le.Uint16(raw))
		case "u32":
			got = uint64(le.Uint32(raw))
		case "u64":
			got = le.Uint64(raw)
		case "i32":
			got = int64(int32(le.Uint32(raw)))
		case "f32":
			got = math.Float32frombits(le.Uint32(raw))
		case "bytes":
			got = string(raw)
		default:
			t.Errorf("%s: field %s has unknown type %q", table, f.name, f.typ)
			continue
		}
		if got != exp {
			t.Errorf("%s: field %s (%s at %d) holds %v, want %v", table, f.name, f.typ, f.off, got, exp)
		}
	}
	if at != len(b) {
		t.Errorf("%s: fields cover %d bytes, the encoder writes %d", table, at, len(b))
	}
	for name := range want {
		t.Errorf("%s: field %s is missing from the spec", table, name)
	}
}

// TestSpecMatchesEncoder keeps docs/FORMAT.md and the encoder in step: it
// encodes each fixed structure with distinct values and reads every field
// back at the offset and type the spec gives.
func TestSpecMatchesEncoder(t *testing.T) {
	tables := specTables(t)
	zero := func(n int) string { return string(make([]byte, n)) }

	h := QSFHeader{Version: 1, HeaderSize: 128, Arch: ArchQwen3, Activation: ActGeGLU, Norm: NormLayer, Position: PosALiBi,
		Flags: FlagTiedEmbeddings, Layers: 11, HiddenDim: 12, Heads: 13, KVHeads: 14, Vocab: 15, MaxSeqLen: 16, FFNDim: 17,
		HeadDim: 18, DefaultQuant: quant.Q6_K, RopeTheta: 1234.5, BOS: 19, EOS: -1, PAD: 21, Alignment: 32,
		IndexOffset: 1 << 33, EmbeddingOffset: 1<<34 + 1, FinalOffset: 1<<35 + 2, TokenizerOffset: 1<<36 + 3,
		MetadataOffset: 1<<37 + 4, FileSize: 1<<38 + 5}
	hb := h.marshal()
	checkTable(t, "Header", tables["Header"], hb, map[string]any{
		"magic": "QSF1", "version": uint64(1), "header_size": uint64(128), "architecture": uint64(ArchQwen3),
		"activation": uint64(ActGeGLU), "norm": uint64(NormLayer), "position": uint64(PosALiBi), "flags": uint64(1),
		"reserved0": uint64(0), "layers": uint64(11), "hidden_dim": uint64(12), "heads": uint64(13), "kv_heads": uint64(14),
		"vocab": uint64(15), "max_seq_len": uint64(16), "ffn_dim": uint64(17), "head_dim": uint64(18),
		"default_quant": uint64(quant.Q6_K), "rope_theta": float32(1234.5), "bos_id": int64(19), "eos_id": int64(-1),
		"pad_id": int64(21), "alignment": uint64(32), "index_offset": uint64(1 << 33), "embedding_offset": uint64(1<<34 + 1),
		"final_offset": uint64(1<<35 + 2), "tokenizer_offset": uint64(1<<36 + 3), "metadata_offset": uint64(1<<37 + 4),
		"file_size": uint64(1<<38 + 5), "header_crc": uint64(h.CRC), "reserved1": uint64(0),
	})
	if got := unmarshalHeader(hb); got != h {
		t.Errorf("header round trip: %+v, want %+v", got, h)
	}

	checkTable(t, "Sections", tables["Sections"], frame("LIDX", 0xdeadbeef, 1<<40+7), map[string]any{
		"tag": "LIDX", "crc": uint64(0xdeadbeef), "length": uint64(1<<40 + 7), "reserved": zero(16),
	})

	a := ArchConfig{RopeDim: 64, RopeStyle: RopeNeoX, Features: FeatQKNorm | FeatEmbedScale, NormEps: 1e-6, KeyDim: 128,
		ValueDim: 96, SlidingWindow: 4096, RopeScaling: 2, RopeScale: 8, RopeOrigCtx: 8192, AttnSoftcap: 50, FinalSoftcap: 30}
	ab := a.marshal()
	checkTable(t, "Architecture config (`ARCH`)", tables["Architecture config (`ARCH`)"], ab, map[string]any{
		"rope_dim": uint64(64), "rope_style": uint64(RopeNeoX), "reserved0": uint64(0),
		"features": uint64(FeatQKNorm | FeatEmbedScale), "norm_eps": float32(1e-6), "key_dim": uint64(128),
		"value_dim": uint64(96), "sliding_window": uint64(4096), "rope_scaling": uint64(2), "rope_scale": float32(8),
		"rope_orig_ctx": uint64(8192), "attn_softcap": float32(50), "final_softcap": float32(30), "reserved1": zero(20),
	})
	if unmarshalArch(ab) != a {
		t.Error("arch config round trip differs")
	}

	e := LayerEntry{Offset: 1<<41 + 3, StoredSize: 1000, Size: 2000, Quant: quant.Q4_K, Compression: CompressLZ4HC,
		Tensors: 9, CRC: 0xcafef00d, Importance: 0.75}
	eb := make([]byte, qsfEntrySize)
	e.put(eb)
	checkTable(t, "Layer index (`LIDX`)", tables["Layer index (`LIDX`)"], eb, map[string]any{
		"offset": uint64(1<<41 + 3), "stored_size": uint64(1000), "size": uint64(2000), "quant": uint64(quant.Q4_K),
		"compression": uint64(CompressLZ4HC), "tensors": uint64(9), "crc": uint64(0xcafef00d),
		"importance": float32(0.75), "reserved": uint64(0),
	})
	if getEntry(eb) != e {
		t.Error("layer entry round trip differs")
	}

	ts := QSFTensor{Role: RoleNamed, Name: "blk.3.extra", Shape: []uint64{4096, 11008}, Type: quant.Q8_0, DataOffset: 96}
	rb := ts.record()
	checkTable(t, "Tensor records", tables["Tensor records"], rb[:qsfRecordSize], map[string]any{
		"role": uint64(RoleNamed), "ndims": uint64(2), "reserved": uint64(0), "type": uint64(quant.Q8_0),
		"cols": uint64(4096), "rows": uint64(11008), "data_offset": uint64(96), "name_len": uint64(len(ts.Name)),
		"reserved2": uint64(0),
	})
	if !bytes.Equal(rb[qsfRecordSize:], []byte(ts.Name)) {
		t.Error("the name does not follow the record")
	}
	got, nameLen, err := decodeRecord(rb)
	if err != nil || nameLen != uint64(len(ts.Name)) || got.Type != ts.Type || got.Rows() != 11008 || got.DataOffset != 96 {
		t.Errorf("record round trip: %+v, %d, %v", got, nameLen, err)
	}
}

// TestSpecRoleTable checks the role table of docs/FORMAT.md against
// TensorName.
func TestSpecRoleTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(raw)) {
		cells := strings.Split(line, "|")
		for i := 1; i+1 < len(cells); i += 2 {
			code, err := strconv.Atoi(strings.TrimSpace(cells[i]))
			name := strings.TrimSpace(cells[i+1])
			if err != nil || !strings.HasSuffix(name, ".weight") && !strings.HasSuffix(name, ".bias") {
				continue
			}
			want := TensorName(Role(code), 7)
			if got := strings.ReplaceAll(name, "blk.N.", "blk.7."); got != want {
				t.Errorf("role %d: spec says %s, TensorName gives %s", code, got, want)
			}
			n++
		}
	}
	if n != len(roleNames) {
		t.Errorf("the spec lists %d roles, the code has %d", n, len(roleNames))
	}
}
