package qsf

import (
	"fmt"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/stream"
)

// expertStreaming is what an expert-streaming model adds: where its
// experts lie and the expert cache its sessions share, in an arena of its
// own.
type expertStreaming struct {
	layout *stream.ExpertLayout
	cache  *stream.ExpertCache
	arena  *arena.Arena
}

func (x *expertStreaming) close() {
	x.cache.Close()
	x.arena.Close()
}

// openExperts gives an expert-streaming model (load.Model.Experts) the
// expert cache of the planned size its sessions share, in an arena of
// its own, into which they read the experts their tokens select.
func openExperts(el *stream.ExpertLayout, path string, p *plan.Plan) (*expertStreaming, error) {
	a, err := arena.New(int(stream.ExpertCacheBytes(el, p.ExpertSlots)))
	if err != nil {
		return nil, errExpertSession(err)
	}
	cache, err := stream.OpenExpertCache(el, path, a, p.ExpertSlots)
	if err != nil {
		a.Close()
		return nil, errExpertSession(err)
	}
	return &expertStreaming{layout: el, cache: cache, arena: a}, nil
}

// newExpertSession gives a session of an expert-streaming model its KV
// cache and buffers, in an arena of its own, and the model's expert
// cache.
func (m *Model) newExpertSession(pool *kernels.Pool) (*Session, error) {
	a, err := arena.New(int(m.plan.ArenaBytes-stream.ExpertCacheBytes(m.experts.layout, m.plan.ExpertSlots)) / max(m.plan.Sessions, 1))
	if err != nil {
		return nil, err
	}
	s, err := m.newArenaSession(pool, a)
	if err != nil {
		return nil, err
	}
	s.state.Experts = m.experts.cache // the sessions take turns (sync.Locker)
	return s, nil
}

// ExpertStats returns the counters of the expert cache of an
// expert-streaming model (zero otherwise): hits, misses and the bytes
// read. The model's sessions share the cache, so the counters are theirs
// together.
func (s *Session) ExpertStats() stream.ExpertStats {
	if s.m.experts == nil {
		return stream.ExpertStats{}
	}
	return s.m.experts.cache.Stats()
}

// ExpertStreaming reports whether the model reads its routed experts from
// the file as tokens select them.
func (m *Model) ExpertStreaming() bool { return m.experts != nil }

// errExpertSession wraps an expert cache's setup error.
func errExpertSession(err error) error { return fmt.Errorf("qsf: expert cache: %w", err) }
