package stream_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/qsf-llm/qsf/arena"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/internal/testfiles"
	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/stream"
)

// TestExpertCache checks that the cache returns each expert's slices of
// the stacked tensors, serves repeats from memory, evicts as documented,
// keeps experts of a cyclic request pattern larger than itself, and
// rejects what it cannot serve.
func TestExpertCache(t *testing.T) {
	path := testfiles.Path(t, "models", "moe", "synth-qwen2moe-Q8_0.gguf")
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	embd, _ := f.Tensor("token_embd.weight")
	hp, err := model.ParseHparams(&f.Metadata, embd.Rows())
	if err != nil {
		t.Fatal(err)
	}
	lay, err := stream.NewExpertLayout(f, &hp)
	if err != nil {
		t.Fatal(err)
	}
	if lay.Experts() != 16 {
		t.Fatalf("%d experts, want 16", lay.Experts())
	}
	const slots = 3
	a, err := arena.New(int(stream.ExpertCacheBytes(lay, slots)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := stream.OpenExpertCache(lay, path, a, 1); err == nil {
		t.Error("a cache of 1 slot for 2 experts per token was accepted")
	}
	c, err := stream.OpenExpertCache(lay, path, a, slots)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	want := func(l, e, m int) []byte {
		name := []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}[m]
		ti, _ := f.Tensor(fmt.Sprintf("blk.%d.%s.weight", l, name))
		d, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		n := len(d) / 4
		return d[e*n : (e+1)*n]
	}
	check := func(l, e int) {
		t.Helper()
		g, u, d, err := c.Expert(l, e)
		if err != nil {
			t.Fatal(err)
		}
		for m, got := range []*model.Tensor{g, u, d} {
			if !bytes.Equal(got.Data, want(l, e, m)) {
				t.Fatalf("layer %d expert %d matrix %d differs from the file", l, e, m)
			}
		}
	}
	for _, step := range []struct {
		l, e         int
		hits, misses int64
	}{
		{0, 1, 0, 1}, {0, 2, 0, 2}, {1, 3, 0, 3},
		{0, 1, 1, 3}, // cached, asked for twice now
		{2, 0, 1, 4}, // evicts (1, 3): of the experts asked for once, the most recent
		{0, 1, 2, 4}, // still cached
		{0, 2, 3, 4}, // still cached
		{1, 3, 3, 5}, // read again
	} {
		check(step.l, step.e)
		if st := c.Stats(); st.Hits != step.hits || st.Misses != step.misses || st.BytesRead != step.misses*int64(lay.ExpertBytes) {
			t.Fatalf("after layer %d expert %d: %+v, want %d hits, %d misses", step.l, step.e, st, step.hits, step.misses)
		}
	}
	// A token's experts outnumbering the cache, asked for in the same
	// order every token: least recently used would never hit, the
	// frequency counts keep some of them.
	// (A model of the policy gives 19 hits here.)
	a2, err := arena.New(int(stream.ExpertCacheBytes(lay, slots)))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	c2, err := stream.OpenExpertCache(lay, path, a2, slots)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for range 20 {
		for l := range 4 {
			for _, e := range []int{0, 3} {
				if _, _, _, err := c2.Expert(l, e); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if st := c2.Stats(); st.Hits < 15 {
		t.Errorf("cyclic requests of 8 experts in 3 slots: %d hits in 160, want at least 15", st.Hits)
	}
	// Guesses only advise the kernel, or are read like announcements
	// (GuessReads), or are ignored (NoGuess).
	for _, o := range []stream.ExpertOptions{{}, {GuessReads: true}, {NoGuess: true}} {
		o.Slots = slots
		a, err := arena.New(int(stream.ExpertCacheBytes(lay, slots)))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		c, err := stream.OpenExpertCacheWith(lay, path, a, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.WantsGuess(2); got == o.NoGuess {
			t.Errorf("%+v: a new cache wants guesses: %v", o, got)
		}
		c.GuessExperts(2, []int32{1, 3})
		if _, _, _, err := c.Expert(2, 3); err != nil {
			t.Fatal(err)
		}
		want := stream.ExpertStats{Misses: 1, BytesRead: int64(lay.ExpertBytes)}
		if o.GuessReads {
			want = stream.ExpertStats{Misses: 1, Unused: 1, BytesRead: 2 * int64(lay.ExpertBytes)}
		}
		c.Close() // waits for the read of the other guess
		if st := c.Stats(); st.Hits != want.Hits || st.Misses != want.Misses || st.Unused != want.Unused || st.BytesRead != want.BytesRead {
			t.Errorf("%+v: a guess of 2 experts, then one asked for: %+v, want %+v", o, st, want)
		}
		// After two tokens' requests whose reads the page cache held,
		// advice would be of no use. Reading the whole file first puts it
		// in the page cache (the requests above read only some experts,
		// and a loaded machine may have evicted the file meanwhile).
		if _, err := os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		a2, err := arena.New(int(stream.ExpertCacheBytes(lay, slots)))
		if err != nil {
			t.Fatal(err)
		}
		defer a2.Close()
		c2, err := stream.OpenExpertCacheWith(lay, path, a2, o)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 * hp.Layers * hp.MoE.Used {
			if _, _, _, err := c2.Expert(i%hp.Layers, i%hp.MoE.Experts); err != nil {
				t.Fatal(err)
			}
		}
		if got := c2.WantsGuess(2); got != o.GuessReads {
			t.Errorf("%+v: warm reads, wants guesses: %v", o, got)
		}
		c2.Close()
	}
	// Announced experts are read ahead: asked for afterwards they count
	// as misses (read for that request), never asked for as unused; bad
	// numbers are ignored. Every read is a miss or unused.
	st := c.Stats()
	c.PrefetchExperts(3, []int32{0, 1, -1, 4})
	c.PrefetchExperts(9, []int32{0})
	c.PrefetchExperts(3, []int32{0, 1})
	if got := c.Stats(); got.Unused != st.Unused+2 || got.Misses != st.Misses || got.Hits != st.Hits {
		t.Errorf("after announcing 2 experts: %+v, want 2 more unused (from %+v)", got, st)
	}
	check(3, 0)
	check(3, 0)
	check(3, 1)
	// Announced experts come back in the order they will be ready in:
	// those held first.
	order := []int32{2, 9, 1, 0}
	c.PrefetchExperts(3, order)
	if fmt.Sprint(order) != "[0 1 2 9]" {
		t.Errorf("announced [2 9 1 0] with 0 and 1 held (read in that order): order %v, want [0 1 2 9]", order)
	}
	check(3, 2)
	if got := c.Stats(); got.Unused != st.Unused || got.Misses != st.Misses+3 || got.Hits != st.Hits+1 {
		t.Errorf("after asking for the announced experts: %+v, want 3 more misses, 1 more hit (from %+v)", got, st)
	}
	// An announcement larger than the cache reads what fits; a request
	// for an expert not announced takes the slot of one announced and
	// not asked for yet.
	c.PrefetchExperts(1, []int32{0, 1, 2, 3})
	check(2, 3)
	for e := range 4 {
		check(1, e)
	}
	c.Close() // lets a read of an expert no longer wanted finish
	st = c.Stats()
	if st.Hits+st.Misses != 17 || st.BytesRead != (st.Misses+st.Unused)*int64(lay.ExpertBytes) {
		t.Errorf("after 17 requests: %+v, want every read a miss or unused", st)
	}
	if _, _, _, err := c.Expert(0, 4); err == nil {
		t.Error("expert 4 of 4 was served")
	}
	if _, _, _, err := c.Expert(4, 0); err == nil {
		t.Error("layer 4 of 4 was served")
	}
	if _, err := stream.NewExpertLayout(f, &model.Hparams{}); !errors.Is(err, stream.ErrLayout) {
		t.Errorf("a dense model's expert layout: %v, want ErrLayout", err)
	}
}

// TestExpertCacheRandom drives a small cache with random guesses,
// announcements and requests, as forward passes make them, and checks
// every expert it returns against the file while the reader and the
// requests that read for themselves run at once.
func TestExpertCacheRandom(t *testing.T) {
	path := testfiles.Path(t, "models", "moe", "synth-qwen2moe-Q8_0.gguf")
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	embd, _ := f.Tensor("token_embd.weight")
	hp, err := model.ParseHparams(&f.Metadata, embd.Rows())
	if err != nil {
		t.Fatal(err)
	}
	lay, err := stream.NewExpertLayout(f, &hp)
	if err != nil {
		t.Fatal(err)
	}
	ne, used := hp.MoE.Experts, hp.MoE.Used
	want := make(map[[3]int][]byte)
	for l := range hp.Layers {
		for m, name := range []string{"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"} {
			ti, _ := f.Tensor(fmt.Sprintf("blk.%d.%s.weight", l, name))
			d, err := f.TensorData(ti)
			if err != nil {
				t.Fatal(err)
			}
			for e := range ne {
				n := len(d) / ne
				want[[3]int{l, e, m}] = d[e*n : (e+1)*n]
			}
		}
	}
	pool := kernels.NewPool(3)
	defer pool.Close()
	for _, par := range []bool{false, true} {
		for _, slots := range []int{used, used + 1, 2 * used, lay.Experts()} {
			a, err := arena.New(int(stream.ExpertCacheBytes(lay, slots)))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			c, err := stream.OpenExpertCacheWith(lay, path, a, stream.ExpertOptions{Slots: slots, GuessReads: slots%2 == 0})
			if err != nil {
				t.Fatal(err)
			}
			if par {
				c.SetParallel(pool.Parallel)
			}
			rng := rand.New(rand.NewPCG(uint64(slots), 1))
			list := func(n int) []int32 {
				var x []int32
				for range n {
					x = append(x, int32(rng.IntN(ne)))
				}
				return x
			}
			extra := 0 // requests beyond used per round
			for range 300 {
				l := rng.IntN(hp.Layers)
				if rng.IntN(2) == 0 {
					c.GuessExperts(l, list(rng.IntN(ne+1)))
				}
				announced := list(rng.IntN(ne + 1))
				ready := c.PrefetchExperts(l, announced)
				if ready < 0 || ready > len(announced) {
					t.Fatalf("%d slots: %d of %d announced experts ready", slots, ready, len(announced))
				}
				if par && slots == lay.Experts() && ready != len(announced) {
					t.Fatalf("%d slots, reads on the caller: %d of %d announced experts ready", slots, ready, len(announced))
				}
				for _, e := range announced[:ready] { // ready: Expert does not wait
					w := c.Stats().WaitTime
					if _, _, _, err := c.Expert(l, int(e)); err != nil {
						t.Fatal(err)
					}
					extra++
					if c.Stats().WaitTime != w {
						t.Fatalf("%d slots: expert %d of layer %d was announced ready, yet Expert waited", slots, e, l)
					}
				}
				asked := make(map[int][3]*model.Tensor)
				for range used {
					e := rng.IntN(ne)
					g, u, d, err := c.Expert(l, e)
					if err != nil {
						t.Fatal(err)
					}
					asked[e] = [3]*model.Tensor{g, u, d}
				}
				for e, ms := range asked { // still intact after the others' reads
					for m, got := range ms {
						if !bytes.Equal(got.Data, want[[3]int{l, e, m}]) {
							t.Fatalf("%d slots: layer %d expert %d matrix %d differs from the file", slots, l, e, m)
						}
					}
				}
			}
			c.Close()
			if st := c.Stats(); st.BytesRead != (st.Misses+st.Unused)*int64(lay.ExpertBytes) || st.Hits+st.Misses != int64(300*used+extra) {
				t.Errorf("%d slots: %+v, want every read a miss or unused", slots, st)
			}
		}
	}
}
