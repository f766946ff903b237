package quant_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/qsf-llm/qsf/quant"
)

func TestFP16Conversion(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3C00},
		{-2, 0xC000},
		{1 + 1.0/2048, 0x3C00},                    // tie → even (down)
		{1 + 3.0/2048, 0x3C02},                    // tie → even (up)
		{65504, 0x7BFF},                           // max half
		{65520, 0x7C00},                           // rounds to +Inf
		{float32(math.Ldexp(1, -25)), 0x0000},     // tie between 0 and the smallest subnormal
		{float32(3 * math.Ldexp(1, -25)), 0x0002}, // tie → even subnormal
		{float32(math.Ldexp(1, -24)), 0x0001},
		{float32(math.Inf(-1)), 0xFC00},
	}
	for _, tc := range tests {
		if got := quant.FP32ToFP16(tc.in); got != tc.want {
			t.Errorf("FP32ToFP16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	for h := 0; h < 1<<16; h++ {
		f := quant.FP16ToFP32(uint16(h))
		if f != f {
			continue
		}
		if back := quant.FP32ToFP16(f); back != uint16(h) {
			t.Fatalf("FP16 round trip %#04x → %g → %#04x", h, f, back)
		}
	}
}

func TestBF16Conversion(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3F80},
		{1 + 1.0/256, 0x3F80}, // tie → even (down)
		{1 + 3.0/256, 0x3F82}, // tie → even (up)
		{-1.5, 0xBFC0},
		{math.Float32frombits(0x7F800001), 0x7FC0}, // signalling NaN → quiet
	}
	for _, tc := range tests {
		if got := quant.FP32ToBF16(tc.in); got != tc.want {
			t.Errorf("FP32ToBF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	if got := quant.BF16ToFP32(0x3FC0); got != 1.5 {
		t.Errorf("BF16ToFP32(0x3FC0) = %g", got)
	}
}

// tieBlock returns a 32-element block whose max is 127, so the Q8 scale is
// exactly 1 and x·id equals x: the ±.5 values test the tie rule.
func tieBlock() (x []float32, wantEven, wantAway []int8) {
	x = make([]float32, 32)
	wantEven = make([]int8, 32)
	wantAway = make([]int8, 32)
	vals := []struct {
		x          float32
		even, away int8
	}{
		{127, 127, 127}, {0.5, 0, 1}, {1.5, 2, 2}, {2.5, 2, 3}, {-0.5, 0, -1},
		{-2.5, -2, -3}, {3.25, 3, 3}, {-3.75, -4, -4}, {126.5, 126, 127},
	}
	for i, v := range vals {
		x[i], wantEven[i], wantAway[i] = v.x, v.even, v.away
	}
	return x, wantEven, wantAway
}

func TestQ8_0Activation(t *testing.T) {
	x, even, away := tieBlock()
	b := make([]byte, 34)
	if err := quant.QuantizeRow(quant.Q8_0, b, x); err != nil {
		t.Fatal(err)
	}
	if d := binary.LittleEndian.Uint16(b); d != 0x3C00 {
		t.Errorf("d = %#04x, want 1.0", d)
	}
	for i := range x {
		if got := int8(b[2+i]); got != even[i] {
			t.Errorf("activation q[%d] (x=%g) = %d, want %d (ties to even)", i, x[i], got, even[i])
		}
	}
	// The weight quantizer (quantize_row_q8_0_ref) rounds ties away.
	if err := quant.QuantizeRowRef(quant.Q8_0, b, x); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if got := int8(b[2+i]); got != away[i] {
			t.Errorf("reference q[%d] (x=%g) = %d, want %d (ties away)", i, x[i], got, away[i])
		}
	}
	// All-zero block: d = 0 and zero quants.
	for i := range b {
		b[i] = 0xFF
	}
	if err := quant.QuantizeRow(quant.Q8_0, b, make([]float32, 32)); err != nil {
		t.Fatal(err)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("zero block: byte %d = %#x", i, v)
		}
	}
}

func TestQ8_1Activation(t *testing.T) {
	x, even, _ := tieBlock()
	x[31] = 0.1 // d = 1, so s = Σq exactly
	b := make([]byte, 36)
	if err := quant.QuantizeRow(quant.Q8_1, b, x); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for i := range x {
		q := int8(b[4+i])
		sum += int(q)
		if i < 31 && q != even[i] {
			t.Errorf("q[%d] = %d, want %d", i, q, even[i])
		}
	}
	if s := quant.FP16ToFP32(binary.LittleEndian.Uint16(b[2:])); s != float32(sum) || sum != 127+2+2-2+3-4+126 {
		t.Errorf("s = %g, Σq = %d", s, sum)
	}
	// d·Σq is rounded to fp16: with d = 3/127, Σq = 127·11 gives 33 exactly,
	// while a non-representable product must round to nearest even.
	y := make([]float32, 32)
	for i := range y {
		y[i] = 3
	}
	if err := quant.QuantizeRow(quant.Q8_1, b, y); err != nil {
		t.Fatal(err)
	}
	d := float32(3) / 127
	if s, want := binary.LittleEndian.Uint16(b[2:]), quant.FP32ToFP16(d*float32(127*32)); s != want {
		t.Errorf("s bits = %#04x, want %#04x", s, want)
	}
}

func TestQ8_KActivation(t *testing.T) {
	tests := []struct {
		name  string
		set   map[int]float32
		wantD float32
		wantQ map[int]int8
	}{
		{
			name:  "negative max",
			set:   map[int]float32{0: -127, 1: 0.5, 2: 1.5, 3: -2.5, 20: 100},
			wantD: 1,
			wantQ: map[int]int8{0: -127, 1: 0, 2: 2, 3: -2, 20: 100},
		},
		{
			name:  "positive max flips the sign of d",
			set:   map[int]float32{5: 127, 6: 0.5, 7: -126.5, 8: -127},
			wantD: -1,
			wantQ: map[int]int8{5: -127, 6: 0, 7: 126, 8: 127},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := make([]float32, 256)
			for i, v := range tc.set {
				x[i] = v
			}
			b := make([]byte, 292)
			if err := quant.QuantizeRow(quant.Q8_K, b, x); err != nil {
				t.Fatal(err)
			}
			if d := math.Float32frombits(binary.LittleEndian.Uint32(b)); d != tc.wantD {
				t.Errorf("d = %g, want %g", d, tc.wantD)
			}
			for i, want := range tc.wantQ {
				if got := int8(b[4+i]); got != want {
					t.Errorf("q[%d] = %d, want %d", i, got, want)
				}
			}
			for j := 0; j < 16; j++ {
				sum := 0
				for l := 0; l < 16; l++ {
					sum += int(int8(b[4+16*j+l]))
				}
				if got := int16(binary.LittleEndian.Uint16(b[260+2*j:])); int(got) != sum {
					t.Errorf("bsums[%d] = %d, want %d", j, got, sum)
				}
			}
		})
	}
	b := make([]byte, 292)
	for i := range b {
		b[i] = 0xAA
	}
	if err := quant.QuantizeRow(quant.Q8_K, b, make([]float32, 256)); err != nil {
		t.Fatal(err)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("zero block: byte %d = %#x", i, v)
		}
	}
}
