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

// prepQ8_1 builds the prepared data of a Q8_1 activation vector: per block
// its scale d as eight float32, then s/8 as eight float32 (s = d·Σa, so
// that the eight lanes of a min term sum to m·s).
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
		s := math.Float32bits(float16.Frombits(binary.LittleEndian.Uint16(a[2:])).Float32() / 8)
		for l := 0; l < 8; l++ {
			binary.LittleEndian.PutUint32(o[4*l:], d)
			binary.LittleEndian.PutUint32(o[32+4*l:], s)
		}
	}
	return buf
}
