package stream

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// ErrClosed is returned by a Source used after Close.
var ErrClosed = errors.New("stream: source closed")

// Options control a Source.
type Options struct {
	// RingBytes is the capacity of the ring the layers' matrices and the
	// LM head chunks are read into. 0 means two layers (2·LayerBytes),
	// with which the reader works up to a whole layer ahead; the smallest
	// ring is MinRingBytes. With about one layer (and alike layers) the
	// reader loads each matrix of the next layer into the space the same
	// matrix of the current one leaves, while the rest of it computes.
	RingBytes int
	// EmbedRows is the number of token embedding rows kept in the LRU
	// (at least 1).
	EmbedRows int
	// HeadResident reads the LM head once into the arena instead of
	// streaming it through the ring every token.
	HeadResident bool
	// DropPageCache calls posix_fadvise(DONTNEED) on every range read, so
	// the file's pages do not stay in the page cache on our account.
	DropPageCache bool
	// VerifyCRC checks the CRC of every QSF layer record read. An
	// uncompressed record, read a matrix at a time, is checked when its
	// last matrix is in, from the matrices' CRCs and those of the bytes
	// between them (taken by NewLayout).
	VerifyCRC bool
	// Copy reads every piece into the ring with pread even where the file
	// could be mapped instead (an uncompressed file on Linux 5.14 or
	// later, with a ring 6 MiB larger than its smallest; see
	// mapped_linux.go).
	Copy bool
	// SplitBytes is the size above which (twice it) a copied piece whose
	// pages are in the page cache is read in two halves at once, by the
	// I/O goroutine and a helper. 0 means 1 MiB.
	SplitBytes int
}

// Ring returns the ring capacity a Source opened with o on lay uses.
func (o Options) Ring(lay *Layout) int {
	n := o.RingBytes
	if n <= 0 {
		n = 2 * lay.maxLayer
	}
	return alignUp(max(n, lay.MinRingBytes()))
}

// Stats are a Source's I/O counters since it was opened (or ResetStats).
type Stats struct {
	BytesRead int64         // bytes read from the file
	Reads     int64         // pieces loaded (a layer's stage, a compressed layer, a head chunk)
	IOTime    time.Duration // time the I/O goroutine spent reading and decompressing
	Wait      time.Duration // time the forward pass waited for a piece
	Stalls    int64         // pieces the forward pass had to wait for
	Misses    int64         // reads started on demand (the reader was not ahead: first use, after an error)
}

// Source streams the weights of one Layout for one session through a
// ring buffer. It implements model.WeightSource. Its methods other than
// Stats must be called from one goroutine.
//
// The I/O goroutine writes the pieces (see piece) in the order the
// forward pass uses them into the ring, each contiguous (one that does not
// fit before the ring's end starts at its beginning), and only into bytes
// the forward pass has released; the forward pass releases pieces in order
// as soon as it is done with them. Both sides count bytes monotonically
// (written W, released R, W−R ≤ capacity) and publish them with atomics;
// a side blocks on a channel only when it must wait.
type Source struct {
	lay      *Layout
	opts     Options
	file     *os.File
	fd       int
	minSplit int // Options.SplitBytes, or its default

	ring    []byte
	chunks  int // head chunks streamed (0 when resident)
	rows    int // head rows per chunk
	heads   []model.Tensor
	blocks  []model.Block // per layer: the template, with the acquired matrices' data
	comp    []byte
	conv    []byte // I2_S matrices before their conversion
	headRes model.Tensor
	embd    []byte  // EmbedRows rows
	slotOf  []int32 // per token: LRU slot + 1, 0 when absent
	slotTok []int32
	lastUse []uint64
	clock   uint64

	// The forward pass's side.
	logits     bool
	tok        int64 // tokens begun
	running    bool  // the I/O goroutine is producing
	broken     bool  // a read failed: start over at the next acquisition
	expU, expP int   // the piece expected next
	taken      int64 // descriptors taken
	held       [maxHeld]heldPiece
	nheld      int
	closed     bool

	// Shared between the two sides.
	descs     []desc       // published pieces, a ring of len(descs)
	published atomic.Int64 // descriptors published
	takenA    atomic.Int64 // = taken, for the I/O goroutine
	released  atomic.Int64 // ring bytes released (R)
	begun     atomic.Int64 // = tok
	logitsOf  [2]atomic.Bool
	epoch     atomic.Int64 // changed to stop the I/O goroutine
	cWait     atomic.Bool  // the forward pass sleeps on cWake
	pWait     atomic.Bool  // the I/O goroutine sleeps on pWake
	cWake     chan struct{}
	pWake     chan struct{}
	start     chan startCmd
	stopped   chan struct{}

	// The I/O goroutine's side.
	jobs     chan readJob // to the read helper
	jobDone  chan error
	headSpan [1]span
	probe    cacheProbe
	wg       sync.WaitGroup
	crcTable *crc32.Table
	// Uncompressed QSF records: the CRC of each matrix of each layer as
	// last read, and which of them were read since the layer's last check.
	matCRC  [][]uint32
	crcRead []uint32
	crcDone []bool // mapped: the layer's CRC was checked once

	ringCap int // the ring's capacity (len(ring) when copying)

	// Mapped mode (mapped != nil, no ring allocated): the file's mapping
	// and the pieces mapped and not yet unmapped, oldest first (the I/O
	// goroutine's).
	mapped  []byte
	mapq    []mapEntry
	mapqAt  int
	mapqLen int

	bytesRead, reads, ioNanos, waitNanos, stalls, misses atomic.Int64
}

// mapEntry is a mapped piece: piece p of unit u, whose ring space ends at
// end.
type mapEntry struct {
	end  int64
	u, p int32
}

// desc says where a published piece lies in the ring.
type desc struct {
	unit, piece int32
	off         int
	end         int64 // W after the piece
	err         error
}

// heldPiece is a piece the forward pass acquired.
type heldPiece struct {
	unit, piece int32
	end         int64
	done        bool // released, waiting for earlier pieces
}

// maxHeld bounds the pieces acquired and not released at once (the
// forward pass holds one).
const maxHeld = 8

type startCmd struct {
	unit, piece int
	tok, epoch  int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Open starts streaming lay from the file at path. Every buffer comes from
// a (whose free space must cover BufferBytes).
func Open(lay *Layout, path string, a *arena.Arena, opts Options) (*Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s := &Source{lay: lay, opts: opts, file: f, fd: int(f.Fd()), crcTable: castagnoli}
	if !opts.Copy && lay.maxStored == 0 && lay.maxConv == 0 && opts.Ring(lay)-MapSlack >= lay.MinRingBytes() {
		// Mapped pieces need MapSlack beyond the largest piece for the
		// pages the kernel maps past their ends; a smaller ring copies.
		s.mapped = mapFile(f)
	}
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
	s.blocks = make([]model.Block, len(lay.layers))
	copy(s.blocks, lay.Weights.Blocks)
	s.minSplit = cmp.Or(opts.SplitBytes, defaultSplit)
	if opts.VerifyCRC {
		s.matCRC = make([][]uint32, len(lay.layers))
		s.crcRead = make([]uint32, len(lay.layers))
		s.crcDone = make([]bool, len(lay.layers))
		for l := range lay.layers {
			s.matCRC[l] = make([]uint32, lay.layers[l].nmats)
		}
	}
	s.startIO()
	return s, nil
}

// startIO starts the I/O goroutine and the read helper.
func (s *Source) startIO() {
	n := 1 + s.chunks
	for i := range s.lay.layers {
		n += len(s.lay.layers[i].pieces)
	}
	s.descs = make([]desc, n)
	if s.mapped != nil {
		s.mapq = make([]mapEntry, n+maxHeld+1)
	}
	s.cWake = make(chan struct{}, 1)
	s.pWake = make(chan struct{}, 1)
	s.start = make(chan startCmd)
	s.stopped = make(chan struct{}, 1)
	s.jobs = make(chan readJob, 1)
	s.jobDone = make(chan error, 1)
	s.wg.Add(2)
	go s.loop()
	go s.helper()
}

// BufferBytes returns the arena space Open takes with these options.
func BufferBytes(lay *Layout, opts Options) int64 {
	r := func(n int64) int64 { return (n + arena.Align - 1) &^ (arena.Align - 1) }
	rows := max(opts.EmbedRows, 1)
	hp := &lay.Hparams
	n := r(int64(opts.Ring(lay))) + r(int64(lay.maxStored)) + r(int64(lay.maxConv)) +
		r(int64(rows*lay.embdRowBytes)) + r(int64(hp.Vocab)*4) + 2*r(int64(rows)*4) + r(int64(rows)*8)
	if opts.HeadResident {
		total, _ := lay.HeadBytes()
		n += r(total)
	}
	return n
}

func (s *Source) alloc(a *arena.Arena) error {
	lay := s.lay
	var err error
	get := func(name string, n int) []byte {
		if err != nil {
			return nil
		}
		var b []byte
		b, err = a.Alloc(name, n)
		return b
	}
	s.ringCap = s.opts.Ring(lay)
	if s.mapped == nil {
		s.ring = get("ring buffer", s.ringCap)
	}
	if lay.maxStored > 0 {
		s.comp = get("decompression buffer", lay.maxStored)
	}
	if lay.maxConv > 0 {
		s.conv = get("I2_S conversion buffer", lay.maxConv)
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
		s.rows = lay.HeadChunkRows(s.ringCap)
		if s.rows < 1 {
			return fmt.Errorf("%w: an LM head row (%d bytes) is larger than the ring", ErrLayout, lay.headRowBytes)
		}
		s.chunks = (lay.Hparams.Vocab + s.rows - 1) / s.rows
		s.heads = make([]model.Tensor, s.chunks)
		for c := range s.heads {
			lo, hi := s.headRange(c)
			s.heads[c] = lay.Weights.Output
			s.heads[c].Rows = hi - lo
		}
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
	return nil
}

// headRange returns the rows of head chunk c.
func (s *Source) headRange(c int) (lo, hi int) {
	lo = c * s.rows
	return lo, min(lo+s.rows, s.lay.Hparams.Vocab)
}

// RingBytes returns the capacity of the ring.
func (s *Source) RingBytes() int { return s.ringCap }

// Mapped reports whether the Source maps the file's pages in place
// instead of copying them into the ring.
func (s *Source) Mapped() bool { return s.mapped != nil }

// Units: layers 0..L-1, then head chunks L..L+chunks-1; a layer has the
// pieces of its Layout, a head chunk one.
func (s *Source) layers() int { return s.lay.Hparams.Layers }

// after returns the piece read after piece p of unit u; logits says
// whether the token computes its LM head.
func (s *Source) after(u, p int, logits bool) (int, int) {
	L := s.layers()
	switch {
	case u < L && p+1 < len(s.lay.layers[u].pieces):
		return u, p + 1
	case u < L-1:
		return u + 1, 0
	case u == L-1 && logits && s.chunks > 0:
		return L, 0
	case u >= L && u+1 < L+s.chunks:
		return u + 1, 0
	}
	return 0, 0
}

// pieceBytes returns the ring bytes of piece p of unit u.
func (s *Source) pieceBytes(u, p int) int {
	if u < s.layers() {
		return s.lay.layers[u].pieces[p].bytes
	}
	lo, hi := s.headRange(u - s.layers())
	return alignUp((hi - lo) * s.lay.headRowBytes)
}

// Begin implements model.WeightSource.
func (s *Source) Begin(logits bool) {
	s.logits = logits
	s.tok++
	s.logitsOf[s.tok&1].Store(logits)
	s.begun.Store(s.tok)
	s.wakeProducer()
}

// Acquire implements model.WeightSource.
func (s *Source) Acquire(l int, st model.Stage) (*model.Block, error) {
	if l < 0 || l >= s.layers() || st < 0 || st >= model.NumStages {
		return nil, fmt.Errorf("stream: no stage %d of layer %d", st, l)
	}
	lu := &s.lay.layers[l]
	p := int(lu.stage[st])
	b := &s.blocks[l]
	if s.holds(l, p) {
		return b, nil // acquired with an earlier stage
	}
	off, err := s.take(l, p)
	if err != nil {
		return nil, err
	}
	fields := b.Matrices()
	pc := &lu.pieces[p]
	for i, m := range pc.mats {
		if s.mapped != nil {
			o := pc.spans[i].off // the spans of a layer piece are its matrices
			fields[m.field].Data = s.mapped[o : o+int64(m.size) : o+int64(m.size)]
			continue
		}
		fields[m.field].Data = s.ring[off+m.bufOff : off+m.bufOff+m.size : off+m.bufOff+m.size]
	}
	return b, nil
}

// Release implements model.WeightSource.
func (s *Source) Release(l int, st model.Stage) {
	if l < 0 || l >= s.layers() || st < 0 || st >= model.NumStages {
		return
	}
	lu := &s.lay.layers[l]
	p := int(lu.stage[st])
	if lu.pieces[p].last == st {
		s.release(l, p)
	}
}

// HeadChunks implements model.WeightSource: a resident head is one chunk.
func (s *Source) HeadChunks() int {
	if s.opts.HeadResident {
		return 1
	}
	return s.chunks
}

// Head implements model.WeightSource.
func (s *Source) Head(c int) (*model.Tensor, int, error) {
	if s.opts.HeadResident {
		return &s.headRes, 0, nil
	}
	if c < 0 || c >= s.chunks {
		return nil, 0, fmt.Errorf("stream: no LM head chunk %d", c)
	}
	off, err := s.take(s.layers()+c, 0)
	if err != nil {
		return nil, 0, err
	}
	t := &s.heads[c]
	n := t.Rows * s.lay.headRowBytes
	lo, _ := s.headRange(c)
	if s.mapped != nil {
		o := s.lay.headOff + int64(lo*s.lay.headRowBytes)
		t.Data = s.mapped[o : o+int64(n) : o+int64(n)]
	} else {
		t.Data = s.ring[off : off+n : off+n]
	}
	return t, lo, nil
}

// ReleaseHead implements model.WeightSource.
func (s *Source) ReleaseHead(c int) {
	if !s.opts.HeadResident {
		s.release(s.layers()+c, 0)
	}
}

// Stats returns the I/O counters. It may be called from any goroutine.
func (s *Source) Stats() Stats {
	return Stats{
		BytesRead: s.bytesRead.Load(), Reads: s.reads.Load(), Misses: s.misses.Load(), Stalls: s.stalls.Load(),
		IOTime: time.Duration(s.ioNanos.Load()), Wait: time.Duration(s.waitNanos.Load()),
	}
}

// ResetStats zeroes the I/O counters.
func (s *Source) ResetStats() {
	s.bytesRead.Store(0)
	s.reads.Store(0)
	s.misses.Store(0)
	s.stalls.Store(0)
	s.ioNanos.Store(0)
	s.waitNanos.Store(0)
}

// Close stops the I/O goroutine (after the read it may be doing) and
// closes the file. The arena's buffers are the caller's to release
// afterwards.
func (s *Source) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.stop()
	close(s.start)
	close(s.jobs)
	s.wg.Wait()
	if s.mapped != nil {
		s.unmapReleased(true)
		unmapFile(s.mapped)
		s.mapped = nil
	}
	return s.file.Close()
}

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
