//go:build linux

package stream

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

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

// preadCached reads into b at off only what the page cache holds
// (preadv2 with RWF_NOWAIT, Linux 4.14): it returns the bytes read, from
// the start of b, up to the first page that is not there (0 when the
// kernel cannot tell).
func preadCached(fd int, b []byte, off int64) int {
	if len(b) == 0 {
		return 0
	}
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	const longBits = unix.SizeofLong * 8
	lo, hi := uintptr(off), uintptr(uint64(off)>>(longBits-1)>>1)
	n, _, errno := unix.Syscall6(unix.SYS_PREADV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, lo, hi, unix.RWF_NOWAIT)
	if errno != 0 {
		return 0
	}
	return int(n)
}
