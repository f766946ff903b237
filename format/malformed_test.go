package format

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

// raw builds GGUF bytes field by field.
type raw []byte

func (r raw) u32(x uint32) raw { return le.AppendUint32(r, x) }
func (r raw) u64(x uint64) raw { return le.AppendUint64(r, x) }
func (r raw) str(s string) raw { return append(r.u64(uint64(len(s))), s...) }
func (r raw) pad(n int) raw    { return append(r, make([]byte, n)...) }
func (r raw) align() raw       { return r.pad(int(alignUp(uint64(len(r)), 32)) - len(r)) }

func header(nTensors, nKV uint64) raw {
	return raw(Magic).u32(3).u64(nTensors).u64(nKV)
}

// tinfo appends a tensor info.
func (r raw) tinfo(name string, shape []uint64, typ quant.Type, off uint64) raw {
	r = r.str(name).u32(uint32(len(shape)))
	for _, d := range shape {
		r = r.u64(d)
	}
	return r.u32(uint32(typ)).u64(off)
}

func nested(depth int) raw {
	r := header(0, 1).str("deep").u32(uint32(TypeArray))
	for range depth {
		r = r.u32(uint32(TypeArray)).u64(1)
	}
	return r.u32(uint32(TypeUint8)).u64(0)
}

func TestMalformed(t *testing.T) {
	f32x16 := []uint64{16}
	for _, c := range []struct {
		name string
		file raw
		want []error
		msg  string // substring of the message
	}{
		{"empty", raw{}, []error{ErrBadMagic, ErrTruncated}, "too short"},
		{"short", raw("GG"), []error{ErrBadMagic, ErrTruncated}, "too short"},
		{"bad magic", raw("GGML").u32(3).u64(0).u64(0), []error{ErrBadMagic}, `"GGML"`},
		{"version 1", raw(Magic).u32(1).u64(0).u64(0), []error{ErrVersion}, "version 1"},
		{"version 4", raw(Magic).u32(4).u64(0).u64(0), []error{ErrVersion}, "version 4"},
		{"big-endian", raw(Magic).u32(3 << 24).u64(0).u64(0), []error{ErrVersion}, "big-endian"},
		{"no counts", raw(Magic).u32(3).u32(0), []error{ErrTruncated}, "need 8 bytes"},
		{"n_tensors 1<<62", header(1<<62, 0).pad(64), []error{ErrCorrupt, ErrTruncated}, "4611686018427387904 tensor infos"},
		{"n_kv 1<<31", header(0, 1<<31).pad(64), []error{ErrCorrupt}, "key-value pairs"},
		{"n_kv max", header(0, math.MaxUint64).pad(64), []error{ErrCorrupt}, "key-value pairs"},
		{"key length 1<<40", header(0, 1).u64(1 << 40).pad(64), []error{ErrCorrupt}, "string length 1099511627776"},
		{"string length 1<<40", header(0, 1).str("k").u32(uint32(TypeString)).u64(1 << 40).pad(8), []error{ErrCorrupt}, `kv 0 "k"`},
		{"array length huge", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint32)).u64(1 << 61).pad(64), []error{ErrCorrupt}, "uint32 array elements"},
		{"string array huge", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1 << 40).pad(64), []error{ErrCorrupt}, "string array elements"},
		{"array of arrays huge", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(math.MaxUint64).pad(64), []error{ErrCorrupt}, "array array elements"},
		{"unknown value type", header(0, 1).str("k").u32(13).pad(8), []error{ErrCorrupt}, "unknown value type 13"},
		{"unknown element type", header(0, 1).str("k").u32(uint32(TypeArray)).u32(99).u64(0), []error{ErrCorrupt}, "unknown value type 99"},
		{"nesting 100 deep", nested(100), []error{ErrCorrupt}, "nested"},
		{"duplicate key", header(0, 2).str("k").u32(uint32(TypeUint8)).pad(1).str("k").u32(uint32(TypeUint8)).pad(1), []error{ErrCorrupt}, `kv 1 "k" (offset 52): duplicate key`},
		{"alignment 0", header(0, 1).str(KeyAlignment).u32(uint32(TypeUint32)).u32(0), []error{ErrCorrupt}, "alignment 0"},
		{"alignment 48", header(0, 1).str(KeyAlignment).u32(uint32(TypeUint32)).u32(48), []error{ErrCorrupt}, "alignment 48"},
		{"alignment 1<<30", header(0, 1).str(KeyAlignment).u32(uint32(TypeUint32)).u32(1 << 30), []error{ErrCorrupt}, "power of two"},
		{"alignment string", header(0, 1).str(KeyAlignment).u32(uint32(TypeString)).str("32"), []error{ErrCorrupt}, "alignment is string"},
		{"alignment negative", header(0, 1).str(KeyAlignment).u32(uint32(TypeInt32)).u32(math.MaxUint32), []error{ErrCorrupt}, "alignment is int32 -1"},
		{"dims 100", header(1, 0).str("t").u32(100).pad(1000), []error{ErrCorrupt}, "100 dimensions"},
		{"dims 0", header(1, 0).str("t").u32(0).pad(100), []error{ErrCorrupt}, "0 dimensions"},
		{"shape overflow", header(1, 0).tinfo("t", []uint64{1 << 40, 1 << 40}, quant.F32, 0).align(), []error{ErrCorrupt}, "overflows"},
		{"bytes overflow", header(1, 0).tinfo("t", []uint64{1 << 31, 1 << 31}, quant.F32, 0).align(), []error{ErrCorrupt}, "overflows"},
		{"dim 1<<63", header(1, 0).tinfo("t", []uint64{1 << 63}, quant.I8, 0).align(), []error{ErrCorrupt}, "overflows"},
		{"unknown tensor type", header(1, 0).tinfo("t", f32x16, 99, 0).align().pad(64), []error{ErrUnknownType}, "type(99)"},
		{"partial block", header(1, 0).tinfo("t", []uint64{33}, quant.Q4_0, 0).align().pad(64), []error{ErrCorrupt}, "whole number"},
		{"duplicate tensor", header(2, 0).tinfo("t", f32x16, quant.F32, 0).tinfo("t", f32x16, quant.F32, 64).align().pad(128), []error{ErrCorrupt}, "duplicate tensor name"},
		{"misaligned", header(1, 0).tinfo("t", f32x16, quant.F32, 4).align().pad(128), []error{ErrCorrupt}, "not a multiple of the alignment 32"},
		{"overlap", header(2, 0).tinfo("a", f32x16, quant.F32, 0).tinfo("b", f32x16, quant.F32, 32).align().pad(128), []error{ErrCorrupt}, `overlaps tensor "a"`},
		{"same offset", header(2, 0).tinfo("a", f32x16, quant.F32, 64).tinfo("b", f32x16, quant.F32, 64).align().pad(128), []error{ErrCorrupt}, "overlaps"},
		{"out of bounds", header(1, 0).tinfo("t", f32x16, quant.F32, 64).align().pad(100), []error{ErrTruncated, ErrCorrupt}, "past the end"},
		{"offset huge", header(1, 0).tinfo("t", f32x16, quant.F32, math.MaxUint64-31).align().pad(100), []error{ErrTruncated, ErrCorrupt}, "past the end"},
		{"no data section", header(1, 0).tinfo("t", f32x16, quant.F32, 0), []error{ErrTruncated}, "data section starts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := ReadGGUF(bytes.NewReader(c.file), int64(len(c.file)))
			if err == nil {
				t.Fatalf("no error; parsed %d kv, %d tensors", g.Metadata.Len(), len(g.Tensors))
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("error %q does not match %v", err, w)
				}
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

// TestNestingLimit checks that the deepest nesting accepted is maxDepth.
func TestNestingLimit(t *testing.T) {
	ok := nested(maxDepth - 1)
	if _, err := ReadGGUF(bytes.NewReader(ok), int64(len(ok))); err != nil {
		t.Errorf("depth %d: %v", maxDepth, err)
	}
	bad := nested(maxDepth)
	if _, err := ReadGGUF(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrCorrupt) {
		t.Errorf("depth %d: %v", maxDepth+1, err)
	}
}

// smallValues is allValues without the large entries.
func smallValues() *Metadata {
	md := allValues()
	md.Delete("string.long")
	md.Delete("a.big")
	return md
}

// checkTruncations parses every prefix of file (every prefix up to limit,
// then every step-th) and checks the result: an ErrTruncated error while
// some tensor data is missing, success afterwards.
func checkTruncations(t *testing.T, file []byte, limit, step int) {
	g, err := ReadGGUF(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	complete := g.DataOffset
	for _, ti := range g.Tensors {
		complete = max(complete, g.DataOffset+int64(ti.Offset+ti.Size))
	}
	if len(g.Tensors) == 0 {
		complete = int64(len(file))
	}
	n := 0
	for cut := 0; cut < len(file); cut++ {
		if cut > limit && cut%step != 0 {
			continue
		}
		n++
		_, err := ReadGGUF(bytes.NewReader(file[:cut]), int64(cut))
		switch {
		case int64(cut) < complete && !errors.Is(err, ErrTruncated):
			t.Fatalf("cut at %d of %d: error %v, want ErrTruncated", cut, len(file), err)
		case int64(cut) >= complete && err != nil:
			t.Fatalf("cut at %d, after all tensor data (%d): %v", cut, complete, err)
		}
	}
	t.Logf("%d truncations of a %d-byte file (header %d bytes)", n, len(file), g.DataOffset)
}

func TestTruncated(t *testing.T) {
	t.Run("written", func(t *testing.T) {
		checkTruncations(t, writeTest(t, smallValues(), testTensors), math.MaxInt, 1)
	})
	t.Run("real", func(t *testing.T) {
		for _, rel := range []string{"gguf/stories260K-pad256-Q4_K_M.gguf", "vocab/ggml-vocab-llama-spm.gguf"} {
			path := filepath.Join(testdataDir(t), "models", rel)
			file, err := os.ReadFile(path)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			// Every offset of the header region; a sample of the rest.
			g, err := ReadGGUF(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			limit := int(g.DataOffset)
			if len(g.Tensors) == 0 {
				limit = 4096 // vocab files are all header: sample them
			}
			checkTruncations(t, file, limit, 997)
		}
	})
}

// shortReader claims a size its data does not have.
func TestShortReaderAt(t *testing.T) {
	file := writeTest(t, smallValues(), testTensors)
	_, err := ReadGGUF(bytes.NewReader(file[:200]), int64(len(file)))
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("short reader: %v", err)
	}
	_, err = ReadGGUF(errReaderAt{}, 1000)
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("failing reader: %v", err)
	}
	if _, err := ReadGGUF(bytes.NewReader(file), -1); err == nil {
		t.Errorf("negative size accepted")
	}
}

type errReaderAt struct{}

func (errReaderAt) ReadAt(p []byte, off int64) (int, error) { return 0, io.ErrClosedPipe }

// TestBoundedAllocation checks that small files claiming huge counts are
// rejected without allocating in proportion to the claim.
func TestBoundedAllocation(t *testing.T) {
	for _, c := range []struct {
		name string
		file raw
	}{
		{"2^31 kv", header(0, 1<<31)},
		{"2^31 tensors", header(1<<31, 0)},
		{"2^31 strings", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(1 << 31)},
		{"2^31 floats", header(0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeFloat32)).u64(1 << 31)},
		{"1<<40 key", header(0, 1).u64(1 << 40)},
	} {
		file := c.file.pad(100 - len(c.file))
		run := func() {
			if _, err := ReadGGUF(bytes.NewReader(file), int64(len(file))); err == nil {
				t.Fatalf("%s: no error", c.name)
			}
		}
		allocs := testing.AllocsPerRun(100, run)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			run()
		}
		runtime.ReadMemStats(&after)
		bytesPerRun := (after.TotalAlloc - before.TotalAlloc) / 100
		t.Logf("%s: %v allocations, %d bytes per parse", c.name, allocs, bytesPerRun)
		if allocs > 30 || bytesPerRun > 4096 {
			t.Errorf("%s: %v allocations, %d bytes per parse of a %d-byte file", c.name, allocs, bytesPerRun, len(file))
		}
	}
}
