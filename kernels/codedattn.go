package kernels

// The kernels of attention over a cache of quantized (coded) entries: the
// keys and values are decoded to float32 first, and these compute on them
// in the fixed order that defines the results' bits, every product
// rounded to float32 before it is added (no fused multiply-add).

// LanesDotSeq sets out[8*t+h], for each of the n keys t and each of the
// 8 lanes h, to the dot product of key t with lane h of q, summed in
// element order: d += float32(q·k) for i = 0, 1, ..., d-1, from 0. Key t
// is keys[t*stride:][:d]; q holds the lanes element-major, element i of
// lane h at q[8*i+h] (query heads transposed, lanes = heads). Each lane's
// sum is that of a sequential float32 loop over the elements, so the
// result is the same bits whatever the tier.
//
// It panics if q has fewer than 8*d elements, keys fewer than
// (n-1)*stride+d (when n > 0), or out fewer than 8*n.
func LanesDotSeq(out, q, keys []float32, stride, n, d int) {
	current.Load().LanesDotSeq(out, q, keys, stride, n, d)
}

// LanesDotSeq is the package function LanesDotSeq on tier tr.
func (tr *Tier) LanesDotSeq(out, q, keys []float32, stride, n, d int) {
	if n <= 0 {
		return
	}
	if d < 0 || stride < d || len(q) < 8*d || len(out) < 8*n || len(keys) < (n-1)*stride+d {
		panic("kernels: LanesDotSeq: lengths do not match")
	}
	if d == 0 {
		clear(out[:8*n])
		return
	}
	if tr != genericTier && lanesDotSeqAsm(out, q, keys, stride, n, d) {
		return
	}
	lanesDotSeqGeneric(out, q, keys, stride, n, d)
}

func lanesDotSeqGeneric(out, q, keys []float32, stride, n, d int) {
	q = q[:8*d]
	for t := range n {
		k := keys[t*stride:][:d]
		var acc [8]float32
		for i, x := range k {
			qi := q[8*i:][:8]
			for h := range acc {
				acc[h] += float32(qi[h] * x)
			}
		}
		copy(out[8*t:], acc[:])
	}
}

// AddScaledHeads adds m = len(v)/d values of d elements (value t at
// v[t*d:][:d]), weighted, to heads rows of out (row h at
// out[h*stride:][:d]), value after value: for t = 0, 1, ..., m-1,
// out[h*stride+i] += float32(scale[t*heads+h]·v[t*d+i]) +
// offset[t*heads+h], the product rounded to float32, then the offset
// added, then the sum added to out; without offsets (offset nil)
// out[h*stride+i] += float32(scale[t*heads+h]·v[t*d+i]).
//
// It panics if len(v) is not a multiple of d, if scale (or offset, when
// not nil) has fewer than m*heads elements, or if out is too short for
// the rows.
func AddScaledHeads(out []float32, stride int, v []float32, d int, scale, offset []float32, heads int) {
	current.Load().AddScaledHeads(out, stride, v, d, scale, offset, heads)
}

// AddScaledHeads is the package function AddScaledHeads on tier tr.
func (tr *Tier) AddScaledHeads(out []float32, stride int, v []float32, d int, scale, offset []float32, heads int) {
	if heads <= 0 || d <= 0 || len(v) == 0 {
		return
	}
	m := len(v) / d
	if len(v)%d != 0 || len(scale) < m*heads || (offset != nil && len(offset) < m*heads) ||
		stride < d || len(out) < (heads-1)*stride+d {
		panic("kernels: AddScaledHeads: lengths do not match")
	}
	done := 0
	if tr != genericTier {
		done = addScaledHeadsAsm(out, stride, v, d, m, scale, offset, heads)
	}
	for h := range heads {
		o := out[h*stride:][done:d]
		for t := range m {
			w, s := v[t*d:][done:d], scale[t*heads+h]
			if offset == nil {
				for i, c := range w {
					o[i] += float32(s * c)
				}
				continue
			}
			f := offset[t*heads+h]
			for i, c := range w {
				o[i] += float32(s*c) + f
			}
		}
	}
}

// DecodeQ4 writes the 4-bit codes of codes to dst as float32: code i is
// the low nibble of codes[i/2] for even i, the high one for odd i (the
// coded KV cache's Q4 layout). With scale and offset (both not nil) it
// writes offset[i] + float32(scale[i]·code(i)) instead, the product
// rounded to float32 before the add: a Q4 key's per-channel decoding.
//
// It panics if codes has fewer than (len(dst)+1)/2 bytes, or scale or
// offset (when not nil) fewer than len(dst) elements.
func DecodeQ4(dst []float32, codes []byte, scale, offset []float32) {
	current.Load().DecodeQ4(dst, codes, scale, offset)
}

// DecodeQ4 is the package function DecodeQ4 on tier tr.
func (tr *Tier) DecodeQ4(dst []float32, codes []byte, scale, offset []float32) {
	n := len(dst)
	affine := scale != nil || offset != nil
	if len(codes) < (n+1)/2 || (affine && (len(scale) < n || len(offset) < n)) {
		panic("kernels: DecodeQ4: lengths do not match")
	}
	done := 0
	if tr != genericTier {
		done = decodeQ4Asm(dst, codes, scale, offset, affine)
	}
	for i := done; i < n; i++ {
		c := float32(codes[i/2] >> (4 * (i % 2)) & 15)
		if affine {
			c = offset[i] + float32(scale[i]*c)
		}
		dst[i] = c
	}
}
