package quant_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/format"
)

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

// loadModel opens the GGUF file models/gguf/name of the test data; it is
// closed when the test ends.
func loadModel(t *testing.T, name string) *format.File {
	t.Helper()
	f, err := format.Open(filepath.Join(testdata(t), "models", "gguf", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// tensorData returns the bytes of tensor ti of f.
func tensorData(t *testing.T, f *format.File, ti *format.TensorInfo) []byte {
	t.Helper()
	b, err := f.TensorData(ti)
	if err != nil {
		t.Fatalf("%s: %v", f.Name(), err)
	}
	return b
}
