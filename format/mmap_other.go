//go:build !unix && !windows

package format

import (
	"errors"
	"os"
)

// mmap is unavailable on this platform; Open falls back to ReadAt.
func mmap(f *os.File, size int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func munmap(b []byte) error { return nil }

func release(b []byte) {}
