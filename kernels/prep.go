package kernels

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// q8_0AuxBlock is the size of the prepared data of one Q8_0 activation
// block: its scale as eight float32 (a broadcast vector), then
// 8·(a[2i]+a[2i+1]) for i in 0..15 as int16, the bias of a Q4_0 weight
// block's unsigned nibbles in VPMADDUBSW's pair layout.
const q8_0AuxBlock = 64

// prepQ8_0 builds the prepared data of a Q8_0 activation vector.
func prepQ8_0(buf, act []byte, cols int) []byte {
	nb := cols / 32
	need := nb * q8_0AuxBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for b := 0; b < nb; b++ {
		a := act[b*34 : b*34+34]
		o := buf[b*q8_0AuxBlock : (b+1)*q8_0AuxBlock]
		d := math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a)).Float32())
		for l := 0; l < 8; l++ {
			binary.LittleEndian.PutUint32(o[4*l:], d)
		}
		for i := 0; i < 16; i++ {
			s := 8 * (int(int8(a[2+2*i])) + int(int8(a[3+2*i])))
			binary.LittleEndian.PutUint16(o[32+2*i:], uint16(int16(s)))
		}
	}
	return buf
}

// q4_0AuxBlock is the size of the prepared data of one Q8_0 activation
// block for the Q4_0 kernels: the q8_0AuxBlock form, then 8·Σa as eight
// int32 (the whole block's bias, which the gemv-order kernel subtracts once
// from the sums of eight rows).
const q4_0AuxBlock = 96

// prepQ4_0 builds the prepared data of a Q8_0 activation for the Q4_0
// kernels.
func prepQ4_0(buf, act []byte, cols int) []byte {
	nb := cols / 32
	need := nb * q4_0AuxBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for b := 0; b < nb; b++ {
		a := act[b*34 : b*34+34]
		o := buf[b*q4_0AuxBlock : (b+1)*q4_0AuxBlock]
		d := math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a)).Float32())
		for l := 0; l < 8; l++ {
			binary.LittleEndian.PutUint32(o[4*l:], d)
		}
		sum := 0
		for i := 0; i < 16; i++ {
			s := 8 * (int(int8(a[2+2*i])) + int(int8(a[3+2*i])))
			binary.LittleEndian.PutUint16(o[32+2*i:], uint16(int16(s)))
			sum += s
		}
		for l := 0; l < 8; l++ {
			binary.LittleEndian.PutUint32(o[64+4*l:], uint32(int32(sum)))
		}
	}
	return buf
}

// prepQ8_1 builds the prepared data of a Q8_1 activation vector: per block
// its scale d as eight float32, then s (= d·Σa) as float32.
func prepQ8_1(buf, act []byte, cols int) []byte {
	nb := cols / 32
	need := nb * q8_0AuxBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for b := 0; b < nb; b++ {
		a := act[b*36 : b*36+36]
		o := buf[b*q8_0AuxBlock : (b+1)*q8_0AuxBlock]
		d := math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a)).Float32())
		s := math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a[2:])).Float32())
		for l := 0; l < 8; l++ {
			binary.LittleEndian.PutUint32(o[4*l:], d)
		}
		binary.LittleEndian.PutUint32(o[32:], s)
		clear(o[36:])
	}
	return buf
}

// pairAuxBlock is the size of the prepared data of one Q8_K activation block
// for the Q3_K and Q6_K kernels: k·(a[2i]+a[2i+1]) for i in 0..127 as
// int16, the offset k of their unsigned quants (4 and 32) in VPMADDUBSW's
// pair layout, to come off each pair as ggml's AVX2 code does.
const pairAuxBlock = 256

// prepQ3_K and prepQ6_K build the prepared data of a Q8_K activation.
func prepQ3_K(buf, act []byte, cols int) []byte { return prepPairs(buf, act, cols, 4) }
func prepQ6_K(buf, act []byte, cols int) []byte { return prepPairs(buf, act, cols, 32) }

func prepPairs(buf, act []byte, cols, k int) []byte {
	nb := cols / 256
	need := nb * pairAuxBlock
	if cap(buf) < need {
		buf = make([]byte, need)
	}
	buf = buf[:need]
	for b := 0; b < nb; b++ {
		q := act[292*b+4 : 292*b+260]
		o := buf[b*pairAuxBlock : (b+1)*pairAuxBlock]
		for i := 0; i < 128; i++ {
			s := k * (int(int8(q[2*i])) + int(int8(q[2*i+1])))
			binary.LittleEndian.PutUint16(o[2*i:], uint16(int16(s)))
		}
	}
	return buf
}
