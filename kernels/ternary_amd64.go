//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"

	"github.com/klauspost/cpuid/v2"

	"github.com/qsf-llm/qsf/quant"
)

// The ternary kernels (ternary_amd64.s) compute one row at a time; rows
// are contiguous, so the assembly walks the blocks of all rows in one
// pass.

//go:noescape
func dotTQ1_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)

//go:noescape
func dotTQ2_0AVX2(out *float32, rows int, w *byte, nb int, act *byte)

// tq1_0AVX2 is the avx2 tier's TQ1_0 kernel.
func tq1_0AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 256
	_ = w[len(out)*nb*54-1]
	_ = act[nb*292-1]
	dotTQ1_0AVX2(&out[0], len(out), &w[0], nb, &act[0])
}

//go:noescape
func dotTQ2_0x4AVX2(out *float32, quads int, w *byte, nb, rowBytes int, act *byte, dist int)

// tq2_0AVX2 is the avx2 tier's TQ2_0 kernel: whole groups of four rows
// through dotTQ2_0x4AVX2, the rest through the one-row kernel; both
// compute a row alike, bit for bit.
func tq2_0AVX2(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 256
	_ = w[len(out)*nb*66-1]
	_ = act[nb*292-1]
	quads := len(out) / 4
	if quads > 0 {
		dotTQ2_0x4AVX2(&out[0], quads, &w[0], nb, nb*66, &act[0], tqPrefetch)
	}
	if r := 4 * quads; r < len(out) {
		dotTQ2_0AVX2(&out[r], len(out)-r, &w[r*nb*66], nb, &act[0])
	}
}

// tqPrefetch is how far ahead the AVX-512 kernels prefetch their weights.
var tqPrefetch = 4096

// tqAuxBlock is the size of one Q8_K block prepared by prepTQ.
const tqAuxBlock = 320

// prepTQ prepares a Q8_K activation for the AVX-512 ternary kernels
// (layout in ternary_amd64.s): per block, the quants with the 32-byte
// runs at 32..63 and 128..159 swapped (so the 64 bytes at 64k are
// elements 32k..32k+31 and 128+32k..128+32k+31), then the eight negated
// bsum pairs as int32, then q8.d.
func prepTQ(buf, act []byte, cols int) []byte {
	nb := cols / 256
	need := nb * tqAuxBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for b := 0; b < nb; b++ {
		prepTQBlock(buf[b*tqAuxBlock:(b+1)*tqAuxBlock], act[b*q8KBlock:(b+1)*q8KBlock])
	}
	return buf
}

// prepTQBlock prepares one Q8_K block a into o (tqAuxBlock bytes).
func prepTQBlock(o, a []byte) {
	for k := 0; k < 4; k++ {
		copy(o[64*k:64*k+32], a[4+32*k:4+32*k+32])
		copy(o[64*k+32:64*k+64], a[4+128+32*k:4+128+32*k+32])
	}
	for l := 0; l < 8; l++ {
		s := int32(int16(binary.LittleEndian.Uint16(a[260+4*l:]))) +
			int32(int16(binary.LittleEndian.Uint16(a[262+4*l:])))
		binary.LittleEndian.PutUint32(o[256+4*l:], uint32(-s))
	}
	copy(o[288:292], a[0:4])
}

//go:noescape
func dotTQ2_0x4AVX512(out *float32, quads int, w *byte, nb, rowBytes int, aux *byte, dist int)

//go:noescape
func dotTQ2_0AVX512(out *float32, rows int, w *byte, nb int, aux *byte)

// tq2_0AVX512 is the avx512 tier's TQ2_0 kernel: whole groups of four
// rows through dotTQ2_0x4AVX512, the rest through the one-row kernel;
// both compute a row alike, bit for bit, and as the avx2 kernel does.
func tq2_0AVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 256
	_ = w[len(out)*nb*66-1]
	_ = aux[nb*tqAuxBlock-1]
	quads := len(out) / 4
	if quads > 0 {
		dotTQ2_0x4AVX512(&out[0], quads, &w[0], nb, nb*66, &aux[0], tqPrefetch)
	}
	if r := 4 * quads; r < len(out) {
		dotTQ2_0AVX512(&out[r], len(out)-r, &w[r*nb*66], nb, &aux[0])
	}
}

// haveGFNI records whether the CPU has GFNI, which the AVX-512 TQ2_0
// kernels use to unpack their codes (every AVX-512 CPU with VNNI since Ice
// Lake and Zen 4 has it; without it the avx512 tier runs the avx2 ones).
var haveGFNI = cpuid.CPU.Supports(cpuid.GFNI)

// initTernaryAVX512 puts the AVX-512 ternary kernels in the avx512 table
// (without GFNI its TQ2_0 row stays the avx2 one).
func initTernaryAVX512() {
	if haveGFNI {
		avx512Tier.register([]kernelRow{{key: quant.TQ2_0, rows: tq2_0AVX512, prep: prepTQ, tile: &tileTQ2_0AVX512}})
	}
	avx512Tier.register([]kernelRow{{key: quant.TQ1_0, rows: tq1_0AVX512, prep: prepTQ1, tile: &tileTQ1_0AVX512}})
}

// tq1AuxBlock is the size of one Q8_K block prepared by prepTQ1.
const tq1AuxBlock = 640

// prepTQ1 prepares a Q8_K activation for the AVX-512 TQ1_0 kernel
// (layout in ternary_amd64.s): per block, each run of 32 quants twice,
// the eight negated bsum pairs as int32 twice, q8.d.
func prepTQ1(buf, act []byte, cols int) []byte {
	nb := cols / 256
	need := nb * tq1AuxBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for b := 0; b < nb; b++ {
		prepTQ1Block(buf[b*tq1AuxBlock:(b+1)*tq1AuxBlock], act[b*q8KBlock:(b+1)*q8KBlock])
	}
	return buf
}

// prepTQ1Block prepares one Q8_K block a into o (tq1AuxBlock bytes).
func prepTQ1Block(o, a []byte) {
	for c := 0; c < 8; c++ {
		copy(o[64*c:64*c+32], a[4+32*c:4+32*c+32])
		copy(o[64*c+32:64*c+64], a[4+32*c:4+32*c+32])
	}
	for l := 0; l < 8; l++ {
		s := int32(int16(binary.LittleEndian.Uint16(a[260+4*l:]))) +
			int32(int16(binary.LittleEndian.Uint16(a[262+4*l:])))
		binary.LittleEndian.PutUint32(o[512+4*l:], uint32(-s))
		binary.LittleEndian.PutUint32(o[544+4*l:], uint32(-s))
	}
	copy(o[576:580], a[0:4])
}

//go:noescape
func dotTQ1_0x2AVX512(out *float32, pairs int, w *byte, nb, rowBytes int, aux *byte, dist int)

// tq1_0AVX512 is the avx512 tier's TQ1_0 kernel: rows in pairs, a last
// odd row paired with itself.
func tq1_0AVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	if len(out) == 0 {
		return
	}
	nb := cols / 256
	_ = w[len(out)*nb*54-1]
	_ = aux[nb*tq1AuxBlock-1]
	pairs := len(out) / 2
	if pairs > 0 {
		dotTQ1_0x2AVX512(&out[0], pairs, &w[0], nb, nb*54, &aux[0], tqPrefetch)
	}
	if r := 2 * pairs; r < len(out) {
		var two [2]float32
		dotTQ1_0x2AVX512(&two[0], 1, &w[r*nb*54], nb, 0, &aux[0], tqPrefetch)
		out[r] = two[0]
	}
}

//go:noescape
func dotTQ2_0TileAVX512(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

// tileTQ2_0AVX512 is the avx512 tier's TQ2_0 prefill tile.
var tileTQ2_0AVX512 = tileKernel{
	run:       tq2_0TileAVX512,
	rowStep:   1,
	packBytes: packBytesTQ,
	pack:      packTQ,
}

func packBytesTQ(cols int) int { return cols / 256 * tileTokens * tqAuxBlock }

// packTQ prepares tileTokens Q8_K activations as prepTQ does, block b of
// activation t at (b·tileTokens+t)·tqAuxBlock.
func packTQ(dst, acts []byte, actBytes, cols int) {
	nb := cols / 256
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			prepTQBlock(dst[(b*tileTokens+t)*tqAuxBlock:][:tqAuxBlock], act[b*q8KBlock:(b+1)*q8KBlock])
		}
	}
}

func tq2_0TileAVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	if rows == 0 {
		return
	}
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesTQ(cols)-1]
	dotTQ2_0TileAVX512(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

//go:noescape
func dotTQ2_0TileAVX2(out *float32, ostride, rows int, w *byte, nb int, packed *byte)

// tileTQ2_0AVX2 is the avx2 tier's TQ2_0 prefill tile.
var tileTQ2_0AVX2 = tileKernel{
	run:       tq2_0TileAVX2,
	rowStep:   1,
	packBytes: packBytesQ8_KT4,
	pack:      packQ8_KT4,
}

func tq2_0TileAVX2(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	if rows == 0 {
		return
	}
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[packBytesQ8_KT4(cols)-1]
	dotTQ2_0TileAVX2(&out[0], ostride, rows, &w[0], cols/256, &packed[0])
}

//go:noescape
func dotTQ1_0TileAVX512(out *float32, ostride, pairs int, w *byte, nb, rowBytes int, packed *byte)

// tileTQ1_0AVX512 is the avx512 tier's TQ1_0 prefill tile.
var tileTQ1_0AVX512 = tileKernel{
	run:       tq1_0TileAVX512,
	rowStep:   1,
	packBytes: func(cols int) int { return cols / 256 * tileTokens * tq1AuxBlock },
	pack:      packTQ1,
}

// packTQ1 prepares tileTokens Q8_K activations as prepTQ1 does, block b
// of activation t at (b·tileTokens+t)·tq1AuxBlock.
func packTQ1(dst, acts []byte, actBytes, cols int) {
	nb := cols / 256
	for t := 0; t < tileTokens; t++ {
		act := acts[t*actBytes : (t+1)*actBytes]
		for b := 0; b < nb; b++ {
			prepTQ1Block(dst[(b*tileTokens+t)*tq1AuxBlock:][:tq1AuxBlock], act[b*q8KBlock:(b+1)*q8KBlock])
		}
	}
}

// tq1_0TileAVX512 runs the rows in pairs; a last odd row goes paired with
// itself into a scratch tile.
func tq1_0TileAVX512(out []float32, ostride int, w []byte, rowBytes, cols, rows int, packed []byte) {
	if rows == 0 {
		return
	}
	nb := cols / 256
	_ = out[3*ostride+rows-1]
	_ = w[rows*rowBytes-1]
	_ = packed[nb*tileTokens*tq1AuxBlock-1]
	pairs := rows / 2
	if pairs > 0 {
		dotTQ1_0TileAVX512(&out[0], ostride, pairs, &w[0], nb, rowBytes, &packed[0])
	}
	if r := 2 * pairs; r < rows {
		var tile [2 * tileTokens]float32
		dotTQ1_0TileAVX512(&tile[0], 2, 1, &w[r*rowBytes], nb, 0, &packed[0])
		for t := 0; t < tileTokens; t++ {
			out[t*ostride+r] = tile[2*t]
		}
	}
}
