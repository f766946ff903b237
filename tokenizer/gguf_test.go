package tokenizer

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// testMeta is a minimal GGUF metadata reader for tests: it keeps the
// key/values this package reads and skips the rest.
type testMeta map[string]any

func (m testMeta) String(k string) (string, bool)    { v, ok := m[k].(string); return v, ok }
func (m testMeta) Bool(k string) (bool, bool)        { v, ok := m[k].(bool); return v, ok }
func (m testMeta) Strings(k string) ([]string, bool) { v, ok := m[k].([]string); return v, ok }
func (m testMeta) Float32s(k string) ([]float32, bool) {
	v, ok := m[k].([]float32)
	return v, ok
}
func (m testMeta) Int32s(k string) ([]int32, bool) { v, ok := m[k].([]int32); return v, ok }
func (m testMeta) Uint(k string) (uint64, bool) {
	switch v := m[k].(type) {
	case uint64:
		return v, true
	case int64:
		if v >= 0 {
			return uint64(v), true
		}
	}
	return 0, false
}

type ggufReader struct {
	r   io.Reader
	err error
}

func (g *ggufReader) u32() uint32 {
	var b [4]byte
	if _, err := io.ReadFull(g.r, b[:]); err != nil && g.err == nil {
		g.err = err
	}
	return binary.LittleEndian.Uint32(b[:])
}

func (g *ggufReader) u64() uint64 {
	var b [8]byte
	if _, err := io.ReadFull(g.r, b[:]); err != nil && g.err == nil {
		g.err = err
	}
	return binary.LittleEndian.Uint64(b[:])
}

func (g *ggufReader) str() string {
	n := g.u64()
	if n > 1<<24 || g.err != nil {
		g.err = fmt.Errorf("bad string length %d", n)
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(g.r, b); err != nil && g.err == nil {
		g.err = err
	}
	return string(b)
}

func (g *ggufReader) scalar(t uint32) any {
	switch t {
	case 0, 1, 7: // u8, i8, bool
		var b [1]byte
		io.ReadFull(g.r, b[:])
		if t == 7 {
			return b[0] != 0
		}
		if t == 1 {
			return int64(int8(b[0]))
		}
		return uint64(b[0])
	case 2, 3:
		var b [2]byte
		io.ReadFull(g.r, b[:])
		if t == 3 {
			return int64(int16(binary.LittleEndian.Uint16(b[:])))
		}
		return uint64(binary.LittleEndian.Uint16(b[:]))
	case 4:
		return uint64(g.u32())
	case 5:
		return int64(int32(g.u32()))
	case 6:
		return math.Float32frombits(g.u32())
	case 8:
		return g.str()
	case 10:
		return g.u64()
	case 11:
		return int64(g.u64())
	case 12:
		return math.Float64frombits(g.u64())
	}
	g.err = fmt.Errorf("bad type %d", t)
	return nil
}

func readTestGGUF(path string) (testMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g := &ggufReader{r: bufioReader(f)}
	if g.u32() != 0x46554747 {
		return nil, fmt.Errorf("not gguf")
	}
	g.u32()
	g.u64()
	nkv := g.u64()
	m := testMeta{}
	for i := uint64(0); i < nkv && g.err == nil; i++ {
		k := g.str()
		t := g.u32()
		if t != 9 {
			m[k] = g.scalar(t)
			continue
		}
		et := g.u32()
		n := g.u64()
		if n > 1<<26 {
			return nil, fmt.Errorf("array too long")
		}
		switch et {
		case 8:
			a := make([]string, n)
			for j := range a {
				a[j] = g.str()
			}
			m[k] = a
		case 6:
			a := make([]float32, n)
			for j := range a {
				a[j] = math.Float32frombits(g.u32())
			}
			m[k] = a
		case 5:
			a := make([]int32, n)
			for j := range a {
				a[j] = int32(g.u32())
			}
			m[k] = a
		default:
			for j := uint64(0); j < n; j++ {
				g.scalar(et)
			}
		}
	}
	return m, g.err
}

// testdata returns the shared test-data directory or skips the test.
func testdata(t testing.TB) string {
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
	if _, err := os.Stat(filepath.Join(dir, "models")); err != nil {
		t.Skipf("test data not found at %q (set QSF_TESTDATA): %v", dir, err)
	}
	return dir
}

func loadGGUFTokenizer(t testing.TB, path string) *Tokenizer {
	t.Helper()
	md, err := readTestGGUF(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tok, err := FromGGUF(md)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tok
}
