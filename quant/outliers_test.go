package quant

import (
	"errors"
	"math"
	"testing"
)

// TestSplitOutliers: the k entries of largest |w| (or importance·w²) go to
// the table in column order, the row keeps w − fp16(w) there, and adding
// the table back (ApplyOutliers) or multiplying it (AddOutliers) restores
// the row's values and products.
func TestSplitOutliers(t *testing.T) {
	row := []float32{0.1, -3, 0.2, 2.5, -0.3, 0.05, 1.0001, -0.4}
	orig := append([]float32(nil), row...)
	table := make([]byte, 3*OutlierPairBytes)
	if err := SplitOutliers(table, row, nil, 3); err != nil {
		t.Fatal(err)
	}
	wantCols := []int{1, 3, 6}
	for j, c := range wantCols {
		if got := int(le16(table[j*OutlierPairBytes:])); got != c {
			t.Fatalf("pair %d: column %d, want %d", j, got, c)
		}
		v := f16(table[j*OutlierPairBytes+2:])
		if v != FP16ToFP32(FP32ToFP16(orig[c])) || row[c] != orig[c]-v {
			t.Fatalf("column %d: table %v, row %v, from %v", c, v, row[c], orig[c])
		}
	}
	if err := CheckOutliers(table, 3, 1, len(row)); err != nil {
		t.Fatal(err)
	}
	back := append([]float32(nil), row...)
	ApplyOutliers(back, table, 3, len(row))
	for c := range back {
		if math.Abs(float64(back[c]-orig[c])) > 1e-7 {
			t.Fatalf("column %d: %v restored, want %v", c, back[c], orig[c])
		}
	}
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	out := []float32{10}
	AddOutliers(out, x, table, 3)
	want := float32(10)
	for j, c := range wantCols {
		want += float32(f16(table[j*OutlierPairBytes+2:]) * x[c])
	}
	if out[0] != want {
		t.Fatalf("AddOutliers: %v, want %v", out[0], want)
	}
	// With importance the weighted error decides: column 7 (0.4² · 100)
	// beats column 1 (3² · 1).
	row = append([]float32(nil), orig...)
	imp := []float32{1, 1, 1, 1, 1, 1, 1, 100}
	if err := SplitOutliers(table[:OutlierPairBytes], row, imp, 1); err != nil {
		t.Fatal(err)
	}
	if c := le16(table); c != 7 {
		t.Fatalf("with importance: column %d, want 7", c)
	}
}

// TestCheckOutliers rejects a table of the wrong size or with a column
// beyond the row.
func TestCheckOutliers(t *testing.T) {
	table := make([]byte, 2*2*OutlierPairBytes)
	if err := CheckOutliers(table, 2, 2, 8); err != nil {
		t.Fatal(err)
	}
	put16(table[OutlierPairBytes:], 8)
	if err := CheckOutliers(table, 2, 2, 8); !errors.Is(err, ErrOutliers) {
		t.Fatalf("column 8 of 8: %v", err)
	}
	if err := CheckOutliers(table, 2, 3, 16); !errors.Is(err, ErrOutliers) {
		t.Fatalf("short table: %v", err)
	}
	if err := SplitOutliers(make([]byte, 4*OutlierPairBytes), make([]float32, 3), nil, 4); !errors.Is(err, ErrOutliers) {
		t.Fatalf("4 outliers of 3 entries: %v", err)
	}
}
