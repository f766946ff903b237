//go:build !linux

package stream

func dropPages(fd int, off, n int64) {}
func willNeed(fd int, off, n int64)  {}

// cacheProbe cannot see the page cache here: units are read with one
// pread.
type cacheProbe struct{}

func (p *cacheProbe) cachedBytes(fd int, off, n int64) int64 { return 0 }

// preadCached cannot tell what the page cache holds here: it reads
// nothing.
func preadCached(fd int, b []byte, off int64) int { return 0 }
