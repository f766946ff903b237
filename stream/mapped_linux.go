//go:build linux

package stream

import (
	"os"

	"golang.org/x/sys/unix"
)

// Mapped streaming: instead of copying each piece into the ring with
// pread, the reader maps the file once and, for each piece, asks the
// kernel to start reading it (MADV_WILLNEED) and to map its pages into the
// process (MADV_POPULATE_READ, Linux 5.14), so the forward pass reads the
// page cache in place. When the forward pass has released a piece, the
// reader unmaps its pages (MADV_DONTNEED: they leave the process's
// resident set, not the page cache). The ring then holds no bytes: its
// capacity only bounds the pages mapped at once, as it bounds the bytes
// held in copy mode, so the resident set is the same while a warm token
// costs page-table updates (about 30 ms per GB here) instead of a memory
// copy of every weight (150–200 ms per GB).

// mapFile maps f read-only, or returns nil when that is not possible.
func mapFile(f *os.File) []byte {
	st, err := f.Stat()
	if err != nil || st.Size() <= 0 || st.Size() != int64(int(st.Size())) {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	// A kernel without MADV_POPULATE_READ (before 5.14) cannot map pieces
	// ahead: copy instead.
	first := b[:min(len(b), pageSize)]
	if err := unix.Madvise(first, unix.MADV_POPULATE_READ); err != nil {
		unix.Munmap(b)
		return nil
	}
	unix.Madvise(first, unix.MADV_DONTNEED)
	return b
}

func unmapFile(b []byte) { unix.Munmap(b) }

// populate starts reading b's pages and maps them, waiting for the reads.
func populate(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_ = unix.Madvise(b, unix.MADV_WILLNEED)
	return unix.Madvise(b, unix.MADV_POPULATE_READ)
}

// unmapPages removes b's pages from the process (they stay in the page
// cache).
func unmapPages(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
