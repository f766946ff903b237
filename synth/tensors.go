package synth

import (
	"fmt"
	"math"
)

// role is what a tensor does, which decides its type in a quantized mix.
type role int

const (
	roleNorm role = iota
	roleTokenEmbd
	roleOutput
	roleAttnV
	roleFFNDown
	roleRouter // ffn_gate_inp, which llama-quantize leaves F32
	roleOther  // the remaining 2-D weights
)

// layout is one tensor of a shape before a type is chosen.
type layout struct {
	name  string
	ne0   int // row length (ggml ne[0])
	ne1   int // rows; 0 for a vector
	ne2   int // experts of a stacked 3-D tensor; 0 for a vector or matrix
	role  role
	layer int     // block index, -1 outside the blocks
	std   float64 // standard deviation of the weights; 0 means all ones
}

func (l layout) elements() int64 {
	return int64(l.ne0) * int64(l.rows())
}

func (l layout) rows() int { return max(l.ne1, 1) * max(l.ne2, 1) }

// tensors lists the tensors of the shape in file order, in the order
// llama.cpp's converter writes them.
func (s Shape) tensors() []layout {
	e, q, kv := s.Embd, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	fanIn := func(n int) float64 { return 1 / math.Sqrt(float64(n)) }
	ts := []layout{{name: "token_embd.weight", ne0: e, ne1: s.Vocab, role: roleTokenEmbd, layer: -1, std: 1}}
	for i := range s.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			layout{name: p + "attn_norm.weight", ne0: e, role: roleNorm, layer: i},
			layout{name: p + "attn_q.weight", ne0: e, ne1: q, role: roleOther, layer: i, std: fanIn(e)},
			layout{name: p + "attn_k.weight", ne0: e, ne1: kv, role: roleOther, layer: i, std: fanIn(e)},
			layout{name: p + "attn_v.weight", ne0: e, ne1: kv, role: roleAttnV, layer: i, std: fanIn(e)},
			layout{name: p + "attn_output.weight", ne0: q, ne1: e, role: roleOther, layer: i, std: fanIn(q)},
		)
		if s.QKNorm {
			ts = append(ts,
				layout{name: p + "attn_q_norm.weight", ne0: s.HeadDim, role: roleNorm, layer: i},
				layout{name: p + "attn_k_norm.weight", ne0: s.HeadDim, role: roleNorm, layer: i},
			)
		}
		if s.Experts > 0 {
			f, n := s.expertFFN(), s.Experts
			ts = append(ts,
				layout{name: p + "ffn_norm.weight", ne0: e, role: roleNorm, layer: i},
				layout{name: p + "ffn_gate_inp.weight", ne0: e, ne1: n, role: roleRouter, layer: i, std: fanIn(e)},
				layout{name: p + "ffn_gate_exps.weight", ne0: e, ne1: f, ne2: n, role: roleOther, layer: i, std: fanIn(e)},
				layout{name: p + "ffn_up_exps.weight", ne0: e, ne1: f, ne2: n, role: roleOther, layer: i, std: fanIn(e)},
				layout{name: p + "ffn_down_exps.weight", ne0: f, ne1: e, ne2: n, role: roleFFNDown, layer: i, std: fanIn(f)},
			)
			continue
		}
		ts = append(ts,
			layout{name: p + "ffn_norm.weight", ne0: e, role: roleNorm, layer: i},
			layout{name: p + "ffn_gate.weight", ne0: e, ne1: s.FFN, role: roleOther, layer: i, std: fanIn(e)},
			layout{name: p + "ffn_up.weight", ne0: e, ne1: s.FFN, role: roleOther, layer: i, std: fanIn(e)},
			layout{name: p + "ffn_down.weight", ne0: s.FFN, ne1: e, role: roleFFNDown, layer: i, std: fanIn(s.FFN)},
		)
	}
	ts = append(ts, layout{name: "output_norm.weight", ne0: e, role: roleNorm, layer: -1})
	if !s.TiedEmbeddings {
		ts = append(ts, layout{name: "output.weight", ne0: e, ne1: s.Vocab, role: roleOutput, layer: -1, std: fanIn(e)})
	}
	return ts
}
