//go:build linux

package stream

import "golang.org/x/sys/unix"

// dropPages tells the kernel the range will not be needed again soon.
func dropPages(fd int, off, n int64) { _ = unix.Fadvise(fd, off, n, unix.FADV_DONTNEED) }

// pageCached reports whether the page at off (read into probe, one
// page-sized buffer) is in the page cache: preadv2(RWF_NOWAIT) returns
// EAGAIN instead of waiting for the disk.
func pageCached(fd int, probe [][]byte, off int64) bool {
	n, err := unix.Preadv2(fd, probe, off, unix.RWF_NOWAIT)
	return err == nil && n > 0
}
