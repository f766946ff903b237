package stream

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func TestCRC32Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for _, cut := range []int{0, 1, 7, 64, 2500, 4999, 5000} {
		a, b := data[:cut], data[cut:]
		got := crc32Combine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), int64(len(b)))
		if want := crc32.Checksum(data, castagnoli); got != want {
			t.Errorf("cut at %d: combined %#08x, want %#08x", cut, got, want)
		}
	}
	// Several segments, some given as matrices.
	cuts := []int{0, 100, 164, 3000, 3001, 5000}
	var segs []crcSeg
	var mats []uint32
	for i := 0; i+1 < len(cuts); i++ {
		part := data[cuts[i]:cuts[i+1]]
		sg := crcSeg{size: int64(len(part)), mat: -1, crc: crc32.Checksum(part, castagnoli)}
		if i%2 == 0 {
			sg.mat, sg.crc = len(mats), 0
			mats = append(mats, crc32.Checksum(part, castagnoli))
		}
		segs = append(segs, sg)
	}
	if got, want := recordCRC(segs, mats), crc32.Checksum(data, castagnoli); got != want {
		t.Errorf("recordCRC = %#08x, want %#08x", got, want)
	}
}
