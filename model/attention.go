package model

import "github.com/qsf-llm/qsf/kvcache"

// attendHeads computes softmax(q·K/√d)·V for query heads [lo, hi), in
// the order llama.cpp's f32 mat-muls add (see exact.go).
func (s *State) attendHeads(lo, hi int) {
	switch s.KV.Type() {
	case kvcache.F32:
	case kvcache.F16:
		s.attendF16(lo, hi)
		return
	default:
		s.attendCoded(lo, hi)
		return
	}
	hp := &s.m.Hparams
	n := s.n
	keys := s.KV.Keys(s.layer, n)
	values := s.KV.Values(s.layer, n)
	kd, vd, hdk, hdv := hp.KDim(), hp.VDim(), hp.HeadDimK, hp.HeadDimV
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	for h := lo; h < hi; h++ {
		kvh := h / group
		q := s.q[h*hdk : (h+1)*hdk]
		sc := s.scores[h*s.KV.Capacity() : h*s.KV.Capacity()+n]
		if s.BatchOrder && hdk%8 == 0 {
			for t := range sc {
				sc[t] = dotLanes(q, keys[t*kd+kvh*hdk:t*kd+(kvh+1)*hdk])
			}
		} else {
			s.tier.DotF32Rows(sc, keys[kvh*hdk:], kd, q)
		}
		for t := range sc {
			sc[t] *= scale
		}
		softmaxPadded(s.tier, sc)

		// out[d] = Σ_t p[t]·V[t][d] over llama.cpp's KV row, which is padded
		// with zero-probability positions to a multiple of 32: position t
		// accumulates in lane t%32 of ggml_vec_dot_f32 (t%8 of tinyBLAS in
		// batch order). lanes holds one vector of hdv accumulators per lane.
		width := 32
		if s.BatchOrder {
			width = 8
		}
		lanes := s.vlanes[h*hdv*32 : h*hdv*32+hdv*width]
		s.tier.LanesF32(lanes, width, values[kvh*hdv:], vd, sc)
		out := s.att[h*hdv : (h+1)*hdv]
		if !s.BatchOrder {
			s.tier.ReduceLanes32F32(out, lanes)
			continue
		}
		var acc [8]float32
		for d := range out {
			for l := range acc {
				acc[l] = lanes[l*hdv+d]
			}
			out[d] = hsum8(&acc)
		}
	}
}

// attendF16 is attendHeads for an f16 cache, as llama.cpp computes
// attention with its default f16 cache (flash attention off, one token per
// call): the query is rounded to f16 (the vec_dot_type of an f16 matrix)
// and each score is ggml_vec_dot_f16 of it with a cached key; after the
// scale and the softmax, the probabilities are rounded to f16 and output
// dimension d is ggml_vec_dot_f16 of them with row d of the transposed
// values, over the KV row padded to a multiple of 32 positions. With GQA
// the query heads of a group share their KV head, as ggml_mul_mat
// broadcasts it. The query and the scores are rounded in place, so
// Observe sees the probabilities the values were weighted with. Batch
// order (llama.cpp's tinyBLAS) is not reproduced for f16.
func (s *State) attendF16(lo, hi int) {
	hp := &s.m.Hparams
	n := s.n
	vt, stride := s.KV.ValuesF16(s.layer)
	hdk, hdv := hp.HeadDimK, hp.HeadDimV
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	for h := lo; h < hi; h++ {
		kvh := h / group
		q := s.q[h*hdk : (h+1)*hdk]
		s.tier.RoundF16(q)
		sc := s.scores[h*s.KV.Capacity() : h*s.KV.Capacity()+n]
		s.tier.DotF16Rows(sc, s.KV.KeysF16(s.layer, kvh, n), hdk, q)
		for t := range sc {
			sc[t] *= scale
		}
		softmaxPadded(s.tier, sc)
		s.tier.RoundF16(sc)
		s.tier.DotF16RowsPadded(s.att[h*hdv:(h+1)*hdv], vt[kvh*hdv*stride:], stride, sc)
	}
}

// attendCoded is attendHeads for a cache of quantized entries: the dot
// products read the stored codes directly.
func (s *State) attendCoded(lo, hi int) {
	hp := &s.m.Hparams
	n, l := s.n, s.layer
	hdk, hdv := hp.HeadDimK, hp.HeadDimV
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	for h := lo; h < hi; h++ {
		kvh := h / group
		q := s.q[h*hdk : (h+1)*hdk]
		sc := s.scores[h*s.KV.Capacity() : h*s.KV.Capacity()+n]
		for t := range sc {
			sc[t] = s.KV.DotKey(l, t, kvh, q) * scale
		}
		softmaxPadded(s.tier, sc)
		out := s.att[h*hdv : (h+1)*hdv]
		clear(out)
		for t, p := range sc {
			s.KV.AddValue(out, l, t, kvh, p)
		}
	}
}
