package model_test

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
	"github.com/qsf-llm/qsf/model"
)

// TestForwardMultiEqualsForward decodes three sequences of different
// lengths together with ForwardMulti, step after step (one of them joining
// late and one leaving early), and checks every state's logits against a
// state of its own run with Forward, bit for bit, with an f32 cache and
// with an f16 one (qsf serve's).
func TestForwardMultiEqualsForward(t *testing.T) {
	for _, typ := range []kvcache.Type{kvcache.F32, kvcache.F16} {
		t.Run("kv="+typ.String(), func(t *testing.T) { testForwardMulti(t, typ) })
	}
}

func testForwardMulti(t *testing.T, typ kvcache.Type) {
	const longPrompts = "synthetic/synth-llama-f32.gguf"
	dir := testfiles.Dir(t)
	files := []string{"gguf/stories260K-Q4_0.gguf", "synthetic/synth-qwen2-Q8_0.gguf", "synthetic/synth-qwen3-Q8_0.gguf",
		"synthetic/synth-phi3-Q4_0.gguf", "synthetic/synth-gpt2-Q8_0.gguf", "synthetic/synth-gemma-Q4_0.gguf", "synthetic/synth-llama-f32.gguf"}
	pool := kernels.NewPool(2)
	defer pool.Close()
	opts := model.StateOptions{KV: kvcache.Options{Type: typ}}
	for _, file := range files {
		m, done := load(t, filepath.Join(dir, "models", file))
		const seqs, steps = 3, 12
		multi := make([]*model.State, seqs)
		solo := make([]*model.State, seqs)
		capacity := 1024
		if m.LearnedPos {
			capacity = m.PosEmbd.Rows
		}
		opts.Capacity = capacity
		for i := range seqs {
			var err error
			if multi[i], err = m.NewStateWith(pool, opts); err != nil {
				t.Fatal(err)
			}
			if solo[i], err = m.NewStateWith(pool, opts); err != nil {
				t.Fatal(err)
			}
			// Prompts of different lengths: the sequences sit at different
			// positions; for one model long enough that the heads of all
			// three attend in one parallel job, while two of them attend
			// inline. (With f16, whose attention is slow on the generic
			// tier and under emulation in CI, not as long, but still
			// attending in parallel.)
			n := 3 + 5*i
			if file == longPrompts && typ == kvcache.F16 {
				n = 3 + 30*i
			} else if file == longPrompts {
				n = min(3+300*i, capacity-steps)
			}
			prompt := make([]int, n)
			for j := range prompt {
				prompt[j] = (j*31 + 7*i + 3) % m.Vocab
			}
			if err := multi[i].ForwardBatch(prompt, 0, false); err != nil {
				t.Fatal(err)
			}
			for j, tok := range prompt {
				if err := solo[i].Forward(tok, j, false); err != nil {
					t.Fatal(err)
				}
			}
		}
		for step := range steps {
			var states []*model.State
			var toks []int
			for i := range seqs {
				if i == 2 && step < 3 || i == 0 && step >= 9 { // joins late, leaves early
					continue
				}
				tok := (step*13 + i*101 + 1) % m.Vocab
				states, toks = append(states, multi[i]), append(toks, tok)
				if err := solo[i].Forward(tok, solo[i].KV.Len(), true); err != nil {
					t.Fatal(err)
				}
			}
			if err := model.ForwardMulti(states, toks, true); err != nil {
				t.Fatal(err)
			}
			for _, st := range states {
				i := indexOf(multi, st)
				name := fmt.Sprintf("%s step %d seq %d", filepath.Base(file), step, i)
				if st.KV.Len() != solo[i].KV.Len() {
					t.Fatalf("%s: cache length %d, want %d", name, st.KV.Len(), solo[i].KV.Len())
				}
				for j := range st.Logits {
					if math.Float32bits(st.Logits[j]) != math.Float32bits(solo[i].Logits[j]) {
						t.Fatalf("%s: logit %d: together %g, alone %g", name, j, st.Logits[j], solo[i].Logits[j])
					}
				}
			}
		}
		done()
	}
}

func indexOf(states []*model.State, st *model.State) int {
	for i, s := range states {
		if s == st {
			return i
		}
	}
	return -1
}

// TestForwardChunksEqualsForward evaluates runs of several tokens (prompt
// chunks) of some sequences in the same passes as single tokens of
// others, a run longer than a pass split between passes, logits asked
// for some runs and not others, and checks the logits and cache lengths
// against states fed token after token with Forward, bit for bit; with
// the first state's buffers and with a Batch's (with an f32 cache; with
// an f16 one, qsf serve's, the Batch's).
func TestForwardChunksEqualsForward(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("kv=f32/batch=%v", shared), func(t *testing.T) { testForwardChunks(t, kvcache.F32, shared) })
	}
	t.Run("kv=f16/batch=true", func(t *testing.T) { testForwardChunks(t, kvcache.F16, true) })
}

func testForwardChunks(t *testing.T, typ kvcache.Type, shared bool) {
	dir := testfiles.Dir(t)
	files := []string{"gguf/stories260K-Q4_0.gguf", "synthetic/synth-llama-f32.gguf", "synthetic/synth-qwen2-Q8_0.gguf",
		"synthetic/synth-gpt2-Q8_0.gguf", "synthetic/synth-gemma-Q4_0.gguf"}
	pool := kernels.NewPool(2)
	defer pool.Close()
	var bt model.Batch // one for all the models: it must follow the model
	for _, file := range files {
		m, done := load(t, filepath.Join(dir, "models", file))
		const seqs = 3
		chunked := make([]*model.State, seqs)
		solo := make([]*model.State, seqs)
		opts := model.StateOptions{Capacity: 256, KV: kvcache.Options{Type: typ}}
		for i := range seqs {
			var err error
			if chunked[i], err = m.NewStateWith(pool, opts); err != nil {
				t.Fatal(err)
			}
			if solo[i], err = m.NewStateWith(pool, opts); err != nil {
				t.Fatal(err)
			}
		}
		// Runs per step and sequence (0: the sequence sits the step out)
		// and whether logits are asked.
		steps := []struct {
			runs   [seqs]int
			logits [seqs]bool
		}{
			{[seqs]int{5, model.MaxChunkRows + 6, 3}, [seqs]bool{true, true, false}}, // the second run spans passes
			{[seqs]int{1, 1, 4}, [seqs]bool{true, true, true}},
			{[seqs]int{1, 0, 2}, [seqs]bool{true, false, false}},
			{[seqs]int{3, 1, 1}, [seqs]bool{false, true, true}},
			{[seqs]int{1, 1, 1}, [seqs]bool{true, true, true}},
		}
		next := 0
		for k, step := range steps {
			var states []*model.State
			var runs [][]int
			var logits []bool
			for i := range seqs {
				if step.runs[i] == 0 {
					continue
				}
				run := make([]int, step.runs[i])
				for j := range run {
					next++
					run[j] = (next*37 + 11*i + 5) % m.Vocab
					if err := solo[i].Forward(run[j], solo[i].KV.Len(), j == len(run)-1); err != nil {
						t.Fatal(err)
					}
				}
				states, runs, logits = append(states, chunked[i]), append(runs, run), append(logits, step.logits[i])
			}
			var err error
			if shared {
				err = bt.ForwardChunks(states, runs, logits)
			} else {
				err = model.ForwardChunks(states, runs, logits)
			}
			if err != nil {
				t.Fatal(err)
			}
			for j, st := range states {
				i := indexOf(chunked, st)
				name := fmt.Sprintf("%s step %d seq %d", filepath.Base(file), k, i)
				if st.KV.Len() != solo[i].KV.Len() {
					t.Fatalf("%s: cache length %d, want %d", name, st.KV.Len(), solo[i].KV.Len())
				}
				if !logits[j] {
					continue
				}
				for v := range st.Logits {
					if math.Float32bits(st.Logits[v]) != math.Float32bits(solo[i].Logits[v]) {
						t.Fatalf("%s: logit %d: chunked %g, alone %g", name, v, st.Logits[v], solo[i].Logits[v])
					}
				}
			}
		}
		done()
	}
}
