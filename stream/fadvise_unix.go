//go:build linux

package stream

import "golang.org/x/sys/unix"

// dropPages tells the kernel the range will not be needed again soon.
func dropPages(fd int, off, n int64) { _ = unix.Fadvise(fd, off, n, unix.FADV_DONTNEED) }

// willNeed asks the kernel to start reading the range into the page cache
// (asynchronously).
func willNeed(fd int, off, n int64) { _ = unix.Fadvise(fd, off, n, unix.FADV_WILLNEED) }

// cacheProbe asks the kernel how much of a file range is in the page
// cache, with cachestat(2) (Linux 6.5), which starts no I/O.
type cacheProbe struct {
	r  unix.CachestatRange
	st unix.Cachestat_t
}

// cachedBytes returns the bytes of [off, off+n) in the page cache (0 when
// the kernel cannot tell).
func (p *cacheProbe) cachedBytes(fd int, off, n int64) int64 {
	p.r = unix.CachestatRange{Off: uint64(off), Len: uint64(n)}
	if err := unix.Cachestat(uint(fd), &p.r, &p.st, 0); err != nil {
		return 0
	}
	return int64(p.st.Cache) * int64(unix.Getpagesize())
}
