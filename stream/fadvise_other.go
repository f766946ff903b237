//go:build !linux

package stream

func dropPages(fd int, off, n int64) {}
