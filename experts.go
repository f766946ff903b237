package qsf

import (
	"fmt"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/stream"
)

// newExpertSession gives a session of an expert-streaming model its
// expert cache, KV cache and buffers, in an arena of its own.
func (m *Model) newExpertSession(pool *kernels.Pool) (*Session, error) {
	a, err := arena.New(int(m.plan.ArenaBytes))
	if err != nil {
		return nil, err
	}
	cache, err := stream.OpenExpertCache(m.experts, m.file.Name(), a, m.plan.ExpertSlots)
	if err != nil {
		a.Close()
		return nil, err
	}
	return m.newArenaSession(pool, streamResources{experts: cache, arena: a})
}

// ExpertStats returns the expert cache's counters of an expert-streaming
// session (zero otherwise): hits, misses and the bytes read.
func (s *Session) ExpertStats() stream.ExpertStats {
	if s.experts == nil {
		return stream.ExpertStats{}
	}
	return s.experts.Stats()
}

// ExpertStreaming reports whether the model reads its routed experts from
// the file as tokens select them.
func (m *Model) ExpertStreaming() bool { return m.experts != nil }

// errExpertSession wraps an expert session's setup error.
func errExpertSession(err error) error { return fmt.Errorf("qsf: expert cache: %w", err) }
