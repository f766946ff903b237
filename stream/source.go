package stream

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// Options control a Source.
type Options struct {
	// Prefetch uses two layer buffers: the I/O goroutine reads the next
	// layer while the current one computes. Without it one buffer is used
	// and every read is waited for.
	Prefetch bool
	// EmbedRows is the number of token embedding rows kept in the LRU
	// (at least 1).
	EmbedRows int
	// HeadResident reads the LM head once into the arena instead of
	// streaming it through the layer buffers every token.
	HeadResident bool
	// DropPageCache calls posix_fadvise(DONTNEED) on every range read, so
	// the file's pages do not stay in the page cache on our account.
	DropPageCache bool
	// VerifyCRC checks the CRC of every QSF layer record read.
	VerifyCRC bool
}

// Stats are a Source's I/O counters since it was opened (or ResetStats).
type Stats struct {
	BytesRead int64         // bytes read from the file
	Reads     int64         // units (layers, head chunks) loaded
	IOTime    time.Duration // time the I/O goroutine spent reading and decompressing
	Wait      time.Duration // time the forward pass waited for a unit
	Misses    int64         // units not prefetched (read on demand)
}

type buffer struct {
	data    []byte
	unit    int // unit held or being loaded, -1 for none
	pending bool
	done    chan error
	block   model.Block
	head    model.Tensor
	row0    int
}

type request struct{ unit, buf int }

// readJob is a share of a unit's reads handed to the read helper: the
// bytes [lo, hi) of spans, concatenated, read into dst.
type readJob struct {
	dst    []byte
	spans  []span
	lo, hi int
}

// Parallel reads: a unit of at least 2*minSplit bytes whose pages are in
// the page cache is read by the I/O goroutine and the read helper at
// once, each taking half of its bytes (a page-cache copy is bound by one
// core's copy speed). A unit on the disk is read with one sequential
// pread, which the kernel's readahead serves best.
var minSplit = 1 << 20

// Source streams the weights of one Layout for one session. It
// implements model.WeightSource. Its methods other than Stats must be
// called from one goroutine.
type Source struct {
	lay  *Layout
	opts Options
	file *os.File
	fd   int

	bufs     [2]buffer
	nbuf     int
	inUse    int // buffer index held by the forward pass, -1
	logits   bool
	chunks   int // head chunks streamed (0 when resident)
	rows     int // head rows per chunk
	comp     []byte
	headRes  model.Tensor
	embd     []byte  // EmbedRows rows
	slotOf   []int32 // per token: LRU slot + 1, 0 when absent
	slotTok  []int32
	lastUse  []uint64
	clock    uint64
	tmpRow   []byte
	req      chan request
	jobs     chan readJob // to the read helper
	jobDone  chan error
	headSpan [1]span    // the head chunk being read (I/O goroutine only)
	probe    cacheProbe // I/O goroutine only
	wg       sync.WaitGroup
	closed   bool
	crcTable *crc32.Table

	bytesRead, reads, ioNanos, waitNanos, misses atomic.Int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Open starts streaming lay from the file at path. Every buffer comes from
// a (whose free space must cover BufferBytes).
func Open(lay *Layout, path string, a *arena.Arena, opts Options) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s := &Source{lay: lay, opts: opts, file: f, fd: int(f.Fd()), inUse: -1, crcTable: castagnoli}
	if err := s.alloc(a); err != nil {
		f.Close()
		return nil, err
	}
	if opts.HeadResident {
		if err := s.readHead(a); err != nil {
			f.Close()
			return nil, err
		}
	}
	s.req = make(chan request, 2)
	s.jobs = make(chan readJob, 1)
	s.jobDone = make(chan error, 1)
	s.wg.Add(2)
	go s.loop()
	go s.helper()
	return s, nil
}

// BufferBytes returns the arena space Open takes with these options.
func BufferBytes(lay *Layout, opts Options) int64 {
	r := func(n int64) int64 { return (n + arena.Align - 1) &^ (arena.Align - 1) }
	nbuf := int64(1)
	if opts.Prefetch {
		nbuf = 2
	}
	rows := max(opts.EmbedRows, 1)
	hp := &lay.Hparams
	n := nbuf*r(int64(lay.maxLayer)) + r(int64(lay.maxStored)) +
		r(int64(rows*lay.embdRowBytes)) + r(int64(hp.Vocab)*4) + 2*r(int64(rows)*4) + r(int64(rows)*8)
	if opts.HeadResident {
		total, _ := lay.HeadBytes()
		n += r(total)
	}
	return n
}

func (s *Source) alloc(a *arena.Arena) error {
	lay := s.lay
	s.nbuf = 1
	if s.opts.Prefetch {
		s.nbuf = 2
	}
	var err error
	get := func(name string, n int) []byte {
		if err != nil {
			return nil
		}
		var b []byte
		b, err = a.Alloc(name, n)
		return b
	}
	for i := range s.nbuf {
		s.bufs[i].data = get(fmt.Sprintf("layer buffer %d", i), lay.maxLayer)
		s.bufs[i].unit = -1
		s.bufs[i].done = make(chan error, 1)
	}
	if lay.maxStored > 0 {
		s.comp = get("decompression buffer", lay.maxStored)
	}
	rows := max(s.opts.EmbedRows, 1)
	s.embd = get("embedding rows", rows*lay.embdRowBytes)
	s.slotOf = int32s(get("embedding index", lay.Hparams.Vocab*4))
	s.slotTok = int32s(get("embedding slots", rows*4))
	s.lastUse = uint64s(get("embedding lru", rows*8))
	if err != nil {
		return err
	}
	if !s.opts.HeadResident {
		s.rows = lay.HeadChunkRows(lay.maxLayer)
		if s.rows < 1 {
			return fmt.Errorf("%w: an LM head row (%d bytes) is larger than a layer buffer", ErrLayout, lay.headRowBytes)
		}
		s.chunks = (lay.Hparams.Vocab + s.rows - 1) / s.rows
	}
	return nil
}

// readHead reads the whole LM head into the arena.
func (s *Source) readHead(a *arena.Arena) error {
	total, _ := s.lay.HeadBytes()
	b, err := a.Alloc("lm head", int(total))
	if err != nil {
		return err
	}
	if err := s.pread(b, s.lay.headOff); err != nil {
		return fmt.Errorf("stream: LM head: %w", err)
	}
	s.headRes = s.lay.Weights.Output
	s.headRes.Data = b
	s.chunks = 1
	s.rows = s.lay.Hparams.Vocab
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
// helper when they are large.
func (s *Source) readUnit(dst []byte, spans []span) error {
	total := 0
	for _, sp := range spans {
		total += sp.size
	}
	half := (total / 2) &^ 4095
	if total < 2*minSplit || !s.cached(spans, total) {
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
	lo, hi := spans[0].off, spans[0].off
	for _, sp := range spans {
		lo, hi = min(lo, sp.off), max(hi, sp.off+int64(sp.size))
	}
	return s.probe.cachedBytes(s.fd, lo, hi-lo) >= int64(total)-int64(total)/16
}

// headRange returns the rows of head chunk c.
func (s *Source) headRange(c int) (lo, hi int) {
	lo = c * s.rows
	return lo, min(lo+s.rows, s.lay.Hparams.Vocab)
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

// units: layers 0..L-1, then head chunks L..L+chunks-1.
func (s *Source) layers() int { return s.lay.Hparams.Layers }

// loop is the I/O goroutine.
func (s *Source) loop() {
	defer s.wg.Done()
	for r := range s.req {
		t0 := time.Now()
		err := s.load(r.unit, &s.bufs[r.buf])
		s.ioNanos.Add(int64(time.Since(t0)))
		s.reads.Add(1)
		s.bufs[r.buf].done <- err
	}
}

// load reads unit u into b (on the I/O goroutine).
func (s *Source) load(u int, b *buffer) error {
	lay := s.lay
	if u >= s.layers() {
		lo, hi := s.headRange(u - s.layers())
		n := (hi - lo) * lay.headRowBytes
		s.headSpan[0] = span{off: lay.headOff + int64(lo*lay.headRowBytes), size: n}
		if err := s.readUnit(b.data, s.headSpan[:]); err != nil {
			return fmt.Errorf("stream: LM head rows %d..%d: %w", lo, hi, err)
		}
		b.head = lay.Weights.Output
		b.head.Rows = hi - lo
		b.head.Data = b.data[:n:n]
		b.row0 = lo
		return nil
	}
	lu := &lay.layers[u]
	if lu.qsf {
		e := &lu.entry
		stored := b.data[:e.StoredSize]
		if e.Compression != format.CompressNone {
			stored = s.comp[:e.StoredSize]
		}
		if err := s.readUnit(stored, lu.spans); err != nil {
			return fmt.Errorf("stream: layer %d: %w", u, err)
		}
		if s.opts.VerifyCRC {
			if crc := crc32.Checksum(stored, s.crcTable); crc != e.CRC {
				return fmt.Errorf("stream: layer %d: %w: CRC %#08x, computed %#08x", u, format.ErrChecksum, e.CRC, crc)
			}
		}
		if e.Compression != format.CompressNone {
			n, err := lz4.UncompressBlock(stored, b.data[:e.Size])
			if err != nil || n != int(e.Size) {
				return fmt.Errorf("stream: layer %d: %w: LZ4 data does not decompress to %d bytes", u, format.ErrCorrupt, e.Size)
			}
		}
	} else {
		if err := s.readUnit(b.data, lu.spans); err != nil {
			return fmt.Errorf("stream: layer %d: %w", u, err)
		}
	}
	lu.once.Do(func() {
		for _, v := range lu.vecs {
			tr, err := quant.Lookup(v.typ)
			if err == nil {
				tr.Dequantize(v.dst, b.data[v.bufOff:v.bufOff+v.size])
			}
		}
	})
	b.block = lay.Weights.Blocks[u]
	fields := b.block.Matrices()
	for _, m := range lu.mats {
		fields[m.field].Data = b.data[m.bufOff : m.bufOff+m.size : m.bufOff+m.size]
	}
	return nil
}

// next predicts the unit after u.
func (s *Source) next(u int) int {
	L := s.layers()
	switch {
	case u < L-1:
		return u + 1
	case u == L-1 && s.logits && s.opts.HeadResident == false && s.chunks > 0:
		return L
	case u >= L && u < L+s.chunks-1:
		return u + 1
	}
	return 0
}

// acquire returns the buffer holding unit u, loading it if needed, and
// starts the prefetch of the unit after it.
func (s *Source) acquire(u int) (*buffer, error) {
	if s.closed {
		return nil, errors.New("stream: source closed")
	}
	bi := -1
	for i := range s.nbuf {
		if s.bufs[i].unit == u {
			bi = i
		}
	}
	if bi < 0 {
		s.misses.Add(1)
		bi = 0
		if s.nbuf == 2 && s.inUse == 0 {
			bi = 1
		}
		s.request(u, bi)
	}
	b := &s.bufs[bi]
	if b.pending {
		t0 := time.Now()
		err := <-b.done
		s.waitNanos.Add(int64(time.Since(t0)))
		b.pending = false
		if err != nil {
			b.unit = -1
			return nil, err
		}
	}
	s.inUse = bi
	if s.nbuf == 2 {
		s.request(s.next(u), 1-bi)
	}
	return b, nil
}

// request starts loading unit u into buffer bi (after any load pending on
// it), unless it already holds u.
func (s *Source) request(u, bi int) {
	b := &s.bufs[bi]
	if b.unit == u {
		return
	}
	if b.pending {
		<-b.done
		b.pending = false
	}
	b.unit, b.pending = u, true
	s.req <- request{u, bi}
}

func (s *Source) release() { s.inUse = -1 }

// Begin implements model.WeightSource.
func (s *Source) Begin(logits bool) { s.logits = logits }

// Block implements model.WeightSource.
func (s *Source) Block(l int) (*model.Block, error) {
	b, err := s.acquire(l)
	if err != nil {
		return nil, err
	}
	return &b.block, nil
}

// Release implements model.WeightSource.
func (s *Source) Release(int) { s.release() }

// HeadChunks implements model.WeightSource.
func (s *Source) HeadChunks() int { return s.chunks }

// Head implements model.WeightSource.
func (s *Source) Head(c int) (*model.Tensor, int, error) {
	if s.opts.HeadResident {
		return &s.headRes, 0, nil
	}
	b, err := s.acquire(s.layers() + c)
	if err != nil {
		return nil, 0, err
	}
	return &b.head, b.row0, nil
}

// ReleaseHead implements model.WeightSource.
func (s *Source) ReleaseHead(int) { s.release() }

// Embedding implements model.WeightSource: the row comes from the LRU, or
// from the file with one pread.
func (s *Source) Embedding(dst []float32, token int) error {
	lay := s.lay
	if token < 0 || token >= lay.Hparams.Vocab {
		return fmt.Errorf("stream: token %d outside vocabulary", token)
	}
	tr, err := quant.Lookup(lay.Weights.TokenEmbd.Type)
	if err != nil {
		return err
	}
	rb := lay.embdRowBytes
	if s.opts.HeadResident && lay.Weights.TiedOutput {
		tr.Dequantize(dst[:lay.Hparams.Embd], s.headRes.Data[token*rb:(token+1)*rb])
		return nil
	}
	s.clock++
	slot := int(s.slotOf[token]) - 1
	if slot < 0 {
		slot = 0
		for i, t := range s.lastUse {
			if t < s.lastUse[slot] {
				slot = i
			}
			if t == 0 {
				break
			}
		}
		if s.lastUse[slot] != 0 {
			s.slotOf[s.slotTok[slot]] = 0
		}
		if err := s.pread(s.embd[slot*rb:(slot+1)*rb], lay.embdOff+int64(token)*int64(rb)); err != nil {
			s.lastUse[slot] = 0
			return fmt.Errorf("stream: embedding of token %d: %w", token, err)
		}
		s.slotOf[token] = int32(slot + 1)
		s.slotTok[slot] = int32(token)
	}
	s.lastUse[slot] = s.clock
	tr.Dequantize(dst[:lay.Hparams.Embd], s.embd[slot*rb:(slot+1)*rb])
	return nil
}

// Stats returns the I/O counters. It may be called from any goroutine.
func (s *Source) Stats() Stats {
	return Stats{
		BytesRead: s.bytesRead.Load(), Reads: s.reads.Load(), Misses: s.misses.Load(),
		IOTime: time.Duration(s.ioNanos.Load()), Wait: time.Duration(s.waitNanos.Load()),
	}
}

// ResetStats zeroes the I/O counters.
func (s *Source) ResetStats() {
	s.bytesRead.Store(0)
	s.reads.Store(0)
	s.misses.Store(0)
	s.ioNanos.Store(0)
	s.waitNanos.Store(0)
}

// Close stops the I/O goroutine and closes the file. The arena's buffers
// are the caller's to release afterwards.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	for i := range s.nbuf {
		if s.bufs[i].pending {
			<-s.bufs[i].done
			s.bufs[i].pending = false
		}
	}
	close(s.req)
	close(s.jobs)
	s.wg.Wait()
	return s.file.Close()
}
