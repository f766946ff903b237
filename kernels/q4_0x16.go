package kernels

import "sync"

// q4_0x16SWAR is the generic tier's Q4_0x16 kernel, and that of every tier
// without one of its own (RepackType never hands them a Q4_0x16 matrix):
// each group of 16 rows, converted back to its two Q4_0x8 groups in a
// scratch buffer, goes through the generic Q4_0x8 kernel's q4_0x8Group,
// so the results are Q4_0x8's bit for bit. aux is prepQ4_0x8SWAR's.
func q4_0x16SWAR(out []float32, w []byte, rowBytes, cols int, _, aux []byte) {
	nb := cols / 32
	u := words(aux)[:nb*q4_0x8PrepBlock]
	fp16 := fp16Floats()
	bp := q4_0x16Scratch.Get().(*[]byte)
	if need := 2 * nb * q4_0x8Block; cap(*bp) < need {
		*bp = make([]byte, need)
	}
	a, b := (*bp)[:nb*q4_0x8Block], (*bp)[nb*q4_0x8Block:2*nb*q4_0x8Block]
	var sums [q4_0x8Span][16]uint64
	for g := 0; g < len(out)/16; g++ {
		grp := w[g*16*rowBytes:][:nb*q4_0x16Block]
		for k := 0; k < nb; k++ {
			unpackQ4_0x16Block((*[q4_0x16Block]byte)(grp[k*q4_0x16Block:]),
				(*[q4_0x8Block]byte)(a[k*q4_0x8Block:]), (*[q4_0x8Block]byte)(b[k*q4_0x8Block:]), false)
		}
		q4_0x8Group((*[8]float32)(out[16*g:]), a, u, fp16, &sums)
		q4_0x8Group((*[8]float32)(out[16*g+8:]), b, u, fp16, &sums)
	}
	q4_0x16Scratch.Put(bp)
}

// q4_0x16Scratch recycles q4_0x16SWAR's buffers of two Q4_0x8 groups.
var q4_0x16Scratch = sync.Pool{New: func() any { return new([]byte) }}
