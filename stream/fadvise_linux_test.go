//go:build linux

package stream

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPreadCached checks that preadCached reads what the page cache holds
// and stops where it does not hold the file.
func TestPreadCached(t *testing.T) {
	want := bytes.Repeat([]byte("expert! "), 1<<16) // 512 KiB
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil { // now cached
		t.Fatal(err)
	}
	clear(got)
	if n := preadCached(fd, got[1000:], 1000); n != len(want)-1000 || !bytes.Equal(got[1000:], want[1000:]) {
		t.Fatalf("cached file: read %d bytes (want %d), equal %v", n, len(want)-1000, bytes.Equal(got[1000:], want[1000:]))
	}
	if a := testing.AllocsPerRun(10, func() { preadCached(fd, got, 0) }); a != 0 {
		t.Errorf("preadCached allocates (%v per call)", a)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	dropPages(fd, 0, int64(len(want)))
	n := preadCached(fd, got, 0)
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err == nil && st.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs: the page cache is the file")
	}
	if n == len(want) {
		t.Fatal("read a file dropped from the page cache whole")
	}
	if n != 0 && !bytes.Equal(got[:n], want[:n]) {
		t.Fatalf("dropped file: the %d bytes read differ", n)
	}
	if preadCached(fd, nil, 0) != 0 {
		t.Fatal("read into nothing")
	}
}
