//go:build !linux

package stream

import (
	"errors"
	"os"
)

// Mapped streaming needs Linux's MADV_POPULATE_READ; elsewhere pieces are
// copied into the ring.

func mapFile(*os.File) []byte { return nil }
func unmapFile([]byte)        {}
func populate([]byte) error   { return errors.New("stream: mapping not supported") }
func unmapPages([]byte)       {}
