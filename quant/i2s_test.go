package quant_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

var i2sLayouts = []quant.I2SLayout{quant.I2STensorScale, quant.I2SBlockScale, quant.I2SSiblingScale}

// TestI2SRoundTrip encodes random ternary rows in each layout, detects
// the layout from the size (with and without padding) and checks that the
// converted tensor dequantizes to value·scale.
func TestI2SRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const rows, cols = 8, 512 // large enough that the layouts' size ranges are disjoint
	n := rows * cols
	vals := make([]int8, n)
	for i := range vals {
		vals[i] = int8(r.IntN(3) - 1)
	}
	for _, l := range i2sLayouts {
		for _, varied := range []bool{false, true} {
			scales := make([]float32, n/32)
			for b := range scales {
				scales[b] = 0.25
				if varied {
					scales[b] = float32(1+b%5) / 8
				}
			}
			enc, err := quant.EncodeI2S(l, vals, 0.25, scales)
			if err != nil {
				t.Fatal(err)
			}
			pads := []int{0, 31, quant.I2SPadding - 1}
			if l == quant.I2SSiblingScale {
				pads = pads[:2] // 32 bytes more read as I2STensorScale
			}
			for _, pad := range pads {
				got, err := quant.DetectI2S("w", n, len(enc)+pad)
				if err != nil || got != l {
					t.Errorf("%v pad %d: detected %v, %v", l, pad, got, err)
				}
			}
			typ, data, scale, err := quant.ConvertI2S(l, enc, rows, cols, scales)
			if err != nil {
				t.Fatal(err)
			}
			deq := make([]float32, n)
			if err := quant.DequantizeRow(typ, deq, data); err != nil {
				t.Fatal(err)
			}
			for e, v := range vals {
				want := float32(v) * 0.25
				if l != quant.I2STensorScale {
					want = float32(v) * scales[e/32]
				}
				if got := deq[e] * scale; got != want {
					t.Fatalf("%v varied=%v (%v): element %d = %v, want %v", l, varied, typ, e, got, want)
				}
			}
		}
	}
	if _, err := quant.DetectI2S("w", n, n/4+quant.I2SPadding+40); !errors.Is(err, quant.ErrI2SLayout) {
		t.Errorf("odd size: %v, want ErrI2SLayout", err)
	}
}

// FuzzConvertI2S feeds arbitrary bytes and shapes to the I2_S parser: it
// must detect a layout or refuse, and convert or refuse, without
// panicking, and allocate no more than the shape justifies.
func FuzzConvertI2S(f *testing.F) {
	f.Add([]byte{0x55, 0xaa, 0x00, 0xff}, uint16(1), uint16(256), uint16(0))
	f.Add(make([]byte, 80), uint16(2), uint16(32), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, rows, cols, extra uint16) {
		r, c := int(rows%8)+1, int(cols%1024)+1
		n := r * c
		buf := make([]byte, len(data)+int(extra%256))
		copy(buf, data)
		l, err := quant.DetectI2S("fuzz", n, len(buf))
		if err != nil {
			return
		}
		scales := make([]float32, n/32)
		for i := range scales {
			scales[i] = 1
		}
		typ, out, _, err := quant.ConvertI2S(l, buf, r, c, scales)
		if err != nil {
			return
		}
		if want, _ := quant.RowBytes(typ, n); len(out) != want {
			t.Fatalf("%v: %d bytes out, want %d", typ, len(out), want)
		}
	})
}
