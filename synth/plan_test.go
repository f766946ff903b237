package synth_test

import (
	"testing"

	"github.com/qsf-llm/qsf/quant"
	"github.com/qsf-llm/qsf/synth"
)

// TestPlan12L768 checks the 12L-768 plans against the llama.cpp files
// described in the shared reference/PERF.md: tensor type counts exactly, and
// file sizes up to the vocabulary strings in the header (PERF.md's files
// carry LLaMA's real vocabulary, ours a generated one of the same size).
func TestPlan12L768(t *testing.T) {
	s, err := synth.LookupShape("12L-768")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Params(); got != 134_105_856 {
		t.Errorf("12L-768 has %d parameters, want 134,105,856", got)
	}
	tests := []struct {
		ft       synth.FileType
		counts   map[quant.Type]int
		perfFile int64 // file size in PERF.md
	}{
		{synth.F32, map[quant.Type]int{quant.F32: 111}, 537_153_888},
		{synth.Q8_0, map[quant.Type]int{quant.Q8_0: 86, quant.F32: 25}, 143_274_368},
		{synth.Q4_0, map[quant.Type]int{quant.Q4_0: 85, quant.Q6_K: 1, quant.F32: 25}, 82_567_040},
		{synth.Q4_KM, map[quant.Type]int{quant.Q4_K: 73, quant.Q6_K: 13, quant.F32: 25}, 85_912_448},
	}
	var header0, extra0 int64
	for i, tt := range tests {
		p, err := synth.NewPlan(s, tt.ft, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := p.TypeCounts()
		for typ, n := range tt.counts {
			if got[typ] != n {
				t.Errorf("%v: %d %v tensors, want %d (all: %v)", tt.ft, got[typ], typ, n, got)
			}
		}
		if len(got) != len(tt.counts) {
			t.Errorf("%v: types %v, want %v", tt.ft, got, tt.counts)
		}
		// The rest of PERF.md's file is its header: the same metadata
		// for every type but general.quantization_version (44 bytes)
		// and alignment padding (< 32 bytes).
		header := tt.perfFile - p.TensorBytes()
		if i == 0 {
			header0 = header
		}
		if header < 700_000 || header > 760_000 || header-header0 < 0 || header-header0 > 44+32 {
			t.Errorf("%v: PERF.md file %d bytes − tensor data %d = %d header bytes, inconsistent with f32's %d",
				tt.ft, tt.perfFile, p.TensorBytes(), header, header0)
		}
		size, err := p.FileSize()
		if err != nil {
			t.Fatal(err)
		}
		// Our header differs from PERF.md's by the same amount for
		// every type: only the vocabulary strings differ.
		if extra := size - tt.perfFile; i == 0 {
			extra0 = extra
		} else if extra != extra0 {
			t.Errorf("%v: our file is %d bytes larger than PERF.md's, f32's is %d larger", tt.ft, extra, extra0)
		}
		t.Logf("%v: %v, tensor data %d bytes, our file %d bytes, PERF.md file %d bytes (header %d)",
			tt.ft, got, p.TensorBytes(), size, tt.perfFile, header)
	}
}

// TestQ4KMLayers checks which layers get Q6_K in the Q4_K_M mix of 12L-768:
// use_more_bits picks 0, 3, 6, 9, 10 and 11 of 12.
func TestQ4KMLayers(t *testing.T) {
	s, _ := synth.LookupShape("12L-768")
	p, err := synth.NewPlan(s, synth.Q4_KM, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]quant.Type{"token_embd.weight": quant.Q4_K, "output.weight": quant.Q6_K, "blk.1.attn_q.weight": quant.Q4_K}
	for _, l := range []string{"0", "3", "6", "9", "10", "11"} {
		want["blk."+l+".attn_v.weight"] = quant.Q6_K
		want["blk."+l+".ffn_down.weight"] = quant.Q6_K
	}
	for _, l := range []string{"1", "2", "4", "5", "7", "8"} {
		want["blk."+l+".attn_v.weight"] = quant.Q4_K
		want["blk."+l+".ffn_down.weight"] = quant.Q4_K
	}
	for _, tn := range p.Tensors {
		if w, ok := want[tn.Name]; ok && tn.Type != w {
			t.Errorf("%s is %v, want %v", tn.Name, tn.Type, w)
		}
	}
}

// TestTiedOutput checks Qwen3's tied embedding: no output.weight, and the
// token embedding quantized as the output would be.
func TestTiedOutput(t *testing.T) {
	s, _ := synth.LookupShape("qwen3-0.6b")
	for _, tt := range []struct {
		ft   synth.FileType
		want quant.Type
	}{{synth.Q4_KM, quant.Q6_K}, {synth.Q8_0, quant.Q8_0}} {
		p, err := synth.NewPlan(s, tt.ft, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range p.Tensors {
			switch tn.Name {
			case "output.weight":
				t.Errorf("%v: tied shape has output.weight", tt.ft)
			case "token_embd.weight":
				if tn.Type != tt.want {
					t.Errorf("%v: token_embd is %v, want %v", tt.ft, tn.Type, tt.want)
				}
			case "blk.0.attn_q_norm.weight":
				if tn.Shape[0] != 128 || tn.Type != quant.F32 {
					t.Errorf("%v: attn_q_norm %v %v", tt.ft, tn.Shape, tn.Type)
				}
			}
		}
		if k, ok := p.Metadata.Uint("qwen3.attention.key_length"); !ok || k != 128 {
			t.Errorf("qwen3.attention.key_length = %d, %v", k, ok)
		}
	}
}

// TestTQ2_0Mix checks llama-quantize's TQ2_0 rules on 12L-768: every
// layer matrix TQ2_0, the LM head Q6_K and the (untied) token embedding
// Q4_K.
func TestTQ2_0Mix(t *testing.T) {
	s, err := synth.LookupShape("12L-768")
	if err != nil {
		t.Fatal(err)
	}
	p, err := synth.NewPlan(s, synth.TQ2_0, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[quant.Type]int{quant.TQ2_0: 84, quant.Q4_K: 1, quant.Q6_K: 1, quant.F32: 25}
	got := p.TypeCounts()
	if len(got) != len(want) {
		t.Fatalf("types %v, want %v", got, want)
	}
	for typ, n := range want {
		if got[typ] != n {
			t.Errorf("%d %v tensors, want %d (all: %v)", got[typ], typ, n, got)
		}
	}
}
