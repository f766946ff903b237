package stream

import (
	"fmt"
	"os"
)

var pageSize = os.Getpagesize()

// spansOf returns the file ranges of piece p of unit u (a head chunk's is
// built in s.headSpan: use it before the next call).
func (s *Source) spansOf(u, p int) []span {
	if u < s.layers() {
		return s.lay.layers[u].pieces[p].spans
	}
	lo, hi := s.headRange(u - s.layers())
	s.headSpan[0] = span{off: s.lay.headOff + int64(lo*s.lay.headRowBytes), size: (hi - lo) * s.lay.headRowBytes}
	return s.headSpan[:]
}

// mapPiece maps the pages of piece p of unit u, whose ring space ends at
// end, reading them from the disk if they are not in the page cache (on
// the I/O goroutine). The CRC of an uncompressed QSF layer is checked the
// first time the layer is mapped; later mappings are the same pages of
// the same file.
func (s *Source) mapPiece(u, p int, end int64) error {
	for _, sp := range s.spansOf(u, p) {
		lo := sp.off &^ int64(pageSize-1)
		hi := min(sp.off+int64(sp.size), int64(len(s.mapped)))
		if err := populate(s.mapped[lo:hi]); err != nil {
			if u >= s.layers() {
				return fmt.Errorf("stream: LM head: %w", err)
			}
			return fmt.Errorf("stream: layer %d: %w", u, err)
		}
		s.bytesRead.Add(int64(sp.size))
	}
	s.mapq[(s.mapqAt+s.mapqLen)%len(s.mapq)] = mapEntry{end: end, u: int32(u), p: int32(p)}
	s.mapqLen++
	if u < s.layers() && s.opts.VerifyCRC && s.lay.layers[u].crcSegs != nil && !s.crcDone[u] {
		return s.checkRecord(u, p, nil)
	}
	return nil
}

// unmapReleased unmaps the mapped pieces the forward pass released, or
// all of them (on the I/O goroutine, or once it stopped). Only the pages
// wholly inside a piece's ranges are unmapped: one shared with the piece
// next to it in the file may still be in use.
func (s *Source) unmapReleased(all bool) {
	released := s.released.Load()
	for s.mapqLen > 0 {
		e := s.mapq[s.mapqAt]
		if !all && e.end > released {
			return
		}
		for _, sp := range s.spansOf(int(e.u), int(e.p)) {
			lo := (sp.off + int64(pageSize-1)) &^ int64(pageSize-1)
			hi := (sp.off + int64(sp.size)) &^ int64(pageSize-1)
			if lo < hi {
				unmapPages(s.mapped[lo:hi])
			}
			if s.opts.DropPageCache {
				dropPages(s.fd, sp.off, int64(sp.size))
			}
		}
		s.mapqAt = (s.mapqAt + 1) % len(s.mapq)
		s.mapqLen--
	}
}

// spanData returns the bytes of span sp of a piece: in the mapping, or
// in dst, the piece's ring slot.
func (s *Source) spanData(dst []byte, sp span) []byte {
	if s.mapped != nil {
		return s.mapped[sp.off : sp.off+int64(sp.size)]
	}
	return dst[sp.bufOff : sp.bufOff+sp.size]
}
