package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/x448/float16"

	"github.com/qsf-llm/qsf/quant"
)

// This file holds the tests' own scalar reference kernels and random data,
// so that the assembly kernels are checked independently of package quant.

func f16At(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, float16.Fromfloat32(f).Bits()) }

// refDot is a scalar dot product of n elements of one weight row with act,
// in float64, together with the sum of the magnitudes of its terms (the
// scale of its rounding error).
type refDot func(n int, w, act []byte) (dot, mag float64)

var refDots = map[quant.Type]refDot{
	quant.Q8_0: refQ8_0,
	quant.Q4_0: refQ4_0,
}

func refQ8_0(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/32; b++ {
		wb, ab := w[b*34:], act[b*34:]
		var isum int64
		for j := 0; j < 32; j++ {
			isum += int64(int8(wb[2+j])) * int64(int8(ab[2+j]))
		}
		t := float64(f16At(wb)) * float64(f16At(ab)) * float64(isum)
		dot += t
		mag += math.Abs(t)
	}
	return dot, mag
}

func refQ4_0(n int, w, act []byte) (dot, mag float64) {
	for b := 0; b < n/32; b++ {
		wb, ab := w[b*18:], act[b*34:]
		var isum int64
		for j := 0; j < 16; j++ {
			lo := int64(wb[2+j]&15) - 8
			hi := int64(wb[2+j]>>4) - 8
			isum += lo*int64(int8(ab[2+j])) + hi*int64(int8(ab[2+16+j]))
		}
		t := float64(f16At(wb)) * float64(f16At(ab)) * float64(isum)
		dot += t
		mag += math.Abs(t)
	}
	return dot, mag
}

// scale returns a random fp16-representable block scale in a sane range.
func scale(r *rand.Rand) float32 {
	s := float32(math.Exp2(-12 + 10*r.Float64()))
	if r.IntN(2) == 0 {
		s = -s
	}
	return s
}

// randomRows returns rows×cols random, valid elements of type t.
func randomRows(r *rand.Rand, t quant.Type, rows, cols int) []byte {
	n, err := quant.RowBytes(t, cols)
	if err != nil {
		panic(err)
	}
	b := make([]byte, rows*n)
	switch t {
	case quant.Q8_0:
		for o := 0; o < len(b); o += 34 {
			putF16(b[o:], scale(r))
			for j := 0; j < 32; j++ {
				b[o+2+j] = byte(int8(r.IntN(255) - 127))
			}
		}
	case quant.Q4_0:
		for o := 0; o < len(b); o += 18 {
			putF16(b[o:], scale(r))
			for j := 0; j < 16; j++ {
				b[o+2+j] = byte(r.IntN(256))
			}
		}
	default:
		panic("randomRows: no generator for " + t.String())
	}
	return b
}

// vecDotType is the activation type of each type the tests generate.
var vecDotType = map[quant.Type]quant.Type{
	quant.Q8_0: quant.Q8_0,
	quant.Q4_0: quant.Q8_0,
}
