package quant_test

import (
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
)

// loadModel opens the GGUF file models/gguf/name of the test data; it is
// closed when the test ends.
func loadModel(t *testing.T, name string) *format.File {
	t.Helper()
	f, err := format.Open(filepath.Join(testfiles.Dir(t), "models", "gguf", name))
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
