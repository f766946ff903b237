//go:build unix

package format

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// mmap maps the first size bytes of f read-only.
func mmap(f *os.File, size int64) ([]byte, error) {
	if int64(int(size)) != size {
		return nil, errors.New("file too large to map")
	}
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func munmap(b []byte) error { return unix.Munmap(b) }
