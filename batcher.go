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

// stepRest is how long the pool's idle workers poll for the next step
// after a step of several decoding sessions (Pool.Rest): longer than the
// sessions usually take to sample their next tokens (a few tens of
// microseconds), so that the workers rarely park and need waking, and
// much shorter than the pool's spin time, so that sessions queued behind
// a descheduled thread run on the workers' Ps soon.
const stepRest = 200 * time.Microsecond

// Batcher decodes the sessions attached to it together (continuous
// batching): while several of them generate, each step is one forward
// pass over the next token of every one (model.ForwardChunks), so each
// weight matrix is read once per step for all of them instead of once per
// session. A session's prompt (Generate's, Forward's) is evaluated in the
// same steps, in chunks of what room the step has (model.MaxChunkRows
// tokens in all); sessions leave when their generation ends. A step waits
// at most a couple of milliseconds for a decoding session that is late.
// The tokens of each session are those it would generate alone, bit for
// bit. When generation goes on after a token, the step that evaluates it
// runs while the Generate callback handles it (an HTTP write, say), so
// the other sessions' steps need not wait for the callback; a batched
// session's callback must therefore not use the session itself. Under
// layer streaming a step reads each layer once for all its sessions and
// tokens. Sessions that stream experts or use an evicting cache are
// stepped one after another.
//
// A Batcher belongs to one Model; attach sessions with
// Session.SetBatcher. It is safe for concurrent use.
type Batcher struct {
	m      *Model
	reqs   chan *stepRequest
	active atomic.Int64  // sessions in their decoding loop
	left   chan struct{} // a session left its decoding loop (the wait for it ends)
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once

	steps, tokens, promptTokens atomic.Int64

	// The loop's buffers for a step, and the buffers of the passes.
	mb     model.Batch
	states []*model.State
	runs   [][]int
	logits []bool
	live   []*stepRequest
}

// stepRequest asks for tokens of s to be evaluated: the next token of a
// decoding step, or a prompt, which is evaluated in chunks over as many
// steps as it takes.
type stepRequest struct {
	ctx    context.Context
	s      *Session
	toks   []int
	prompt bool
	done   int // prompt tokens evaluated so far
	take   int // prompt tokens in the step being run
	err    chan error
	tok    [1]int // toks of a decoding step
}

// NewBatcher starts a Batcher for the sessions of m. Close it when done.
func (m *Model) NewBatcher() *Batcher {
	b := &Batcher{m: m, reqs: make(chan *stepRequest), left: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
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

// BatchStats counts a Batcher's steps and the tokens they evaluated:
// Tokens, decoding tokens (one per session and step), and PromptTokens,
// prompt tokens evaluated in the same steps.
type BatchStats struct {
	Steps, Tokens, PromptTokens int64
}

// Stats returns the Batcher's counters.
func (b *Batcher) Stats() BatchStats {
	return BatchStats{Steps: b.steps.Load(), Tokens: b.tokens.Load(), PromptTokens: b.promptTokens.Load()}
}

// SetBatcher attaches the session to b (nil detaches it): its decoding
// steps then run together with those of b's other sessions, the step of a
// token while the Generate callback handles it (so the callback must not
// use the session). b must belong to the session's model.
func (s *Session) SetBatcher(b *Batcher) error {
	if b != nil && b.m != s.m {
		return fmt.Errorf("qsf: SetBatcher: the Batcher belongs to another model")
	}
	s.batcher = b
	return nil
}

// join counts a session that enters its decoding loop: the steps wait a
// moment for it.
func (b *Batcher) join() { b.active.Add(1) }

// leave counts a session that leaves its decoding loop, ending a step's
// wait for it at once.
func (b *Batcher) leave() {
	b.active.Add(-1)
	select {
	case b.left <- struct{}{}:
	default:
	}
}

// step evaluates tok for s in the Batcher's next step; it returns once
// the step is done (or at once with ErrClosed when the Batcher is closed,
// for the caller to evaluate alone).
func (b *Batcher) step(ctx context.Context, s *Session, tok int) error {
	if err := b.submit(ctx, s, tok); err != nil {
		return err
	}
	return b.wait(s)
}

// submit hands tok for s to the Batcher's next step and returns without
// waiting for the step (wait does, and must be called before s is used
// again), or returns ErrClosed when the Batcher is closed, for the
// caller to evaluate tok alone.
func (b *Batcher) submit(ctx context.Context, s *Session, tok int) error {
	// The session's request of its last step is done with (answered):
	// reuse it, so that a decoding step allocates nothing.
	r := s.stepReq
	if r == nil {
		r = &stepRequest{err: make(chan error, 1)}
		s.stepReq = r
	}
	r.ctx, r.s, r.tok[0] = ctx, s, tok
	r.toks = r.tok[:]
	select {
	case b.reqs <- r:
		return nil
	case <-b.quit:
		return ErrClosed
	}
}

// wait returns the result of the step that submit handed over for s,
// once it is done, and records its token in s's history (when the step
// evaluated it).
func (b *Batcher) wait(s *Session) error {
	r := s.stepReq
	err := <-r.err
	s.record(r.toks)
	return err
}

// prompt evaluates ids for s in the Batcher's steps, in chunks together
// with the decoding steps of the other sessions, leaving the logits after
// the last one in s's state. It returns how many of ids it evaluated, and
// ErrClosed when the Batcher is closed before it accepts the prompt.
func (b *Batcher) prompt(ctx context.Context, s *Session, ids []int) (int, error) {
	r := &stepRequest{ctx: ctx, s: s, toks: ids, prompt: true, err: make(chan error, 1)}
	select {
	case b.reqs <- r:
	case <-b.quit:
		return 0, ErrClosed
	}
	err := <-r.err
	return r.done, err
}

func (b *Batcher) loop() {
	defer close(b.done)
	var decode, prompts []*stepRequest
	add := func(r *stepRequest) {
		if r.prompt {
			prompts = append(prompts, r)
		} else {
			decode = append(decode, r)
		}
	}
	timer := time.NewTimer(0)
	<-timer.C
	for {
		decode = decode[:0]
		if len(prompts) == 0 {
			select {
			case r := <-b.reqs:
				add(r)
			case <-b.quit:
				return
			}
		}
	drain:
		for {
			select {
			case r := <-b.reqs:
				add(r)
			default:
				break drain
			}
		}
		// Wait a moment for the decoding sessions that are late.
		if int64(len(decode)) < b.active.Load() {
			timer.Reset(batchWait)
		gather:
			for int64(len(decode)) < b.active.Load() {
				select {
				case r := <-b.reqs:
					add(r)
				case <-b.left:
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
		}
		prompts = b.run(decode, prompts)
	}
}

// run evaluates one step: the decoding requests' tokens and the next
// chunks of the prompts, as many as fit in a pass (model.MaxChunkRows
// tokens). It answers the requests it completes and returns the prompts
// still to be evaluated.
func (b *Batcher) run(decode, prompts []*stepRequest) []*stepRequest {
	b.states, b.runs, b.logits = b.states[:0], b.runs[:0], b.logits[:0]
	live := b.live[:0]
	for _, r := range decode {
		if err := r.s.interrupted(r.ctx); err != nil {
			r.err <- err
			continue
		}
		if !r.s.state.KV.Evicts() && r.s.Pos() >= r.s.state.KV.Capacity() {
			r.err <- fmt.Errorf("%w: %d tokens in context, room for %d", ErrContextFull, r.s.Pos(), r.s.state.KV.Capacity())
			continue
		}
		b.states, b.runs, b.logits = append(b.states, r.s.state), append(b.runs, r.toks), append(b.logits, true)
		live = append(live, r)
	}
	decoding := len(live)
	room := model.MaxChunkRows - decoding
	waiting := prompts[:0]
	for _, r := range prompts {
		if err := r.s.interrupted(r.ctx); err != nil {
			r.err <- err
			continue
		}
		waiting = append(waiting, r)
		if r.take = min(len(r.toks)-r.done, room); r.take > 0 {
			room -= r.take
			end := r.done + r.take
			b.states, b.runs, b.logits = append(b.states, r.s.state), append(b.runs, r.toks[r.done:end]), append(b.logits, end == len(r.toks))
			live = append(live, r)
		}
	}
	b.live = live
	if len(live) == 0 {
		return waiting
	}
	err := b.m.acquire()
	if err == nil {
		b.m.lockPass()
		err = b.mb.ForwardChunks(b.states, b.runs, b.logits)
		if decoding >= 2 {
			// The sessions answered below sample their next tokens
			// until the next step, on the P of the caller and on the
			// pool's once its workers park.
			b.m.pool.Rest(stepRest)
		}
		b.m.unlockPass()
		b.m.release()
		if err != nil {
			err = fmt.Errorf("qsf: %w", err)
		}
	}
	b.steps.Add(1)
	prompts = waiting[:0]
	for _, r := range live {
		if !r.prompt {
			b.tokens.Add(1)
			r.err <- err // wait records the token
			continue
		}
		b.promptTokens.Add(int64(r.take))
		r.done += r.take
		r.take = 0
		if err != nil || r.done == len(r.toks) {
			r.err <- err
		}
	}
	for _, r := range waiting {
		if err == nil && r.done < len(r.toks) {
			prompts = append(prompts, r)
		}
	}
	return prompts
}
