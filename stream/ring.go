package stream

import (
	"errors"
	"time"
)

// MapSlack is the part of the ring a mapped Source leaves for the pages
// the kernel maps beyond the pieces (see produce): a file is mapped only
// when the ring is at least MapSlack larger than its smallest.
const MapSlack = 6 << 20

// The forward pass's side of the ring.

// take waits for piece p of unit u and returns its offset in the ring.
// The piece is held until release.
func (s *Source) take(u, p int) (int, error) {
	if s.closed {
		return 0, ErrClosed
	}
	if s.nheld == len(s.held) {
		return 0, errors.New("stream: too many pieces held")
	}
	if !s.running || s.broken || u != s.expU || p != s.expP {
		s.restart(u, p)
	}
	d := s.await()
	if d.err == nil && (int(d.unit) != u || int(d.piece) != p) {
		// The reader went on with another token than the one asked for
		// (a token was abandoned halfway): start over here.
		s.restart(u, p)
		d = s.await()
	}
	off, end, err := d.off, d.end, d.err
	s.taken++
	s.takenA.Store(s.taken)
	s.wakeProducer()
	if err != nil {
		s.broken = true
		return 0, err
	}
	s.held[s.nheld] = heldPiece{unit: int32(u), piece: int32(p), end: end}
	s.nheld++
	s.expU, s.expP = s.after(u, p, s.logits)
	return off, nil
}

// await returns the next published descriptor, waiting for the reader to
// publish it when it has not yet.
func (s *Source) await() *desc {
	if s.taken == s.published.Load() {
		t0 := time.Now()
		s.stalls.Add(1)
		for s.taken == s.published.Load() {
			s.cWait.Store(true)
			if s.taken != s.published.Load() {
				s.cWait.Store(false)
				break
			}
			<-s.cWake
		}
		s.waitNanos.Add(int64(time.Since(t0)))
	}
	return &s.descs[s.taken%int64(len(s.descs))]
}

// holds reports whether piece p of unit u is held.
func (s *Source) holds(u, p int) bool {
	for _, h := range s.held[:s.nheld] {
		if int(h.unit) == u && int(h.piece) == p && !h.done {
			return true
		}
	}
	return false
}

// release lets the reader reuse the ring space of piece p of unit u and
// of every piece before it that was released (pieces are freed in the
// order they were read).
func (s *Source) release(u, p int) {
	for i := range s.held[:s.nheld] {
		if h := &s.held[i]; int(h.unit) == u && int(h.piece) == p && !h.done {
			h.done = true
			break
		}
	}
	n := 0
	for n < s.nheld && s.held[n].done {
		n++
	}
	if n == 0 {
		return
	}
	end := s.held[n-1].end
	s.nheld = copy(s.held[:], s.held[n:s.nheld])
	s.released.Store(end)
	s.wakeProducer()
}

// restart stops the reader, empties the ring and has the reader start
// again at piece p of unit u.
func (s *Source) restart(u, p int) {
	s.stop()
	s.misses.Add(1)
	s.published.Store(0)
	s.taken = 0
	s.takenA.Store(0)
	s.released.Store(0)
	s.nheld = 0
	s.broken = false
	select {
	case <-s.cWake:
	default:
	}
	s.logitsOf[s.tok&1].Store(s.logits)
	s.begun.Store(s.tok)
	s.start <- startCmd{unit: u, piece: p, tok: s.tok, epoch: s.epoch.Load()}
	s.running = true
	s.expU, s.expP = u, p
}

// stop stops the reader (after the read it may be doing).
func (s *Source) stop() {
	if !s.running {
		return
	}
	s.epoch.Add(1)
	s.pWait.Store(false)
	select {
	case s.pWake <- struct{}{}:
	default:
	}
	<-s.stopped
	s.running = false
}

// wakeProducer wakes the reader if it sleeps.
func (s *Source) wakeProducer() {
	if s.pWait.Load() && s.pWait.Swap(false) {
		select {
		case s.pWake <- struct{}{}:
		default:
		}
	}
}

// The I/O goroutine's side.

// loop is the I/O goroutine: it produces from each start command until
// the epoch changes or a read fails.
func (s *Source) loop() {
	defer s.wg.Done()
	for cmd := range s.start {
		s.produce(cmd)
		s.stopped <- struct{}{}
	}
}

// produce reads pieces into the ring in the order the forward pass uses
// them, starting at the command's, as space is released.
func (s *Source) produce(cmd startCmd) {
	u, p, tok := cmd.unit, cmd.piece, cmd.tok
	capacity := int64(s.ringCap)
	if s.mapped != nil {
		// The kernel maps large page-cache folios (up to 2 MiB) whole,
		// so the pages mapped exceed the pieces' bytes by some MiB at
		// their ends: keep MapSlack of the ring for them (Open maps the
		// file only when the ring has that room).
		capacity -= MapSlack
		s.unmapReleased(true) // a new start: nothing is held
	}
	nd := int64(len(s.descs))
	var w int64 // bytes written (W), including the skipped tails
	for n := int64(0); ; n++ {
		size := int64(s.pieceBytes(u, p))
		pos, end := w%capacity, w // end: W after the last piece
		if pos+size > capacity && s.mapped == nil {
			w += capacity - pos // skip the tail: the piece starts the ring again
			pos = 0
		}
		// The slot is free once the forward pass released what the ring
		// held there a lap ago, or everything (the skipped tail was never
		// held).
		if !s.awaitSpace(cmd.epoch, min(w+size-capacity, end), n-nd+1) {
			return
		}
		t0 := time.Now()
		var err error
		if s.mapped != nil {
			s.unmapReleased(false)
			err = s.mapPiece(u, p, w+size)
		} else {
			err = s.load(u, p, s.ring[pos:pos+size])
		}
		s.ioNanos.Add(int64(time.Since(t0)))
		s.reads.Add(1)
		w += size
		s.descs[n%nd] = desc{unit: int32(u), piece: int32(p), off: int(pos), end: w, err: err}
		s.published.Store(n + 1)
		if s.cWait.Load() && s.cWait.Swap(false) {
			select {
			case s.cWake <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
		logits := false
		if u == s.layers()-1 && p == len(s.lay.layers[u].pieces)-1 && s.chunks > 0 {
			// Whether the LM head comes next is known once the token began.
			if !s.awaitBegun(cmd.epoch, tok) {
				return
			}
			logits = s.logitsOf[tok&1].Load()
		}
		if u, p = s.after(u, p, logits); u == 0 && p == 0 {
			tok++
		}
	}
}

// awaitSpace waits until the forward pass has released the ring up to
// free and taken the descriptors before minTaken; false means stop.
func (s *Source) awaitSpace(epoch, free, minTaken int64) bool {
	ready := func() bool { return s.released.Load() >= free && s.takenA.Load() >= minTaken }
	return s.sleepUntil(epoch, ready)
}

// awaitBegun waits until token tok began; false means stop.
func (s *Source) awaitBegun(epoch, tok int64) bool {
	return s.sleepUntil(epoch, func() bool { return s.begun.Load() >= tok })
}

// sleepUntil returns true when ready, sleeping on pWake while it is not,
// or false as soon as the epoch changes.
func (s *Source) sleepUntil(epoch int64, ready func() bool) bool {
	for {
		if s.epoch.Load() != epoch {
			return false
		}
		if ready() {
			return true
		}
		s.pWait.Store(true)
		if s.epoch.Load() != epoch || ready() {
			s.pWait.Store(false)
			continue
		}
		<-s.pWake
	}
}
