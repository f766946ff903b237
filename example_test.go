package qsf_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/plan"
	"github.com/qsf-llm/qsf/synth"
)

// tinyModel writes a small random-weight model (package synth) to a temp
// dir so that the examples run anywhere. With a real model, pass its path
// to qsf.Load instead.
func tinyModel() (path string, cleanup func()) { return synthModel("tiny") }

// synthModel writes a random-weight model of the named shape (q8_0).
func synthModel(name string) (path string, cleanup func()) {
	dir, err := os.MkdirTemp("", "qsf-example")
	if err != nil {
		log.Fatal(err)
	}
	shape, _ := synth.LookupShape(name)
	plan, err := synth.NewPlan(shape, synth.Q8_0, 1)
	if err != nil {
		log.Fatal(err)
	}
	path = filepath.Join(dir, name+".gguf")
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := plan.Write(f, synth.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	f.Close()
	return path, func() { os.RemoveAll(dir) }
}

func ExampleLoad() {
	path, cleanup := tinyModel()
	defer cleanup()

	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	in := m.Info()
	fmt.Println(in.Architecture, in.Layers, "layers,", in.Vocab, "tokens")
	// Output: llama 2 layers, 1024 tokens
}

func ExampleSession_Generate() {
	path, cleanup := tinyModel()
	defer cleanup()
	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	n := 0
	res, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{MaxTokens: 8},
		func(t qsf.Token) error {
			n++ // a real program would print t.Text here
			return nil
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "tokens streamed, stopped by", res.Reason)
	// Output: 8 tokens streamed, stopped by max_tokens
}

func ExampleSession_Forward() {
	path, cleanup := tinyModel()
	defer cleanup()
	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ids := m.Tokenize("Hello", qsf.TokenizeOptions{})
	logits, err := s.Forward(context.Background(), ids)
	if err != nil {
		log.Fatal(err)
	}
	next := qsf.Sample(logits, qsf.SamplerOptions{}) // greedy
	fmt.Println(len(logits) == m.Info().Vocab, s.Pos() == len(ids), next >= 0)
	// Output: true true true
}

func ExampleSampler() {
	logits := []float32{0.1, 2.5, 0.3, 2.4}
	greedy := qsf.NewSampler(qsf.SamplerOptions{})
	fmt.Println(greedy.Sample(logits))

	// With a seed, sampling is reproducible.
	opts := qsf.SamplerOptions{Temperature: 0.8, TopK: 2, Seed: 42}
	a, b := qsf.NewSampler(opts), qsf.NewSampler(opts)
	fmt.Println(a.Sample(logits) == b.Sample(logits))
	// Output:
	// 1
	// true
}

// A mixture of experts under a RAM budget smaller than its weights keeps
// everything but its routed experts resident and reads the experts each
// token selects into an expert cache.
func ExampleSession_ExpertStats() {
	path, cleanup := synthModel("tiny-moe")
	defer cleanup()
	cfg := qsf.Config{Threads: 1, ContextLength: 64, KVType: "f32"}
	// Ask for 1 MiB: the error states the smallest budget that works.
	cfg.RAMBudget = 1 << 20
	_, err := qsf.PlanFile(path, cfg)
	var be *plan.BudgetError
	if !errors.As(err, &be) {
		log.Fatal(err)
	}
	cfg.RAMBudget = be.Min
	m, err := qsf.Load(path, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Generate(context.Background(), "Once upon a time", qsf.GenerateOptions{MaxTokens: 8}, nil); err != nil {
		log.Fatal(err)
	}
	s.Close() // lets a read no longer wanted finish, so every read is counted
	st := s.ExpertStats()
	p := m.Plan()
	fmt.Println(p.Mode, "mode:", p.ExpertSlots < p.ExpertsTotal, st.Misses > 0, st.BytesRead == (st.Misses+st.Unused)*p.ExpertBytes)
	// Output: experts mode: true true true
}

func ExampleSession_Complete() {
	path, cleanup := tinyModel()
	defer cleanup()
	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	opts := qsf.GenerateOptions{MaxTokens: 4}
	// Two completions of the same prompt: the second reuses the first's
	// KV cache instead of evaluating the prompt again.
	first, _ := s.Complete(ctx, "Once upon a time", opts, nil)
	second, _ := s.Complete(ctx, "Once upon a time", opts, nil)
	fmt.Println(first.Text == second.Text, first.CachedTokens, second.CachedTokens > 0)
	// Output: true 0 true
}

func ExampleSession_Embed() {
	path, cleanup := tinyModel()
	defer cleanup()
	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	v, err := s.Embed(context.Background(), "a sentence to embed")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(v) == m.Info().Embedding, s.Pos())
	// Output: true 0
}

func ExampleModel_NewBatcher() {
	path, cleanup := tinyModel()
	defer cleanup()
	m, err := qsf.Load(path, qsf.Config{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	b := m.NewBatcher()
	defer b.Close()
	// Two conversations generated concurrently: their decoding steps run
	// as one forward pass, and each gets the tokens it would get alone.
	prompts := []string{"Once upon a time", "The weather today"}
	texts := make([]string, len(prompts))
	done := make(chan int)
	for i, p := range prompts {
		s, err := m.NewSession()
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		s.SetBatcher(b)
		go func() {
			res, err := s.Generate(context.Background(), p, qsf.GenerateOptions{MaxTokens: 8}, nil)
			if err != nil {
				log.Fatal(err)
			}
			texts[i] = res.Text
			done <- i
		}()
	}
	<-done
	<-done
	alone, _ := m.NewSession()
	defer alone.Close()
	res, _ := alone.Generate(context.Background(), prompts[1], qsf.GenerateOptions{MaxTokens: 8}, nil)
	fmt.Println(res.Text == texts[1])
	// Output: true
}
