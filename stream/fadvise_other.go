//go:build !linux

package stream

func dropPages(fd int, off, n int64) {}

func adviseWillNeed(fd int, off, n int64) {}
