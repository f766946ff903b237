// Package testfiles locates the shared test data (real model files,
// tokenizer vectors and llama.cpp reference outputs) for tests.
//
// The folder is named by the QSF_TESTDATA environment variable and
// defaults to ../shared beside the repository root. Tests skip with a clear
// message when it is absent.
package testfiles

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared test-data folder, or skips the test when it does
// not exist.
func Dir(t testing.TB) string {
	t.Helper()
	dir, ok := Find()
	if !ok {
		t.Skipf("shared test data not found at %s: set QSF_TESTDATA to the folder holding models/ and reference/", dir)
	}
	return dir
}

// Find returns the test-data folder and whether it exists.
func Find() (string, bool) {
	dir := os.Getenv("QSF_TESTDATA")
	if dir == "" {
		dir = filepath.Join(repoRoot(), "..", "shared")
	}
	st, err := os.Stat(filepath.Join(dir, "models"))
	return dir, err == nil && st.IsDir()
}

// Path joins elem to the test-data folder, skipping the test when the
// folder or the file is absent.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{Dir(t)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("test data file %s not found", p)
	}
	return p
}

// repoRoot walks up from the working directory (a package directory when
// run by go test) to the directory holding go.mod.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}
