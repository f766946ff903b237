package model

import (
	"encoding/binary"
	"math"

	"github.com/qsf-llm/qsf/kernels"
	"github.com/qsf-llm/qsf/kvcache"
)

// Attention over the cache: softmax(q·K/√d)·V for every query head, over
// the positions the cache holds for its KV head. The cache (package
// kvcache) stores the keys and values and hands them out in the type it
// stores them in; the arithmetic is all here, one function per storage
// type, chosen once when a State is made (attenderFor), each computing
// what llama.cpp computes for such a cache (see exact.go).

// attender computes the attention output of query heads [lo, hi) of one
// token (a.att) for layer a.layer over its a.n cached slots.
type attender func(s *State, a attnArgs, lo, hi int)

// attnArgs is what the attention of one token reads besides the cache and
// the State's per-head buffers: the layer, the number of cached slots it
// attends to, its queries (heads × HeadDimK) and its output (heads ×
// HeadDimV).
type attnArgs struct {
	layer, n int
	q, att   []float32
}

// attenderFor returns the attention of a cache of type t.
func attenderFor(t kvcache.Type) attender {
	switch t {
	case kvcache.F32:
		return (*State).attendF32
	case kvcache.F16:
		return (*State).attendF16
	}
	return (*State).attendCoded
}

// query returns query head h.
func (s *State) query(a attnArgs, h int) []float32 {
	d := s.m.HeadDimK
	return a.q[h*d : (h+1)*d]
}

// scoresOf returns the scores of query head h over the a.n cached slots.
func (s *State) scoresOf(a attnArgs, h int) []float32 {
	c := s.KV.Capacity()
	return s.scores[h*c : h*c+a.n]
}

// output returns the attention output of query head h.
func (s *State) output(a attnArgs, h int) []float32 {
	d := s.m.HeadDimV
	return a.att[h*d : (h+1)*d]
}

// softmaxScores scales the dot products sc by scale (scoreScale) and
// replaces them by their softmax over llama.cpp's padded KV row.
func (s *State) softmaxScores(sc []float32, scale float32) {
	softmaxScaled(s.tier, sc, scale)
}

// attendF32 is the attention over an f32 cache in the order llama.cpp's
// f32 mat-muls add for one token (ggml_vec_dot_f32), or with BatchOrder
// in that of its batched evaluation (attendF32Batch).
func (s *State) attendF32(a attnArgs, lo, hi int) {
	if s.BatchOrder {
		s.attendF32Batch(a, lo, hi)
		return
	}
	hp := &s.m.Hparams
	if lo >= hi {
		return
	}
	keys := s.KV.Keys(a.layer, a.n)
	values := s.KV.Values(a.layer, a.n)
	kd, vd, hdk, hdv := hp.KDim(), hp.VDim(), hp.HeadDimK, hp.HeadDimV
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	c := s.KV.Capacity()
	// The heads' scores, then (after each head's softmax) their weighted
	// values, each read position after position, the heads of a cached
	// row together: the row is read once, in order, which the memory
	// fetches ahead (head after head, a head's slots are a row apart and
	// each read waits on memory). Each head's sums are those of
	// DotF32Rows and LanesF32 on it alone.
	kv0, g0 := lo/group, lo%group
	// The values are fetched on the way when laid out as the keys.
	var next []float32
	if hdk == hdv {
		next = values[kv0*hdv:]
	}
	s.tier.DotF32Heads(s.scores[lo*c:], c, keys[kv0*hdk:], kd, a.n, a.q[lo*hdk:hi*hdk], hdk, group, g0, next)
	for h := lo; h < hi; h++ {
		s.softmaxScores(s.scoresOf(a, h), scale)
	}
	// out[d] = Σ_t p[t]·V[t][d] over llama.cpp's KV row, which is padded
	// with zero-probability positions to a multiple of 32: position t
	// accumulates in lane t%32 of ggml_vec_dot_f32. A head's lanes hold
	// one vector of hdv accumulators per lane.
	// ValuesF32Heads reduces each head's lanes as GGML_F32x8_REDUCE.
	s.tier.ValuesF32Heads(a.att[lo*hdv:hi*hdv], s.vlanes[lo*hdv*32:hi*hdv*32], values[kv0*hdv:], vd, a.n, s.scores[lo*c:], c, hdv, group, g0)
}

// attendF32Batch is attendF32 in the order llama.cpp adds when it
// evaluates several tokens in one batch (llamafile's tinyBLAS,
// State.BatchOrder): each score as dotLanes when the head width is a
// multiple of 8 (else as for one token), and the outputs accumulated in 8
// lanes (position t in lane t%8) added with hsum8.
func (s *State) attendF32Batch(a attnArgs, lo, hi int) {
	hp := &s.m.Hparams
	keys := s.KV.Keys(a.layer, a.n)
	values := s.KV.Values(a.layer, a.n)
	kd, vd, hdk, hdv := hp.KDim(), hp.VDim(), hp.HeadDimK, hp.HeadDimV
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	for h := lo; h < hi; h++ {
		kvh := h / group
		q := s.query(a, h)
		sc := s.scoresOf(a, h)
		if hdk%8 == 0 {
			for t := range sc {
				sc[t] = dotLanes(q, keys[t*kd+kvh*hdk:t*kd+(kvh+1)*hdk])
			}
		} else {
			s.tier.DotF32Rows(sc, keys[kvh*hdk:], kd, q)
		}
		s.softmaxScores(sc, scale)
		lanes := s.vlanes[h*hdv*32 : h*hdv*32+hdv*8]
		s.tier.LanesF32(lanes, 8, values[kvh*hdv:], vd, sc)
		out := s.output(a, h)
		var acc [8]float32
		for d := range out {
			for l := range acc {
				acc[l] = lanes[l*hdv+d]
			}
			out[d] = hsum8(&acc)
		}
	}
}

// attendF16 is the attention over an f16 cache, as llama.cpp computes it
// with its default f16 cache (flash attention off, one token per call):
// the query is rounded to f16 (the vec_dot_type of an f16 matrix) and each
// score is ggml_vec_dot_f16 of it with a cached key; after the scale and
// the softmax, the probabilities are rounded to f16 and output dimension d
// is ggml_vec_dot_f16 of them with row d of llama.cpp's transposed values,
// over the KV row padded to a multiple of 32 positions. With GQA the query
// heads of a group share their KV head, as ggml_mul_mat broadcasts it.
// The query and the scores are rounded in place, so Observe sees the
// probabilities the values were weighted with. Batch order (llama.cpp's
// tinyBLAS) is not reproduced for f16.
//
// The cache is slot-major, as the f32 one, and is read as attendF32 reads
// it: the heads' scores with DotF16Heads (each DotF16Rows' sum), then
// their weighted values with ValuesF16Heads (each DotF16RowsPadded's sum
// over the transposed values).
func (s *State) attendF16(a attnArgs, lo, hi int) {
	if lo >= hi {
		return
	}
	hp := &s.m.Hparams
	keys := s.KV.KeysF16(a.layer, a.n)
	values := s.KV.ValuesF16(a.layer, a.n)
	kd, vd, hdk, hdv := hp.KDim(), hp.VDim(), hp.HeadDimK, hp.HeadDimV
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	c := s.KV.Capacity()
	kv0, g0 := lo/group, lo%group
	q := a.q[lo*hdk : hi*hdk]
	s.tier.RoundF16(q)
	// The values are fetched on the way when laid out as the keys.
	var next []uint16
	if hdk == hdv {
		next = values[kv0*hdv:]
	}
	s.tier.DotF16Heads(s.scores[lo*c:], c, keys[kv0*hdk:], kd, a.n, q, hdk, group, g0, next)
	for h := lo; h < hi; h++ {
		sc := s.scoresOf(a, h)
		s.softmaxScores(sc, scale)
		s.tier.RoundF16(sc)
	}
	s.tier.ValuesF16Heads(a.att[lo*hdv:hi*hdv], s.vlanes[lo*hdv*32:hi*hdv*32], values[kv0*hdv:], vd, a.n, s.scores[lo*c:], c, hdv, group, g0)
}

// attendCoded is the attention over a cache of quantized entries (Q8,
// Q4, Q2): the dot products read the stored codes, decoded to float32,
// one cached position after another. The query heads of a KV head go
// together, up to eight at a time as the lanes of kernels.LanesDotSeq
// (their queries transposed once): each block of cached keys is decoded
// once for them (once per eight heads of a wider group), and each block
// of cached values once for all of them (kernels.AddScaledHeads, which
// adds a block's values to a head's output in order). Each head's
// arithmetic is that of dotCodedKey and addCodedValue on it alone
// (attendCodedHeads), in the same order.
func (s *State) attendCoded(a attnArgs, lo, hi int) {
	hp := &s.m.Hparams
	hdk, hdv := hp.HeadDimK, hp.HeadDimV
	if hdk > maxCodedDim || hdv > maxCodedDim {
		s.attendCodedHeads(a, lo, hi)
		return
	}
	l, typ := a.layer, s.KV.Type()
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	// A key group's per-channel scales and offsets; a block of decoded
	// keys, or of values; up to eight query heads transposed
	// (element i of head h0+j at lanes[8*i+j]) and their scores of the
	// block's keys; a block of values' scales and offsets, and their
	// weights and offsets for eight heads (value-major).
	var kscale, koff [maxCodedDim]float32
	var kv [codedBlock * maxCodedDim]float32
	var lanes [8 * maxCodedDim]float32
	var dots [8 * codedBlock]float32
	var vs, vo [codedBlock]float32
	var ws, fs [codedBlock * 8]float32
	for h0 := lo; h0 < hi; {
		kvh := h0 / group
		h1 := min(hi, (kvh+1)*group)
		for g0 := h0; g0 < h1; g0 += 8 {
			g1 := min(h1, g0+8)
			if g1-g0 < 8 {
				clear(lanes[:8*hdk])
			}
			for h := g0; h < g1; h++ {
				for i, x := range s.query(a, h) {
					lanes[8*i+h-g0] = x
				}
			}
			for t := 0; t < a.n; {
				ck := s.KV.KeyCodes(l, t, kvh)
				end := min(ck.First+ck.Slots, a.n)
				if ck.Exact == nil {
					for i := range hdk {
						kscale[i], koff[i] = getF32(ck.Scales[4*i:]), getF32(ck.Offsets[4*i:])
					}
				}
				for t < end {
					m := min(codedBlock, end-t)
					j := t - ck.First
					if ck.Exact != nil {
						s.tier.LanesDotSeq(dots[:], lanes[:], ck.Exact[j*ck.Stride:], ck.Stride, m, hdk)
					} else {
						for b := range m {
							decodeCodedKey(s.tier, typ, kv[b*hdk:][:hdk], ck.Codes[(j+b)*ck.Stride:], &kscale, &koff)
						}
						s.tier.LanesDotSeq(dots[:], lanes[:], kv[:], hdk, m, hdk)
					}
					for h := g0; h < g1; h++ {
						sc := s.scoresOf(a, h)[t : t+m]
						for b := range sc {
							sc[b] = dots[8*b+h-g0]
						}
					}
					t += m
				}
			}
		}
		for h := h0; h < h1; h++ {
			s.softmaxScores(s.scoresOf(a, h), scale)
			clear(s.output(a, h))
		}
		for t := 0; t < a.n; t += codedBlock {
			m := min(codedBlock, a.n-t)
			for b := range m {
				codes, vscale, voff := s.KV.ValueCodes(l, t+b, kvh)
				decodeCodes(s.tier, typ, kv[b*hdv:][:hdv], codes)
				vs[b], vo[b] = vscale, voff
			}
			for g0 := h0; g0 < h1; g0 += 8 {
				heads := min(h1-g0, 8)
				for j := range heads {
					sc := s.scoresOf(a, g0+j)[t : t+m]
					for b, p := range sc {
						ws[b*heads+j], fs[b*heads+j] = p*vs[b], float32(p*vo[b])
					}
				}
				var f []float32
				if typ != kvcache.Q8 {
					f = fs[:m*heads]
				}
				s.tier.AddScaledHeads(a.att[g0*hdv:], hdv, kv[:m*hdv], hdv, ws[:m*heads], f, heads)
			}
		}
		h0 = h1
	}
}

// maxCodedDim is the widest head attendCoded decodes on its stack; wider
// ones go head by head (attendCodedHeads).
const maxCodedDim = 256

// codedBlock is how many cached keys attendCoded decodes at a time.
const codedBlock = 8

// decodeCodedKey writes a key of a coded group to k: element i is
// offset[i] + scale[i]·code(i), the product rounded to float32, as
// dotCodedKey computes it. A Q4 key is decoded by tier tr's
// kernels.DecodeQ4.
func decodeCodedKey(tr *kernels.Tier, t kvcache.Type, k []float32, codes []byte, scale, offset *[maxCodedDim]float32) {
	sc, off := scale[:len(k)], offset[:len(k)]
	switch t {
	case kvcache.Q4:
		tr.DecodeQ4(k, codes, sc, off)
		return
	case kvcache.Q8: // a key's codes are unsigned
		for i, c := range codes[:len(k)] {
			k[i] = float32(c)
		}
	default:
		decodeCodes(tr, t, k, codes)
	}
	for i, c := range k {
		k[i] = off[i] + float32(sc[i]*c)
	}
}

// decodeCodes writes the codes of a cached value (or of a Q2 key)
// to v as float32, Q8's as signed bytes, as addCodedValue reads them;
// Q4's with tier tr's kernels.DecodeQ4.
func decodeCodes(tr *kernels.Tier, t kvcache.Type, v []float32, codes []byte) {
	switch t {
	case kvcache.Q8:
		codes = codes[:len(v)]
		for i, c := range codes {
			v[i] = float32(int8(c))
		}
	case kvcache.Q4:
		tr.DecodeQ4(v, codes, nil, nil)
	case kvcache.Q2:
		for i := range v {
			v[i] = float32(codes[i/4] >> (2 * (i % 4)) & 3)
		}
	}
}

// attendCodedHeads is attendCoded head by head, decoding each key and
// value for each head: for heads wider than maxCodedDim.
func (s *State) attendCodedHeads(a attnArgs, lo, hi int) {
	hp := &s.m.Hparams
	l, typ := a.layer, s.KV.Type()
	group := hp.Heads / hp.KVHeads
	scale := scoreScale(hp)
	for h := lo; h < hi; h++ {
		kvh := h / group
		q := s.query(a, h)
		sc := s.scoresOf(a, h)
		for t := 0; t < len(sc); {
			ck := s.KV.KeyCodes(l, t, kvh)
			for end := min(ck.First+ck.Slots, len(sc)); t < end; t++ {
				sc[t] = dotCodedKey(typ, q, &ck, t-ck.First)
			}
		}
		s.softmaxScores(sc, scale)
		out := s.output(a, h)
		clear(out)
		for t, p := range sc {
			codes, scale, offset := s.KV.ValueCodes(l, t, kvh)
			addCodedValue(typ, out, codes, p*scale, float32(p*offset))
		}
	}
}

// dotCodedKey returns q·k for the key of slot ck.First+j of a quantized
// cache as kvcache.Cache.KeyCodes hands it out: exact, or codes with a
// scale and offset per channel (element i is offset[i] + scale[i]·code(i)).
func dotCodedKey(t kvcache.Type, q []float32, ck *kvcache.CodedKeys, j int) float32 {
	var dot float32
	if ck.Exact != nil {
		k := ck.Exact[j*ck.Stride:]
		k = k[:len(q)]
		for i, v := range q {
			dot += float32(v * k[i])
		}
		return dot
	}
	codes, sc, mn := ck.Codes[j*ck.Stride:], ck.Scales, ck.Offsets
	switch t {
	case kvcache.Q8:
		for i, v := range q {
			dot += float32(v * (getF32(mn[4*i:]) + float32(getF32(sc[4*i:])*float32(codes[i]))))
		}
	case kvcache.Q4:
		for i, v := range q {
			dot += float32(v * (getF32(mn[4*i:]) + float32(getF32(sc[4*i:])*float32(codes[i/2]>>(4*(i%2))&15))))
		}
	case kvcache.Q2:
		for i, v := range q {
			dot += float32(v * (getF32(mn[4*i:]) + float32(getF32(sc[4*i:])*float32(codes[i/4]>>(2*(i%4))&3))))
		}
	}
	return dot
}

// addCodedValue adds p times a value of a quantized cache, as
// kvcache.Cache.ValueCodes hands it out, to out: scale and offset are the
// value's, already multiplied by p.
func addCodedValue(t kvcache.Type, out []float32, codes []byte, scale, offset float32) {
	switch t {
	case kvcache.Q8:
		codes = codes[:len(out)]
		for i := range out {
			out[i] += float32(scale * float32(int8(codes[i])))
		}
	case kvcache.Q4:
		for i := range out {
			out[i] += float32(scale*float32(codes[i/2]>>(4*(i%2))&15)) + offset
		}
	case kvcache.Q2:
		for i := range out {
			out[i] += float32(scale*float32(codes[i/4]>>(2*(i%4))&3)) + offset
		}
	}
}

// getF32 reads a little-endian float32.
func getF32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
