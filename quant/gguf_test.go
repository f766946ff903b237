package quant_test

// A minimal GGUF reader for the known-answer tests. It exists only so that
// package quant's tests do not depend on package format (which imports
// quant); it reads the header, skips metadata values and returns raw tensor
// bytes.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

type ggufTensor struct {
	name  string
	shape []uint64
	typ   quant.Type
	data  []byte
}

type ggufReader struct {
	b   []byte
	off int
	err error
}

func (r *ggufReader) take(n int) []byte {
	if r.err != nil || n < 0 || r.off+n > len(r.b) {
		r.err = errors.New("gguf: truncated")
		return make([]byte, max(n, 0))
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *ggufReader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *ggufReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }
func (r *ggufReader) str() string { return string(r.take(int(min(r.u64(), 1<<30)))) }

// value skips (or, for u32 alignment, returns) one metadata value of type t.
func (r *ggufReader) value(t uint32) uint64 {
	sizes := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch t {
	case 4:
		return uint64(r.u32())
	case 8:
		r.str()
	case 9:
		et, n := r.u32(), r.u64()
		for i := uint64(0); i < n && r.err == nil; i++ {
			r.value(et)
		}
	default:
		sz, ok := sizes[t]
		if !ok {
			r.err = fmt.Errorf("gguf: bad value type %d", t)
		}
		r.take(sz)
	}
	return 0
}

func readGGUF(path string) (map[string]ggufTensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &ggufReader{b: b}
	if string(r.take(4)) != "GGUF" || r.u32() != 3 {
		return nil, errors.New("gguf: not a GGUF v3 file")
	}
	nt, nkv := r.u64(), r.u64()
	align := uint64(32)
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		key, t := r.str(), r.u32()
		v := r.value(t)
		if key == "general.alignment" && t == 4 {
			align = v
		}
	}
	type info struct {
		name   string
		shape  []uint64
		typ    quant.Type
		offset uint64
	}
	var infos []info
	for i := uint64(0); i < nt && r.err == nil; i++ {
		in := info{name: r.str()}
		nd := r.u32()
		for d := uint32(0); d < nd && d < 8; d++ {
			in.shape = append(in.shape, r.u64())
		}
		in.typ = quant.Type(r.u32())
		in.offset = r.u64()
		infos = append(infos, in)
	}
	if r.err != nil {
		return nil, r.err
	}
	base := (uint64(r.off) + align - 1) / align * align
	out := map[string]ggufTensor{}
	for _, in := range infos {
		n := uint64(1)
		for _, d := range in.shape {
			n *= d
		}
		size, err := quant.RowBytes(in.typ, int(n))
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %s: %w", in.name, err)
		}
		start := base + in.offset
		if start+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("gguf: tensor %s out of range", in.name)
		}
		out[in.name] = ggufTensor{in.name, in.shape, in.typ, b[start : start+uint64(size)]}
	}
	return out, nil
}

// testdata returns the shared test data directory or skips the test.
func testdata(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("QSF_TESTDATA")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "models", "gguf")); err != nil {
		t.Skipf("test data not found at %q (set QSF_TESTDATA): %v", dir, err)
	}
	return dir
}

func loadModel(t *testing.T, name string) map[string]ggufTensor {
	t.Helper()
	m, err := readGGUF(filepath.Join(testdata(t), "models", "gguf", name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}
