//go:build !linux

package stream

func dropPages(fd int, off, n int64) {}

// pageCached is false where the page cache cannot be probed: units are
// read with one pread.
func pageCached(fd int, probe [][]byte, off int64) bool { return false }
