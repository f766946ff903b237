package qsf

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// writeLogProbs returns a log-probability file for a tiny vocabulary.
func writeLogProbs(t testing.TB, positions [][]float64, vocab, chunkLen, chunks int, tokens []int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := newLogProbsWriter(&buf, vocab, chunkLen, chunks, tokens)
	if err != nil {
		t.Fatal(err)
	}
	for _, lp := range positions {
		if err := w.position(lp); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readLogProbs reads every position of a file, then its checksum.
func readLogProbs(b []byte, positions, vocab, chunkLen, chunks int, tokens []int) ([][]float64, error) {
	r, err := newLogProbsReader(bytes.NewReader(b), vocab, chunkLen, chunks, tokens)
	if err != nil {
		return nil, err
	}
	var out [][]float64
	for range positions {
		lp, err := r.position()
		if err != nil {
			return nil, err
		}
		out = append(out, append([]float64(nil), lp...))
	}
	return out, r.close()
}

func TestLogProbsRoundTrip(t *testing.T) {
	logits := [][]float32{{1, 2, 3, -40}, {0, 0, 0, 0}, {5, -1, 2, 2}}
	var pos [][]float64
	for _, l := range logits {
		lp := make([]float64, len(l))
		logSoftmaxAll(lp, l)
		pos = append(pos, lp)
	}
	tokens := []int{1, 2, 3, 0, 1, 2}
	b := writeLogProbs(t, pos, 4, 4, 1, tokens)
	got, err := readLogProbs(b, len(pos), 4, 4, 1, tokens)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pos {
		for j := range pos[i] {
			want := max(pos[i][j], slicesMax(pos[i])-logProbsRange)
			if d := math.Abs(got[i][j] - want); d > 1e-3 {
				t.Errorf("position %d value %d: read %g, wrote %g", i, j, got[i][j], pos[i][j])
			}
		}
	}
	var acc klAccumulator
	for i := range pos {
		acc.add(got[i], pos[i], 1)
	}
	if r := acc.result(); r.Mean > 1e-7 || r.Top1 != 1 {
		t.Errorf("a model against its own saved log-probabilities: KLD %g, top-1 %g", r.Mean, r.Top1)
	}

	// Every damaged or mismatched file is refused with ErrLogProbs.
	for name, c := range map[string]struct {
		b              []byte
		chunkLen, vocb int
		tokens         []int
	}{
		"truncated":     {b[:len(b)-3], 4, 4, tokens},
		"bit flip":      {flip(b, len(b)/2), 4, 4, tokens},
		"trailing byte": {append(append([]byte(nil), b...), 0), 4, 4, tokens},
		"other text":    {b, 4, 4, []int{1, 2, 3, 0, 1, 3}},
		"other chunks":  {b, 5, 4, tokens},
		"other vocab":   {b, 4, 5, tokens},
		"empty":         {nil, 4, 4, tokens},
	} {
		if _, err := readLogProbs(c.b, len(pos), c.vocb, c.chunkLen, 1, c.tokens); !errors.Is(err, ErrLogProbs) {
			t.Errorf("%s: %v, want ErrLogProbs", name, err)
		}
	}
}

func slicesMax(x []float64) float64 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x10
	return c
}

// FuzzLogProbs feeds arbitrary bytes to the log-probability file reader: it
// must return ErrLogProbs or values, never panic, and allocate no more
// than the header's vocabulary (fixed by the caller) justifies.
func FuzzLogProbs(f *testing.F) {
	tokens := []int{1, 2, 3, 0, 1, 2}
	f.Add(writeLogProbs(f, [][]float64{{-1, -2, -0.5, -3}, {-0.1, -4, -9, -2.5}}, 4, 4, 1, tokens))
	f.Add([]byte(logProbsMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		lps, err := readLogProbs(b, 2, 4, 4, 1, tokens)
		if err != nil {
			if !errors.Is(err, ErrLogProbs) {
				t.Fatalf("error %v does not wrap ErrLogProbs", err)
			}
			return
		}
		for _, lp := range lps {
			var sum float64
			for _, v := range lp {
				if math.IsNaN(v) || v > 1e-9 {
					t.Fatalf("log-probability %g", v)
				}
				sum += math.Exp(v)
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("probabilities sum to %g", sum)
			}
		}
	})
}
