package atomicfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	f, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("final name exists before Commit: %v", err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
	ref, err := os.Create(filepath.Join(dir, "ref"))
	if err != nil {
		t.Fatal(err)
	}
	ref.Close()
	st, _ := os.Stat(path)
	rst, _ := os.Stat(ref.Name())
	if st.Mode() != rst.Mode() {
		t.Errorf("mode %v, want %v as os.Create gives (0666 less umask)", st.Mode(), rst.Mode())
	}
	os.Remove(ref.Name())
	f.Abort() // no effect after Commit
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries, want only the output", len(entries))
	}
}

func TestAbortAndCancel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	ctx, cancel := context.WithCancel(context.Background())
	f, err := Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := f.Write([]byte("b")); !errors.Is(err, context.Canceled) {
		t.Fatalf("write after cancel: %v, want context.Canceled", err)
	}
	if err := f.Commit(); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit after cancel: %v, want context.Canceled", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d entries left, want none", len(entries))
	}
	g, err := Create(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	g.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d entries left after Abort, want none", len(entries))
	}
}
