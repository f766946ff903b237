package qsf

import "testing"

func TestSamplerGreedyTies(t *testing.T) {
	if got := NewSampler(SamplerOptions{}).Sample([]float32{1, 3, 3, 2}); got != 1 {
		t.Errorf("greedy picked %d, want the lowest id of the tie, 1", got)
	}
}

// draw returns how often each id is drawn in n samples.
func draw(opts SamplerOptions, logits []float32, n int) map[int]int {
	s := NewSampler(opts)
	seen := map[int]int{}
	for range n {
		seen[s.Sample(logits)]++
	}
	return seen
}

func TestSamplerFilters(t *testing.T) {
	logits := []float32{2, 1.9, 1.8, -5, 0.5}
	tests := []struct {
		name    string
		opts    SamplerOptions
		allowed map[int]bool
	}{
		{"top-k 2", SamplerOptions{Temperature: 1, TopK: 2, Seed: 1}, map[int]bool{0: true, 1: true}},
		{"top-k 1", SamplerOptions{Temperature: 5, TopK: 1, Seed: 1}, map[int]bool{0: true}},
		{"min-p 0.5", SamplerOptions{Temperature: 1, MinP: 0.5, Seed: 1}, map[int]bool{0: true, 1: true, 2: true}},
		{"top-p 0.5", SamplerOptions{Temperature: 1, TopP: 0.5, Seed: 1}, map[int]bool{0: true, 1: true}},
		{"all", SamplerOptions{Temperature: 1, Seed: 1}, map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true}},
	}
	for _, tt := range tests {
		seen := draw(tt.opts, logits, 4000)
		for id := range seen {
			if !tt.allowed[id] {
				t.Errorf("%s: drew %d, allowed %v", tt.name, id, tt.allowed)
			}
		}
		for id := range tt.allowed {
			if id != 3 && seen[id] == 0 {
				t.Errorf("%s: never drew %d in 4000 samples: %v", tt.name, id, seen)
			}
		}
	}
}

func TestSamplerTemperature(t *testing.T) {
	logits := []float32{1, 0}
	cold := draw(SamplerOptions{Temperature: 0.1, Seed: 3}, logits, 2000)
	hot := draw(SamplerOptions{Temperature: 10, Seed: 3}, logits, 2000)
	if cold[1] > 10 {
		t.Errorf("T=0.1 drew the weaker token %d times in 2000", cold[1])
	}
	if hot[1] < 800 {
		t.Errorf("T=10 drew the weaker token only %d times in 2000", hot[1])
	}
}

func TestSamplerPenalties(t *testing.T) {
	logits := []float32{3, 2.9, 0}
	for _, tt := range []struct {
		name string
		opts SamplerOptions
		want int
	}{
		{"none", SamplerOptions{}, 0},
		{"repeat", SamplerOptions{RepeatPenalty: 1.1}, 1},
		{"frequency", SamplerOptions{FrequencyPenalty: 0.2}, 1},
		{"presence", SamplerOptions{PresencePenalty: 0.2}, 1},
	} {
		s := NewSampler(tt.opts)
		s.Accept(0)
		if got := s.Sample(logits); got != tt.want {
			t.Errorf("%s: picked %d, want %d", tt.name, got, tt.want)
		}
		if logits[0] != 3 {
			t.Fatalf("%s: Sample modified the logits", tt.name)
		}
	}
	// The window forgets old tokens.
	s := NewSampler(SamplerOptions{RepeatPenalty: 2, RepeatLastN: 2})
	s.Accept(0)
	s.Accept(2)
	s.Accept(2)
	if got := s.Sample(logits); got != 0 {
		t.Errorf("token 0 left the 2-token window but was still penalized: picked %d", got)
	}
}

func TestSamplerSeed(t *testing.T) {
	logits := make([]float32, 100)
	for i := range logits {
		logits[i] = float32(i%7) * 0.3
	}
	opts := SamplerOptions{Temperature: 1, Seed: 99}
	a, b := NewSampler(opts), NewSampler(opts)
	for i := range 50 {
		if x, y := a.Sample(logits), b.Sample(logits); x != y {
			t.Fatalf("draw %d: %d vs %d with the same seed", i, x, y)
		}
	}
}

func TestStopWriter(t *testing.T) {
	tests := []struct {
		pieces []string
		want   string
		stop   bool
	}{
		{[]string{"ab", "cE", "ND", "x"}, "abc", true},
		{[]string{"ab", "cE", "N", "x"}, "abcENx", false},
		{[]string{"E", "E", "N", "D"}, "E", true},
		{[]string{"no", " stop"}, "no stop", false},
	}
	for _, tt := range tests {
		w := newStopWriter(nil, []string{"END", ""})
		var out string
		stopped := false
		for _, p := range tt.pieces {
			w.pending += p
			text, stop := w.scan()
			out += text
			if stop {
				stopped = true
				break
			}
		}
		if !stopped {
			out += w.pending
		}
		if out != tt.want || stopped != tt.stop {
			t.Errorf("%q: got %q (stop %v), want %q (stop %v)", tt.pieces, out, stopped, tt.want, tt.stop)
		}
	}
}
