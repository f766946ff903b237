package qsf

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qsf-llm/qsf/model"
)

// batchWait is how long a decoding step waits for the other sessions of
// its Batcher before it runs without them.
const batchWait = 2 * time.Millisecond

// Batcher decodes the sessions attached to it together (continuous
// batching): while several of them generate, each step is one forward
// pass over the next token of every one (model.ForwardMulti), so each
// weight matrix is read once per step for all of them instead of once per
// session. Sessions join when their prompt is evaluated and leave when
// their generation ends; a step waits at most a couple of milliseconds
// for a session that is late. The tokens of each session are those it
// would generate alone, bit for bit. Under layer streaming a step reads
// each layer once for all its sessions. Sessions that stream experts or
// use an evicting cache are stepped one after another.
//
// A Batcher belongs to one Model; attach sessions with
// Session.SetBatcher. It is safe for concurrent use.
type Batcher struct {
	m      *Model
	reqs   chan *stepRequest
	active atomic.Int64 // sessions in their decoding loop
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once

	steps, tokens atomic.Int64
}

// stepRequest asks for one token of s to be evaluated.
type stepRequest struct {
	ctx context.Context
	s   *Session
	tok int
	err chan error
}

// NewBatcher starts a Batcher for the sessions of m. Close it when done.
func (m *Model) NewBatcher() *Batcher {
	b := &Batcher{m: m, reqs: make(chan *stepRequest), quit: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// Close stops the Batcher once no session is in a step; sessions attached
// to it decode alone afterwards. It is safe to call more than once.
func (b *Batcher) Close() error {
	b.once.Do(func() {
		close(b.quit)
		<-b.done
	})
	return nil
}

// BatchStats counts a Batcher's decoding steps and the tokens they
// evaluated: Tokens/Steps is the mean batch size.
type BatchStats struct {
	Steps, Tokens int64
}

// Stats returns the Batcher's counters.
func (b *Batcher) Stats() BatchStats {
	return BatchStats{Steps: b.steps.Load(), Tokens: b.tokens.Load()}
}

// SetBatcher attaches the session to b (nil detaches it): its decoding
// steps then run together with those of b's other sessions. b must belong
// to the session's model.
func (s *Session) SetBatcher(b *Batcher) error {
	if b != nil && b.m != s.m {
		return fmt.Errorf("qsf: SetBatcher: the Batcher belongs to another model")
	}
	s.batcher = b
	return nil
}

// step evaluates tok for s in the Batcher's next step; it returns once
// the step is done (or at once with ErrClosed when the Batcher is closed,
// for the caller to evaluate alone).
func (b *Batcher) step(ctx context.Context, s *Session, tok int) error {
	r := &stepRequest{ctx: ctx, s: s, tok: tok, err: make(chan error, 1)}
	select {
	case b.reqs <- r:
	case <-b.quit:
		return ErrClosed
	}
	return <-r.err
}

func (b *Batcher) loop() {
	defer close(b.done)
	var batch []*stepRequest
	timer := time.NewTimer(0)
	<-timer.C
	for {
		batch = batch[:0]
		select {
		case r := <-b.reqs:
			batch = append(batch, r)
		case <-b.quit:
			return
		}
		timer.Reset(batchWait)
	gather:
		for int64(len(batch)) < b.active.Load() {
			select {
			case r := <-b.reqs:
				batch = append(batch, r)
			case <-timer.C:
				break gather
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		b.run(batch)
	}
}

// run evaluates one step of the requests' sessions.
func (b *Batcher) run(batch []*stepRequest) {
	states := make([]*model.State, 0, len(batch))
	toks := make([]int, 0, len(batch))
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.s.interrupted(r.ctx); err != nil {
			r.err <- err
			continue
		}
		if !r.s.state.KV.Evicts() && r.s.Pos() >= r.s.state.KV.Capacity() {
			r.err <- fmt.Errorf("%w: %d tokens in context, room for %d", ErrContextFull, r.s.Pos(), r.s.state.KV.Capacity())
			continue
		}
		states, toks, live = append(states, r.s.state), append(toks, r.tok), append(live, r)
	}
	if len(live) == 0 {
		return
	}
	err := b.m.acquire()
	if err == nil {
		err = model.ForwardMulti(states, toks, true)
		b.m.release()
		if err != nil {
			err = fmt.Errorf("qsf: %w", err)
		}
	}
	b.steps.Add(1)
	b.tokens.Add(int64(len(live)))
	for _, r := range live {
		r.s.record([]int{r.tok})
		r.err <- err
	}
}
