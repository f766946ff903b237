package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qsf-llm/qsf"
)

// slot is one session of the pool and what its KV cache holds.
type slot struct {
	s      *qsf.Session
	tokens []int     // the session's tokens when it was last released
	used   time.Time // when it was last released
}

// pool hands out sessions, one request at a time each. A request waits
// for a free session when all are busy, unless the queue is full.
type pool struct {
	free    chan struct{} // one value per idle slot
	waiting atomic.Int64  // requests waiting for a slot
	limit   int64         // most requests waiting

	batcher *qsf.Batcher // decodes the sessions together, or nil

	mu   sync.Mutex
	idle []*slot
	all  []*slot
}

// newPool opens n sessions on m, decoded together by a qsf.Batcher when
// batch is set and n > 1.
func newPool(m *qsf.Model, n, queue int, batch bool) (*pool, error) {
	p := &pool{free: make(chan struct{}, n), limit: int64(queue)}
	if batch && n > 1 {
		p.batcher = m.NewBatcher()
	}
	for range n {
		s, err := m.NewSession()
		if err != nil {
			p.close()
			return nil, err
		}
		s.SetBatcher(p.batcher)
		sl := &slot{s: s}
		p.idle = append(p.idle, sl)
		p.all = append(p.all, sl)
		p.free <- struct{}{}
	}
	return p, nil
}

// acquire returns the idle slot chosen for prompt (see choose), waiting
// while every slot is busy. It returns errQueueFull at once when the
// queue is full, and ctx's error when ctx ends first.
func (p *pool) acquire(ctx context.Context, prompt []int) (*slot, error) {
	select {
	case <-p.free:
	default:
		if p.waiting.Add(1) > p.limit {
			p.waiting.Add(-1)
			return nil, errQueueFull
		}
		select {
		case <-p.free:
			p.waiting.Add(-1)
		case <-ctx.Done():
			p.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	best := p.choose(prompt)
	sl := p.idle[best]
	p.idle = append(p.idle[:best], p.idle[best+1:]...)
	return sl, nil
}

// choose returns the index of the idle slot for prompt: the one sharing
// the longest prefix with it, if that prefix is at least half of what the
// slot holds (llama-server's default slot similarity); otherwise an empty
// slot, or the least recently used one, so that a new conversation does
// not overwrite one that shares little with it.
func (p *pool) choose(prompt []int) int {
	best, bestLen := -1, 0
	for i, sl := range p.idle {
		n := commonPrefix(sl.tokens, prompt)
		if n > bestLen && 2*n >= len(sl.tokens) {
			best, bestLen = i, n
		}
	}
	if best >= 0 {
		return best
	}
	best = 0
	for i, sl := range p.idle {
		if len(sl.tokens) == 0 {
			return i
		}
		if sl.used.Before(p.idle[best].used) {
			best = i
		}
	}
	return best
}

// release gives sl back to the pool.
func (p *pool) release(sl *slot) {
	tokens := sl.s.Tokens()
	p.mu.Lock()
	sl.tokens, sl.used = tokens, time.Now()
	p.idle = append(p.idle, sl)
	p.mu.Unlock()
	p.free <- struct{}{}
}

// cachedTokens is the number of tokens the slots' KV caches held when
// they were last released.
func (p *pool) cachedTokens() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, sl := range p.all {
		n += len(sl.tokens)
	}
	return n
}

// busy is the number of slots in use.
func (p *pool) busy() int { return cap(p.free) - len(p.free) }

// close releases every session (call it when no request is in flight).
func (p *pool) close() {
	for _, sl := range p.all {
		sl.s.Close()
	}
	if p.batcher != nil {
		p.batcher.Close()
	}
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
