package qsf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"sort"
)

// ErrLogProbs is returned (wrapped) when a log-probability file given as
// PerplexityOptions.KLBase is damaged or belongs to another text, chunk
// length or vocabulary.
var ErrLogProbs = errors.New("qsf: bad log-probability file")

// logProbsMagic starts a file written through PerplexityOptions.SaveLogProbs.
const logProbsMagic = "QSFLOGP1"

// The log-probability file: the magic, then little-endian uint32s n_vocab,
// chunk length, chunks and n_tokens, the n_tokens token ids (int32) of the
// text, then for each scored position (the second half of each chunk, as
// Perplexity scores them) float32s lo and hi, the smallest and largest
// log-probability (hi ≤ 0; lo at least hi − 30, smaller values clamped to
// it: their probabilities are below 1e-13 of the largest), and n_vocab
// uint16 codes q standing for lo + (hi − lo)·q/65535; last the CRC-32C of
// everything before it. Two bytes per value keep a 32k vocabulary at
// 64 KiB per token, as llama-perplexity's --kl-divergence-base file does.
// The reader renormalizes each position's probabilities, so the rounding
// leaves no bias in the KL divergence.

// logProbsWriter writes a log-probability file.
type logProbsWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
	buf []byte
}

func newLogProbsWriter(w io.Writer, vocab, chunkLen, chunks int, tokens []int) (*logProbsWriter, error) {
	lw := &logProbsWriter{w: bufio.NewWriter(w), crc: crc32.New(castagnoli)}
	hdr := []byte(logProbsMagic)
	for _, v := range []int{vocab, chunkLen, chunks, len(tokens)} {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(v))
	}
	for _, t := range tokens {
		hdr = binary.LittleEndian.AppendUint32(hdr, uint32(int32(t)))
	}
	return lw, lw.write(hdr)
}

func (lw *logProbsWriter) write(b []byte) error {
	lw.crc.Write(b)
	_, err := lw.w.Write(b)
	return err
}

// position writes the log-probabilities of one scored position.
func (lw *logProbsWriter) position(lp []float64) error {
	hi := slices.Max(lp)
	lo := max(slices.Min(lp), hi-logProbsRange)
	b := binary.LittleEndian.AppendUint32(lw.buf[:0], math.Float32bits(float32(lo)))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(hi)))
	lo, hi = float64(float32(lo)), float64(float32(hi))
	for _, v := range lp {
		q := 0.0
		if hi > lo {
			q = math.Round(65535 * (v - lo) / (hi - lo))
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(min(max(q, 0), 65535)))
	}
	lw.buf = b
	return lw.write(b)
}

// logProbsRange is the span of log-probabilities below the largest that
// a log-probability file keeps.
const logProbsRange = 30

func (lw *logProbsWriter) close() error {
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], lw.crc.Sum32())
	if _, err := lw.w.Write(sum[:]); err != nil {
		return err
	}
	return lw.w.Flush()
}

// logProbsReader reads a log-probability file written for the same text,
// chunk length and vocabulary.
type logProbsReader struct {
	r   *bufio.Reader
	crc hash.Hash32
	buf []byte
	lp  []float64
}

func newLogProbsReader(r io.Reader, vocab, chunkLen, chunks int, tokens []int) (*logProbsReader, error) {
	lr := &logProbsReader{r: bufio.NewReader(r), crc: crc32.New(castagnoli)}
	hdr, err := lr.read(len(logProbsMagic) + 16)
	if err != nil {
		return nil, err
	}
	if string(hdr[:8]) != logProbsMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrLogProbs, hdr[:8], logProbsMagic)
	}
	u := func(i int) int { return int(binary.LittleEndian.Uint32(hdr[8+4*i:])) }
	if u(0) != vocab || u(1) != chunkLen || u(2) != chunks || u(3) != len(tokens) {
		return nil, fmt.Errorf("%w: it holds %d chunks of %d tokens of a %d-token text over %d token ids; this run has %d chunks of %d of a %d-token text over %d",
			ErrLogProbs, u(2), u(1), u(3), u(0), chunks, chunkLen, len(tokens), vocab)
	}
	ids, err := lr.read(4 * len(tokens))
	if err != nil {
		return nil, err
	}
	for i, t := range tokens {
		if got := int(int32(binary.LittleEndian.Uint32(ids[4*i:]))); got != t {
			return nil, fmt.Errorf("%w: token %d of the text is %d there, %d here (another text or tokenizer)", ErrLogProbs, i, got, t)
		}
	}
	lr.lp = make([]float64, vocab)
	return lr, nil
}

func (lr *logProbsReader) read(n int) ([]byte, error) {
	if cap(lr.buf) < n {
		lr.buf = make([]byte, n)
	}
	b := lr.buf[:n]
	if _, err := io.ReadFull(lr.r, b); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLogProbs, err)
	}
	lr.crc.Write(b)
	return b, nil
}

// position reads the log-probabilities of the next scored position,
// renormalized so that their probabilities sum to 1.
func (lr *logProbsReader) position() ([]float64, error) {
	b, err := lr.read(8 + 2*len(lr.lp))
	if err != nil {
		return nil, err
	}
	lo := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	hi := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4:])))
	if !(lo <= hi && hi <= 0) || math.IsInf(lo, 0) {
		return nil, fmt.Errorf("%w: log-probabilities between %g and %g", ErrLogProbs, lo, hi)
	}
	var sum float64
	for i := range lr.lp {
		v := lo + (hi-lo)*float64(binary.LittleEndian.Uint16(b[8+2*i:]))/65535
		lr.lp[i] = v
		sum += math.Exp(v)
	}
	ls := math.Log(sum)
	for i := range lr.lp {
		lr.lp[i] -= ls
	}
	return lr.lp, nil
}

// close checks the checksum and that nothing follows it.
func (lr *logProbsReader) close() error {
	want := lr.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(lr.r, sum[:]); err != nil {
		return fmt.Errorf("%w: checksum: %v", ErrLogProbs, err)
	}
	if got := binary.LittleEndian.Uint32(sum[:]); got != want {
		return fmt.Errorf("%w: checksum %08x, computed %08x", ErrLogProbs, got, want)
	}
	if _, err := lr.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: data after the checksum", ErrLogProbs)
	}
	return nil
}

// KLResult compares a model's predictions with those of a base model whose
// log-probabilities were saved on the same text, as llama-perplexity
// --kl-divergence does.
type KLResult struct {
	N         int     // positions compared
	Mean      float64 // mean KL divergence KL(base ‖ model), in nats
	StdErr    float64 // its standard error
	Median    float64 // median, 99th percentile and largest KL divergence of a position
	P99       float64
	Max       float64
	Top1      float64 // fraction of positions where both models' most likely token is the same
	Top1Err   float64 // its standard error
	BasePPL   float64 // perplexity of the base model on the scored tokens
	DeltaPPL  float64 // this model's perplexity minus BasePPL
	RMSDeltaP float64 // root mean square of the change in the probability of the actual next token
}

// klAccumulator gathers the per-position statistics of KLResult.
type klAccumulator struct {
	kls              []float64
	same             int
	baseNLL, dp2     float64
	modelNLL, kl, k2 float64
}

// add compares one position: base and model log-probabilities, and the
// actual next token.
func (a *klAccumulator) add(base, model []float64, next int) {
	var kl float64
	for i, b := range base {
		if p := math.Exp(b); p > 0 {
			kl += float64(p * (b - model[i]))
		}
	}
	kl = max(kl, 0) // rounding of the saved values can make it slightly negative
	a.kls = append(a.kls, kl)
	a.kl += kl
	a.k2 += float64(kl * kl)
	if argmax64(base) == argmax64(model) {
		a.same++
	}
	a.baseNLL -= base[next]
	a.modelNLL -= model[next]
	dp := math.Exp(model[next]) - math.Exp(base[next])
	a.dp2 += float64(dp * dp)
}

func (a *klAccumulator) result() *KLResult {
	n := len(a.kls)
	if n == 0 {
		return nil
	}
	fn := float64(n)
	r := &KLResult{N: n, Mean: a.kl / fn, Top1: float64(a.same) / fn}
	if n > 1 {
		r.StdErr = math.Sqrt(max(a.k2/fn-float64(r.Mean*r.Mean), 0) / (fn - 1))
		r.Top1Err = math.Sqrt(r.Top1 * (1 - r.Top1) / (fn - 1))
	}
	sorted := slices.Clone(a.kls)
	sort.Float64s(sorted)
	r.Median = sorted[n/2]
	r.P99 = sorted[min(n-1, int(0.99*fn))]
	r.Max = sorted[n-1]
	r.BasePPL = math.Exp(a.baseNLL / fn)
	r.DeltaPPL = math.Exp(a.modelNLL/fn) - r.BasePPL
	r.RMSDeltaP = math.Sqrt(a.dp2 / fn)
	return r
}

// argmax64 returns the index of the largest value (the first of equals).
func argmax64(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// logSoftmaxAll writes log(softmax(logits)) into dst, in float64.
func logSoftmaxAll(dst []float64, logits []float32) {
	mx := slices.Max(logits)
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - mx))
	}
	ls := math.Log(sum)
	for i, v := range logits {
		dst[i] = float64(v-mx) - ls
	}
}
