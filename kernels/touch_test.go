package kernels

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

func TestTouch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	buf := make([]byte, 4096+17)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, n := range []int{0, 1, 7, 8, 9, 127, 128, 129, 255, 256, 1000, 4096, len(buf)} {
		b := buf[:n]
		var want uint64
		i := 0
		for ; i+8 <= n; i += 8 {
			want += binary.LittleEndian.Uint64(b[i:])
		}
		for ; i < n; i++ {
			want += uint64(b[i])
		}
		if got := Touch(b); got != want {
			t.Errorf("Touch(%d bytes) = %#x, want %#x", n, got, want)
		}
		if n%128 == 0 && n > 0 {
			if got := touchGeneric(b); got != want {
				t.Errorf("touchGeneric(%d bytes) = %#x, want %#x", n, got, want)
			}
		}
	}
}
