package qsf_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/stream"
)

// TestExpertStreamingEqualsResident loads the mixture-of-experts reference
// models under budgets that leave room for all, some, or only the fewest
// experts, and checks that the streamed logits equal the resident ones bit
// for bit (prompt as one batch, then greedy tokens one at a time), that
// every read is a miss or an unused guess, and that a budget below the
// always-resident part fails with ErrBudget naming the minimum.
func TestExpertStreamingEqualsResident(t *testing.T) {
	dir := testfiles.Dir(t)
	for _, name := range []string{"synth-mixtral-Q4_0.gguf", "synth-qwen2moe-Q8_0.gguf", "synth-qwen2moe-f32.gguf"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "models", "moe", name)
			cfg := qsf.Config{Threads: 2, ContextLength: 128, KVType: "f32"} // fixed: the budget must not change them
			want := generate(t, path, cfg)

			cfg.RAMBudget = 1 << 20
			_, err := qsf.PlanFile(path, cfg)
			var be *plan.BudgetError
			if !errors.As(err, &be) || !errors.Is(err, qsf.ErrBudget) {
				t.Fatalf("1 MiB budget: %v, want a BudgetError", err)
			}
			if _, err := qsf.Load(path, cfg); !errors.Is(err, qsf.ErrBudget) {
				t.Fatalf("Load under 1 MiB: %v, want ErrBudget", err)
			}
			cfg.RAMBudget = be.Min
			least, err := qsf.PlanFile(path, cfg)
			if err != nil {
				t.Fatalf("budget at the stated minimum %d: %v", be.Min, err)
			}
			if least.Mode != plan.Experts {
				t.Fatalf("mode %s at the minimum budget, want %s", least.Mode, plan.Experts)
			}
			cfg.RAMBudget = be.Min - 1
			if _, err := qsf.PlanFile(path, cfg); !errors.Is(err, qsf.ErrBudget) {
				t.Errorf("one byte below the minimum: %v, want ErrBudget", err)
			}

			steps := []int64{0, 0, int64(least.ExpertsTotal/2) * least.ExpertBytes, int64(least.ExpertsTotal) * least.ExpertBytes}
			// Threads vary (the results do not depend on them): as many as
			// there are CPUs have the forward pass read the experts, one
			// leaves the reads to the expert cache's reader.
			for k, extra := range steps {
				cfg.Threads = []int{runtime.GOMAXPROCS(0), 1, 2, 2}[k]
				cfg.RAMBudget = be.Min + extra + extra/20
				p, err := qsf.PlanFile(path, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if p.Mode != plan.Experts {
					t.Logf("budget %d: mode %s", cfg.RAMBudget, p.Mode)
					continue
				}
				m, err := qsf.Load(path, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !m.ExpertStreaming() {
					t.Fatalf("budget %d: not expert streaming", cfg.RAMBudget)
				}
				got, st := generateWith(t, m)
				m.Close()
				for i := range want {
					if len(got[i]) != len(want[i]) {
						t.Fatalf("step %d: %d logits, want %d", i, len(got[i]), len(want[i]))
					}
					for j := range want[i] {
						if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
							t.Fatalf("budget %d (%d of %d experts cached): step %d logit %d: %g, resident %g",
								cfg.RAMBudget, p.ExpertSlots, p.ExpertsTotal, i, j, got[i][j], want[i][j])
						}
					}
				}
				if st.Misses == 0 || st.BytesRead != (st.Misses+st.Unused)*expertFileBytes(p) {
					t.Errorf("budget %d: %d misses, %d unused, %d bytes read, want (misses + unused) × %d", cfg.RAMBudget, st.Misses, st.Unused, st.BytesRead, expertFileBytes(p))
				}
				if p.ExpertSlots == p.ExpertsTotal && st.Misses > int64(p.ExpertsTotal) {
					t.Errorf("every expert cached, yet %d misses for %d experts", st.Misses, p.ExpertsTotal)
				}
				t.Logf("budget %d: %d of %d experts cached, hit rate %.2f, %d read ahead unused, %d bytes read", cfg.RAMBudget, p.ExpertSlots, p.ExpertsTotal, st.HitRate(), st.Unused, st.BytesRead)
			}
		})
	}
}

// expertFileBytes is the file size of one expert (the plan's slot size
// less alignment: the test models' matrices are whole 64-byte multiples).
func expertFileBytes(p *plan.Plan) int64 { return p.ExpertBytes }

// generate runs a prompt and 12 greedy tokens on a resident model.
func generate(t *testing.T, path string, cfg qsf.Config) [][]float32 {
	t.Helper()
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out, _ := generateWith(t, m)
	return out
}

// generateWith feeds a prompt as one batch and then 12 greedy tokens one
// at a time, returning the logits after each call and the expert cache's
// counters.
func generateWith(t *testing.T, m *qsf.Model) ([][]float32, stream.ExpertStats) {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	ids := m.Tokenize("Once upon a time there was a little dog", qsf.TokenizeOptions{})
	var out [][]float32
	logits, err := s.Forward(ctx, ids)
	for step := 0; err == nil; step++ {
		out = append(out, append([]float32(nil), logits...))
		if step == 12 {
			break
		}
		logits, err = s.Forward(ctx, []int{argmax(logits)})
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Close() // lets a read no longer wanted finish, so every read is counted
	return out, s.ExpertStats()
}

// TestExpertSessionsShareCache runs two sessions of an expert-streaming
// model at once under the smallest budget: they share the model's expert
// cache, taking turns, and each gets the resident logits bit for bit.
func TestExpertSessionsShareCache(t *testing.T) {
	path := filepath.Join(testfiles.Dir(t), "models", "moe", "synth-qwen2moe-Q8_0.gguf")
	cfg := qsf.Config{Threads: 2, ContextLength: 128, KVType: "f32"}
	want := generate(t, path, cfg)
	cfg.RAMBudget = 1 << 20
	_, err := qsf.PlanFile(path, cfg)
	var be *plan.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("1 MiB budget: %v, want a BudgetError", err)
	}
	cfg.RAMBudget = be.Min
	m, err := qsf.Load(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.ExpertStreaming() {
		t.Fatal("not expert streaming")
	}
	run := func() ([][]float32, error) {
		s, err := m.NewSession()
		if err != nil {
			return nil, err
		}
		defer s.Close()
		ctx := context.Background()
		logits, err := s.Forward(ctx, m.Tokenize("Once upon a time there was a little dog", qsf.TokenizeOptions{}))
		var out [][]float32
		for step := 0; err == nil; step++ {
			out = append(out, append([]float32(nil), logits...))
			if step == 12 {
				break
			}
			logits, err = s.Forward(ctx, []int{argmax(logits)})
		}
		return out, err
	}
	var wg sync.WaitGroup
	got := make([][][]float32, 2)
	errs := make([]error, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = run()
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		for step := range want {
			for j := range want[step] {
				if math.Float32bits(got[i][step][j]) != math.Float32bits(want[step][j]) {
					t.Fatalf("session %d step %d logit %d: %g, resident %g", i, step, j, got[i][step][j], want[step][j])
				}
			}
		}
	}
}
