//go:build linux

package stream

import "golang.org/x/sys/unix"

// dropPages tells the kernel the range will not be needed again soon.
func dropPages(fd int, off, n int64) { _ = unix.Fadvise(fd, off, n, unix.FADV_DONTNEED) }

// adviseWillNeed asks the kernel to read the range ahead into the page
// cache (asynchronously; the pages are not on the process's account).
func adviseWillNeed(fd int, off, n int64) { _ = unix.Fadvise(fd, off, n, unix.FADV_WILLNEED) }
