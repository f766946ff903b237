//go:build !linux

package stream

func dropPages(fd int, off, n int64) {}
func willNeed(fd int, off, n int64)  {}

// cacheProbe cannot see the page cache here: units are read with one
// pread.
type cacheProbe struct{}

func (p *cacheProbe) cachedBytes(fd int, off, n int64) int64 { return 0 }
