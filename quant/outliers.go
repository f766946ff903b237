package quant

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// An outlier side table keeps, for every row of a matrix, K of its
// entries exactly enough (in fp16) that the row's quantized type need not
// stretch its scales to reach them. It is stored beside the matrix as an
// I16 tensor named OutlierSuffix appended to the matrix's name, of K pairs
// per row: element 2j is the column of pair j (as an unsigned 16-bit
// integer), element 2j+1 its value's fp16 bits. The pairs of a row are in
// increasing column order, and the matrix's row holds, at those columns,
// what is left of the weight (w − fp16(w)) instead of the weight.

// OutlierSuffix is appended to a matrix's name to name its outlier table.
const OutlierSuffix = ".outliers"

// OutlierPairBytes is the size of one (column, value) pair.
const OutlierPairBytes = 4

// MaxOutlierCols is the longest row an outlier table can index.
const MaxOutlierCols = 1 << 16

// ErrOutliers is returned for an outlier table that does not fit its
// matrix.
var ErrOutliers = errors.New("quant: bad outlier table")

// CheckOutliers checks that table is an outlier table of k pairs per row
// for a matrix of rows×cols: its size, and every column below cols.
func CheckOutliers(table []byte, k, rows, cols int) error {
	if k < 1 || cols > MaxOutlierCols || len(table) != rows*k*OutlierPairBytes {
		return fmt.Errorf("%w: %d bytes, %d pairs per row, for a %d×%d matrix", ErrOutliers, len(table), k, rows, cols)
	}
	for i := 0; i < len(table); i += OutlierPairBytes {
		if c := int(le16(table[i:])); c >= cols {
			return fmt.Errorf("%w: column %d of a %d-column matrix", ErrOutliers, c, cols)
		}
	}
	return nil
}

// SplitOutliers moves the k entries of row that matter most into dst
// (k pairs, OutlierPairBytes each): those of largest importance[c]·w², or
// of largest |w| when importance is nil. row keeps w − fp16(w) at their
// columns. len(row) must be at most MaxOutlierCols and at least k.
func SplitOutliers(dst []byte, row, importance []float32, k int) error {
	if k < 1 || k > len(row) || len(row) > MaxOutlierCols || len(dst) != k*OutlierPairBytes {
		return fmt.Errorf("%w: %d pairs of a %d-element row into %d bytes", ErrOutliers, k, len(row), len(dst))
	}
	if importance != nil && len(importance) != len(row) {
		return fmt.Errorf("%w: %d importances for a %d-element row", ErrOutliers, len(importance), len(row))
	}
	score := func(c int) float64 {
		w := float64(row[c])
		if importance != nil {
			return float64(importance[c]) * w * w
		}
		return math.Abs(w)
	}
	// The k best columns, ties to the lower column.
	best := make([]int, 0, k+1)
	for c := range row {
		i := sort.Search(len(best), func(i int) bool {
			return score(best[i]) < score(c)
		})
		if i >= k {
			continue
		}
		best = append(best, 0)
		copy(best[i+1:], best[i:])
		best[i] = c
		if len(best) > k {
			best = best[:k]
		}
	}
	sort.Ints(best)
	for j, c := range best {
		h := FP32ToFP16(row[c])
		put16(dst[j*OutlierPairBytes:], uint16(c))
		put16(dst[j*OutlierPairBytes+2:], h)
		row[c] -= FP16ToFP32(h)
	}
	return nil
}

// AddOutliers adds a matrix's outlier table to its product with x: for
// every row r of out, in pair order, out[r] += float32(v·x[c]) for the
// row's pairs (c, v), each product and sum rounded to float32. The same
// bits on every machine and kernel tier. table must have passed
// CheckOutliers for a matrix of len(out) rows and len(x) columns.
func AddOutliers(out, x []float32, table []byte, k int) {
	rb := k * OutlierPairBytes
	for r := range out {
		t := table[r*rb : (r+1)*rb : (r+1)*rb]
		acc := out[r]
		for j := 0; j < len(t); j += OutlierPairBytes {
			acc += float32(f16(t[j+2:]) * x[le16(t[j:])])
		}
		out[r] = acc
	}
}

// ApplyOutliers adds a matrix's outlier table to its dequantized rows w
// (rows×cols, row-major): each pair's value is added at its column.
func ApplyOutliers(w []float32, table []byte, k, cols int) {
	rb := k * OutlierPairBytes
	for r := 0; r*cols < len(w); r++ {
		t := table[r*rb : (r+1)*rb]
		for j := 0; j < len(t); j += OutlierPairBytes {
			w[r*cols+int(le16(t[j:]))] += f16(t[j+2:])
		}
	}
}
