package model

// The bitnet architecture (llama.cpp's LLM_ARCH_BITNET, b4748's
// build_bitnet) is llama with NeoX RoPE and two more RMSNorms per layer:
// one of the attention output before its projection (attn_sub_norm) and
// one of the FFN's hidden vector before the down projection
// (ffn_sub_norm, n_ff wide). Its projections may carry a one-element
// ".scale" tensor each (files in the original BitNet form store sign
// weights and the scale apart; b4748's converter folds it in and writes
// none); the forward pass multiplies the product by it, (W·h)·s, before
// the bias, the activation or the residual add. The LM head is always the
// token embedding: b4748 does not look for output.weight.

// BitNet holds the tensors a bitnet layer adds to Block. They are nil for
// every other architecture, and each scale is nil when the file has none.
type BitNet struct {
	AttnSubNorm, FFNSubNorm []float32

	QScale, KScale, VScale, OScale []float32 // one element each
	GateScale, UpScale, DownScale  []float32
}

// isBitNet says whether hp is the bitnet architecture.
func (hp *Hparams) isBitNet() bool { return hp.Arch == "bitnet" }

// bitnet loads the sub-norms and scales of layer prefix p.
func (l *loader) bitnet(b *BitNet, p string) {
	hp := l.hp
	if !hp.isBitNet() {
		return
	}
	b.AttnSubNorm = l.vector(p+"attn_sub_norm.weight", hp.Heads*hp.HeadDimV, true)
	b.FFNSubNorm = l.vector(p+"ffn_sub_norm.weight", hp.FFN, true)
	for _, e := range []struct {
		dst  *[]float32
		name string
	}{
		{&b.QScale, "attn_q"}, {&b.KScale, "attn_k"}, {&b.VScale, "attn_v"}, {&b.OScale, "attn_output"},
		{&b.GateScale, "ffn_gate"}, {&b.UpScale, "ffn_up"}, {&b.DownScale, "ffn_down"},
	} {
		*e.dst = l.vector(p+e.name+".scale", 1, false)
	}
}

// mulScale multiplies x by the one-element scale s, when there is one.
func mulScale(x, s []float32) {
	if s != nil {
		scale(x, s[0])
	}
}

// subNorm replaces x by RMSNorm(x)·w when the layer has the sub-norm w.
func (s *State) subNorm(x, w []float32) {
	if w != nil {
		rmsNorm(x, x, w, s.m.NormEps)
	}
}
