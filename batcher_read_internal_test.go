package qsf

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/plan"
)

// TestBatcherStepReadsOnce checks the shared read of layer streaming:
// the sessions of a model share one layer reader, and a Batcher step of
// four sessions' tokens reads the layers once, as one session's token
// does, not once per session. The steps are run one by one (Batcher.run)
// so that each holds all four tokens.
func TestBatcherStepReadsOnce(t *testing.T) {
	path := testfiles.Path(t, "models", "gguf", "stories260K-Q4_0.gguf")
	cfg := Config{Threads: 1, ContextLength: 256, RAMBudget: 1}
	var be *plan.BudgetError
	if _, err := PlanFile(path, cfg); !errors.As(err, &be) {
		t.Fatalf("plan with a 1-byte budget: %v, want a BudgetError", err)
	}
	cfg.RAMBudget = be.Min
	m, err := Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Streaming() {
		t.Fatal("the smallest budget does not stream the layers")
	}
	const n, steps = 4, 12
	sessions := make([]*Session, n)
	for i := range sessions {
		if sessions[i], err = m.NewSession(); err != nil {
			t.Fatal(err)
		}
		defer sessions[i].Close()
		if _, err := sessions[i].Forward(context.Background(), []int{1, 100 + 7*i, 200 + i}); err != nil {
			t.Fatal(err)
		}
	}
	argmax := func(s *Session) int {
		l := s.state.Logits
		return slices.Index(l, slices.Max(l))
	}
	b := &Batcher{m: m} // no loop: the test runs its steps
	read0 := m.IOStats().BytesRead
	for range steps {
		decode := make([]*stepRequest, n)
		for i, s := range sessions {
			decode[i] = &stepRequest{ctx: context.Background(), s: s, toks: []int{argmax(s)}, err: make(chan error, 1)}
		}
		if left := b.run(decode, nil); len(left) != 0 {
			t.Fatalf("a step left %d prompts", len(left))
		}
		for _, r := range decode {
			if err := <-r.err; err != nil {
				t.Fatal(err)
			}
		}
	}
	read := m.IOStats().BytesRead - read0
	if st := b.Stats(); st.Steps != steps || st.Tokens != n*steps {
		t.Fatalf("stats %+v, want %d steps of %d tokens", st, steps, n)
	}
	// One pass reads BytesPerToken (the layers, an embedding row, the LM
	// head when it is streamed); a step's other sessions add their
	// embedding rows at most, and the reader may have read ahead (before
	// the first step, after the last) by a ring.
	perPass := m.plan.BytesPerToken
	slack := m.plan.RingBytes + int64(n*steps*m.layout.EmbeddingRowBytes())
	t.Logf("%d steps of %d tokens read %d bytes: %.2f passes' worth (a pass %d bytes, slack %d)",
		steps, n, read, float64(read)/float64(perPass), perPass, slack)
	if read > steps*perPass+slack {
		t.Errorf("%d steps of %d sessions read %d bytes, more than %d passes (%d bytes each) and %d bytes of slack: the sessions read the layers each",
			steps, n, read, steps, perPass, slack)
	}
	if read < (steps-1)*m.layout.LayerBytesTotal() {
		t.Errorf("%d steps read %d bytes, less than %d passes over the layers (%d bytes each): not streaming?", steps, read, steps-1, m.layout.LayerBytesTotal())
	}
}
