package synth_test

import (
	"context"
	"testing"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
	"github.com/qsf-llm/qsf/synth"
)

// TestMoEShapes checks the mixture-of-experts shapes' sizes against the
// published parameter counts (Qwen3-30B-A3B: 30.5B total, 3.3B active;
// Mixtral 8x7B: 46.7B total, 12.9B active) and their quantized plans
// against llama-quantize's rules: routers stay F32.
func TestMoEShapes(t *testing.T) {
	for _, c := range []struct {
		name          string
		total, active float64 // billions
	}{
		{"qwen3-30b-a3b", 30.5, 3.3},
		{"mixtral-8x7b", 46.7, 12.9},
	} {
		s, err := synth.LookupShape(c.name)
		if err != nil {
			t.Fatal(err)
		}
		total, active := float64(s.Params())/1e9, float64(s.ActiveParams())/1e9
		if total < c.total*0.99 || total > c.total*1.01 || active < c.active*0.97 || active > c.active*1.03 {
			t.Errorf("%s: %.2fB parameters, %.2fB active; want %.1fB, %.1fB", c.name, total, active, c.total, c.active)
		}
		p, err := synth.NewPlan(s, synth.Q4_0, 1)
		if err != nil {
			t.Fatal(err)
		}
		routers := 0
		for _, tn := range p.Tensors {
			if len(tn.Shape) == 2 && tn.Shape[1] == uint64(s.Experts) {
				routers++
				if tn.Type != quant.F32 {
					t.Errorf("%s: router %s is %v, want F32", c.name, tn.Name, tn.Type)
				}
			}
		}
		if routers != s.Layers {
			t.Errorf("%s: %d routers, want %d", c.name, routers, s.Layers)
		}
	}
}

// TestTinyMoELoadsAndGenerates writes the tiny-moe shape, loads it with
// its 3-D expert tensors and generates with it.
func TestTinyMoELoadsAndGenerates(t *testing.T) {
	for _, ft := range []synth.FileType{synth.F32, synth.Q4_0, synth.Q8_0} {
		path, p := writeFile(t, "tiny-moe", ft, 1, 2)
		f, err := format.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ti, ok := f.Tensor("blk.1.ffn_down_exps.weight")
		if !ok || len(ti.Shape) != 3 || ti.Shape[2] != 8 || ti.Rows() != 8*256 {
			t.Errorf("%v: blk.1.ffn_down_exps.weight %+v", ft, ti)
		}
		if n, _ := f.Metadata.Uint("llama.expert_count"); n != 8 {
			t.Errorf("%v: llama.expert_count = %d", ft, n)
		}
		f.Close()
		if p.Shape.Params() <= p.Shape.ActiveParams() {
			t.Errorf("%d parameters, %d active", p.Shape.Params(), p.Shape.ActiveParams())
		}
		m, err := qsf.Load(path, qsf.Config{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Generate(context.Background(), "the quick brown fox", qsf.GenerateOptions{MaxTokens: 8}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tokens) == 0 {
			t.Errorf("%v: no tokens generated", ft)
		}
		s.Close()
		m.Close()
	}
}
