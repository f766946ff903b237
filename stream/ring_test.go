package stream

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/model"
)

// ringFixture is a Source over a file of random bytes whose layers have
// pieces of chosen sizes, without a model: the tests drive the ring
// directly (take, release) the way Forward does and check every byte.
type ringFixture struct {
	s    *Source
	file []byte
	path string
}

// newRingFixture builds layers with the given piece sizes (a piece of
// several sizes has one span per size, at random file offsets), a
// streamed LM head of vocab rows of rowBytes, and a ring of ring bytes.
func newRingFixture(t *testing.T, pieces [][][]int, vocab, rowBytes, ring int) *ringFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, uint64(ring)))
	file := make([]byte, 1<<20)
	for i := range file {
		file[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "weights")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	lay := &Layout{Hparams: model.Hparams{Layers: len(pieces), Vocab: vocab}, layers: make([]layerUnit, len(pieces)),
		headOff: int64(len(file) - vocab*rowBytes), headRowBytes: rowBytes}
	for l, ps := range pieces {
		u := &lay.layers[l]
		for i, sizes := range ps {
			pc := piece{first: model.Stage(i), last: model.Stage(i)}
			for _, n := range sizes {
				off := rng.Int64N(int64(len(file) - vocab*rowBytes - n))
				pc.spans = append(pc.spans, span{off: off, bufOff: pc.bytes, size: n})
				pc.bytes += alignUp(n)
			}
			u.pieces = append(u.pieces, pc)
			lay.maxPiece = max(lay.maxPiece, pc.bytes)
			u.bytes += pc.bytes
		}
		lay.maxLayer = max(lay.maxLayer, u.bytes)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Source{lay: lay, file: f, fd: int(f.Fd()), ringCap: Options{RingBytes: ring}.Ring(lay)}
	s.ring = make([]byte, s.ringCap)
	s.rows = lay.HeadChunkRows(s.ringCap)
	s.chunks = (vocab + s.rows - 1) / s.rows
	s.startIO()
	t.Cleanup(func() { s.Close() })
	return &ringFixture{s: s, file: file, path: path}
}

// check takes piece p of unit u, compares it with the file and, when
// release is set, releases it.
func (fx *ringFixture) check(t *testing.T, u, p int, release bool) error {
	t.Helper()
	s := fx.s
	off, err := s.take(u, p)
	if err != nil {
		return err
	}
	if u < s.layers() {
		for _, sp := range s.lay.layers[u].pieces[p].spans {
			if !bytes.Equal(s.ring[off+sp.bufOff:off+sp.bufOff+sp.size], fx.file[sp.off:sp.off+int64(sp.size)]) {
				t.Fatalf("layer %d piece %d: span at file offset %d differs in the ring at %d", u, p, sp.off, off+sp.bufOff)
			}
		}
	} else {
		lo, hi := s.headRange(u - s.layers())
		rb := s.lay.headRowBytes
		at := s.lay.headOff + int64(lo*rb)
		if !bytes.Equal(s.ring[off:off+(hi-lo)*rb], fx.file[at:at+int64((hi-lo)*rb)]) {
			t.Fatalf("head chunk %d differs", u-s.layers())
		}
	}
	if release {
		s.release(u, p)
	}
	return nil
}

// token runs one token's pieces in order, as Forward does.
func (fx *ringFixture) token(t *testing.T, logits bool) {
	t.Helper()
	s := fx.s
	s.Begin(logits)
	for l := range s.layers() {
		for p := range s.lay.layers[l].pieces {
			if err := fx.check(t, l, p, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if logits {
		for c := range s.chunks {
			if err := fx.check(t, s.layers()+c, 0, true); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRingSequences streams tokens through rings of several sizes and
// checks every piece's bytes: pieces that do not tile the ring (so they
// wrap around at varying places), pieces larger than half the ring, and
// LM head chunks after some tokens only.
func TestRingSequences(t *testing.T) {
	mixed := [][][]int{
		{{3000, 5000, 200}, {4100}, {9000, 9000}, {8800}},
		{{3000, 5000, 200}, {4100}, {9000, 9000}, {8800}},
		{{1}, {64}, {20000}, {65}},
		{{3000, 5000, 200}, {4100}, {9000, 9000}, {8800}},
	}
	big := [][][]int{{{30000}, {17000}}, {{25000}, {30000}}, {{30000}, {100}}}
	for _, tc := range []struct {
		name   string
		pieces [][][]int
		ring   int // 0: two layers, 1: the smallest
	}{
		{"two layers", mixed, 0},
		{"one layer and a bit", mixed, 48000},
		{"smallest", mixed, 1},
		{"odd size", mixed, 31337},
		{"pieces over half the ring", big, 1},
		{"pieces over half, one layer", big, 50000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newRingFixture(t, tc.pieces, 300, 96, tc.ring)
			if fx.s.chunks < 2 {
				t.Fatalf("%d head chunks, want several", fx.s.chunks)
			}
			for i := range 12 {
				fx.token(t, i%3 != 1)
			}
			st := fx.s.Stats()
			if st.Misses != 1 {
				t.Errorf("%d reads started on demand, want 1 (the first)", st.Misses)
			}
			if fx.s.released.Load() > fx.s.descs[(fx.s.taken-1)%int64(len(fx.s.descs))].end {
				t.Error("released beyond the last piece taken")
			}
		})
	}
}

// TestRingAbandonedToken leaves a token halfway (as Forward does on an
// error) and starts the next at layer 0: the source starts over and the
// bytes stay right.
func TestRingAbandonedToken(t *testing.T) {
	fx := newRingFixture(t, [][][]int{{{5000}, {7000}}, {{5000}, {7000}}, {{6000}, {1000}}}, 100, 64, 20000)
	fx.token(t, true)
	fx.s.Begin(true)
	for p := range 2 {
		if err := fx.check(t, 0, p, true); err != nil {
			t.Fatal(err)
		}
	}
	fx.token(t, false)
	fx.token(t, true)
	if m := fx.s.Stats().Misses; m != 2 {
		t.Errorf("%d reads started on demand, want 2 (the first and the restart)", m)
	}
}

// TestRingReadError makes a piece unreadable (beyond the end of the
// file): the error reaches the forward pass, and once the file is whole
// again the next token reads correctly.
func TestRingReadError(t *testing.T) {
	fx := newRingFixture(t, [][][]int{{{5000}, {7000}}, {{5000}, {7000}}}, 100, 64, 0)
	fx.token(t, true)
	if err := os.Truncate(fx.path, 1000); err != nil {
		t.Fatal(err)
	}
	s := fx.s
	s.Begin(true)
	var err error
	for l := 0; l < s.layers() && err == nil; l++ {
		for p := 0; p < 2 && err == nil; p++ {
			err = fx.check(t, l, p, true)
		}
	}
	if err == nil || !errors.Is(err, io.EOF) {
		t.Fatalf("reading a truncated file: %v, want EOF", err)
	}
	if err := os.WriteFile(fx.path, fx.file, 0o600); err != nil {
		t.Fatal(err)
	}
	fx.token(t, true)
	fx.token(t, false)
}

// TestRingClose closes a source while the reader is busy or waiting for
// space the forward pass holds, and checks that it stops and that later
// use fails with ErrClosed.
func TestRingClose(t *testing.T) {
	pieces := [][][]int{{{40000}, {40000}}, {{40000}, {40000}}, {{40000}, {40000}}}
	for _, hold := range []bool{false, true} {
		fx := newRingFixture(t, pieces, 100, 64, 1<<20)
		fx.s.Begin(true)
		if err := fx.check(t, 0, 0, !hold); err != nil {
			t.Fatal(err)
		}
		if err := fx.s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := fx.s.take(0, 1); !errors.Is(err, ErrClosed) {
			t.Errorf("take after Close: %v, want ErrClosed", err)
		}
	}
	// A ring of one piece, held: the reader waits for space until Close.
	fx := newRingFixture(t, pieces, 100, 64, 1)
	fx.s.Begin(true)
	if err := fx.check(t, 0, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := fx.s.Close(); err != nil {
		t.Fatal(err)
	}
}
