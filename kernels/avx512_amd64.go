//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"math"

	"github.com/klauspost/cpuid/v2"
	"github.com/x448/float16"

	"github.com/qsf-llm/qsf/quant"
)

// avx512Tier holds the AVX-512 VNNI kernels for Q8_0 and Q4_0 and the AVX2
// kernels for every other type. It is experimental: it was written on a
// machine without AVX-512 and has never run, so it is never chosen by
// default; force it with QSF_KERNEL=avx512 or SetTier("avx512") on a CPU
// that has it, where `go test ./kernels/` checks it like every other tier.
var avx512Tier = &tier{name: "avx512", experimental: true}

// haveAVX512 records, once, whether the CPU can run the avx512 tier.
var haveAVX512 = haveAVX2 && cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512VNNI)

func hasAVX512() bool { return haveAVX512 }

// initAVX512Tier fills in the AVX-512 kernel table, starting from the AVX2
// one, which must be complete.
func initAVX512Tier() {
	// Start from the AVX2 kernels, override what has an AVX-512 form.
	avx512Tier.kernels = avx2Tier.kernels
	avx512Tier.preps = avx2Tier.preps
	avx512Tier.q4_0Gemv = avx2Tier.q4_0Gemv
	avx512Tier.q4_0x8 = avx2Tier.q4_0x8
	avx512Tier.q4_0x8Prep = avx2Tier.q4_0x8Prep
	avx512Tier.q8_0x4 = avx2Tier.q8_0x4
	avx512Tier.q8_0x4Prep = avx2Tier.q8_0x4Prep
	avx512Tier.quantQ8_0 = avx2Tier.quantQ8_0
	avx512Tier.kernels[quant.Q8_0] = q8_0AVX512
	avx512Tier.preps[quant.Q8_0] = prepQ8_0AVX512
	avx512Tier.kernels[quant.Q4_0] = q4_0AVX512
	avx512Tier.preps[quant.Q4_0] = prepQ4_0AVX512
}

//go:noescape
func dotQ8_0AVX512(out *float32, rows int, w *byte, nb int, aux *byte)

//go:noescape
func dotQ4_0AVX512(out *float32, rows int, w *byte, nb int, aux *byte)

func q8_0AVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ8_0AVX512(&out[0], len(out), &w[0], cols/32, &aux[0])
}

func q4_0AVX512(out []float32, w []byte, rowBytes, cols int, act, aux []byte) {
	dotQ4_0AVX512(&out[0], len(out), &w[0], cols/32, &aux[0])
}

// q8_0Block returns Q8_0 activation block b, or nil past the end (the zero
// block that pads an odd count), and its scale as float32 bits.
func q8_0Block(act []byte, b int) ([]byte, uint32) {
	if 34*b+34 > len(act) {
		return nil, 0
	}
	a := act[34*b : 34*b+34]
	return a[2:], math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a)).Float32())
}

// growAux returns buf resized to n bytes and zeroed.
func growAux(buf []byte, n int) []byte {
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

// prepQ8_0AVX512 lays a Q8_0 activation out per pair of blocks (128 bytes):
// the 64 quants, then [da0×8, da1×8].
func prepQ8_0AVX512(buf, act []byte, cols int) []byte {
	pairs := (cols/32 + 1) / 2
	buf = growAux(buf, 128*pairs)
	for p := 0; p < pairs; p++ {
		o := buf[128*p : 128*p+128]
		for h := 0; h < 2; h++ {
			q, d := q8_0Block(act, 2*p+h)
			if q == nil {
				continue
			}
			copy(o[32*h:32*h+32], q)
			for l := 0; l < 8; l++ {
				binary.LittleEndian.PutUint32(o[64+32*h+4*l:], d)
			}
		}
	}
	return buf
}

// prepQ4_0AVX512 lays a Q8_0 activation out for the Q4_0 kernel, per pair
// of blocks (192 bytes): quants as [b0 0..15, b1 0..15, b0 16..31, b1
// 16..31], then −8·Σ of each 4-quant dword lane as int32, then the scales
// as [da0×4, da1×4, da0×4, da1×4].
func prepQ4_0AVX512(buf, act []byte, cols int) []byte {
	pairs := (cols/32 + 1) / 2
	buf = growAux(buf, 192*pairs)
	for p := 0; p < pairs; p++ {
		o := buf[192*p : 192*p+192]
		for h := 0; h < 2; h++ {
			q, d := q8_0Block(act, 2*p+h)
			if q == nil {
				continue
			}
			copy(o[16*h:16*h+16], q[:16])
			copy(o[32+16*h:32+16*h+16], q[16:])
			for l := 0; l < 4; l++ {
				binary.LittleEndian.PutUint32(o[128+16*h+4*l:], d)
				binary.LittleEndian.PutUint32(o[160+16*h+4*l:], d)
			}
		}
		for lane := 0; lane < 16; lane++ {
			s := 0
			for k := 0; k < 4; k++ {
				s += int(int8(o[4*lane+k]))
			}
			binary.LittleEndian.PutUint32(o[64+4*lane:], uint32(int32(-8*s)))
		}
	}
	return buf
}
