package stream

import (
	"fmt"
	"hash/crc32"

	"github.com/pierrec/lz4/v4"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// readJob is a share of a piece's reads handed to the read helper: the
// bytes [lo, hi) of spans, concatenated, read into dst.
type readJob struct {
	dst    []byte
	spans  []span
	lo, hi int
}

// Parallel reads: a piece of at least twice Options.SplitBytes (by
// default defaultSplit) whose pages are in the page cache is read by the
// I/O goroutine and the read helper at once, each taking half of its bytes
// (a page-cache copy is bound by one core's copy speed). A piece on the
// disk is read with sequential preads, which the kernel's readahead serves
// best.
const defaultSplit = 1 << 20

// load reads piece p of unit u into dst, its slot of the ring (on the I/O
// goroutine).
func (s *Source) load(u, p int, dst []byte) error {
	lay := s.lay
	if u >= s.layers() {
		spans := s.spansOf(u, p)
		if err := s.readUnit(dst[:spans[0].size], spans); err != nil {
			lo, hi := s.headRange(u - s.layers())
			return fmt.Errorf("stream: LM head rows %d..%d: %w", lo, hi, err)
		}
		return nil
	}
	lu := &lay.layers[u]
	pc := &lu.pieces[p]
	if !lu.record {
		var err error
		if pc.conv {
			err = s.readConverted(u, p, dst)
		} else {
			err = s.readUnit(dst, pc.spans)
		}
		if err != nil {
			return fmt.Errorf("stream: layer %d: %w", u, err)
		}
		if s.opts.VerifyCRC && lu.crcSegs != nil {
			return s.checkRecord(u, p, dst)
		}
		return nil
	}
	e := &lu.entry
	stored := s.comp[:e.StoredSize]
	if err := s.readUnit(stored, pc.spans); err != nil {
		return fmt.Errorf("stream: layer %d: %w", u, err)
	}
	if s.opts.VerifyCRC {
		if crc := crc32.Checksum(stored, s.crcTable); crc != e.CRC {
			return fmt.Errorf("stream: layer %d: %w: CRC %#08x, computed %#08x", u, format.ErrChecksum, e.CRC, crc)
		}
	}
	if n, err := lz4.UncompressBlock(stored, dst[:e.Size]); err != nil || n != int(e.Size) {
		return fmt.Errorf("stream: layer %d: %w: LZ4 data does not decompress to %d bytes", u, format.ErrCorrupt, e.Size)
	}
	lu.once.Do(func() {
		for _, v := range lu.vecs {
			if tr, err := quant.Lookup(v.typ); err == nil {
				tr.Dequantize(v.dst, dst[v.bufOff:v.bufOff+v.size])
			}
		}
	})
	return nil
}

// checkRecord takes the CRCs of the matrices of piece p of uncompressed
// QSF layer u, just read into dst, and after the layer's last piece checks
// the record's CRC, when every matrix was read since the last check (a
// restart in the middle of a layer skips one check).
func (s *Source) checkRecord(u, p int, dst []byte) error {
	lu := &s.lay.layers[u]
	for _, sp := range lu.pieces[p].spans {
		if sp.conv != nil {
			continue // taken of the file's bytes by readConverted
		}
		s.matCRC[u][sp.mat] = crc32.Checksum(s.spanData(dst, sp), s.crcTable)
		s.crcRead[u] |= 1 << sp.mat
	}
	if p < len(lu.pieces)-1 {
		return nil
	}
	all := s.crcRead[u] == 1<<lu.nmats-1
	s.crcRead[u] = 0
	if !all {
		return nil
	}
	if crc, want := recordCRC(lu.crcSegs, s.matCRC[u]), lu.entry.CRC; crc != want {
		return fmt.Errorf("stream: layer %d: %w: CRC %#08x, computed %#08x", u, format.ErrChecksum, want, crc)
	}
	if s.mapped != nil {
		s.crcDone[u] = true
	}
	return nil
}

// readSpans reads the bytes [lo, hi) of spans, taken end to end, into
// dst at the spans' buffer offsets.
func (s *Source) readSpans(dst []byte, spans []span, lo, hi int) error {
	at := 0
	for _, sp := range spans {
		a, b := max(lo, at), min(hi, at+sp.size)
		if a < b {
			d := sp.bufOff + a - at
			if err := s.pread(dst[d:d+b-a], sp.off+int64(a-at)); err != nil {
				return err
			}
		}
		at += sp.size
	}
	return nil
}

// readUnit reads spans into dst, the second half in parallel on the read
// helper when they are large and in the page cache.
func (s *Source) readUnit(dst []byte, spans []span) error {
	total := 0
	for _, sp := range spans {
		total += sp.size
	}
	half := (total / 2) &^ 4095
	if total < 2*s.minSplit || !s.cached(spans, total) {
		return s.readSpans(dst, spans, 0, total)
	}
	s.jobs <- readJob{dst: dst, spans: spans, lo: half, hi: total}
	err := s.readSpans(dst, spans, 0, half)
	if herr := <-s.jobDone; err == nil {
		err = herr
	}
	return err
}

// helper is the read helper goroutine.
func (s *Source) helper() {
	defer s.wg.Done()
	for j := range s.jobs {
		s.jobDone <- s.readSpans(j.dst, j.spans, j.lo, j.hi)
	}
}

// cached reports whether nearly all of the total bytes of spans are in
// the page cache.
func (s *Source) cached(spans []span, total int) bool {
	var in int64
	for _, sp := range spans {
		in += s.probe.cachedBytes(s.fd, sp.off, int64(sp.size))
	}
	return in >= int64(total)-int64(total)/16
}

func (s *Source) pread(b []byte, off int64) error {
	if _, err := s.file.ReadAt(b, off); err != nil {
		return err
	}
	s.bytesRead.Add(int64(len(b)))
	if s.opts.DropPageCache {
		dropPages(s.fd, off, int64(len(b)))
	}
	return nil
}
