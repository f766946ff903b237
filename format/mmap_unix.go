//go:build unix

package format

import (
	"errors"
	"os"
	"unsafe"

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

// release tells the kernel the pages wholly inside b, a part of a
// mapping, are not needed: they leave the resident set.
func release(b []byte) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (base+pageSize-1)&^(pageSize-1) - base
	end := (base+uintptr(len(b)))&^(pageSize-1) - base
	if end <= start || end > uintptr(len(b)) { // also when rounding down wrapped
		return
	}
	_ = unix.Madvise(b[start:end], unix.MADV_DONTNEED)
}

var pageSize = uintptr(os.Getpagesize())
