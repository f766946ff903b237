package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/qsf-llm/qsf"
	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// errTargetSize is returned when --bpw or --target-size asks for less than
// the smallest types can give.
var errTargetSize = errors.New("quantize: target too small")

// mixLadder returns the types --bpw chooses among for a matrix with rows
// of cols elements, smallest first.
func mixLadder(cols int) []quant.Type {
	var l []quant.Type
	for _, t := range []quant.Type{quant.QSF_Q2R, quant.QSF_Q3R, quant.QSF_Q4R, quant.Q5_K, quant.Q6_K, quant.Q8_0} {
		if cols%t.BlockSize() == 0 {
			l = append(l, t)
		}
	}
	return l
}

// mixChoice is one way to store one matrix.
type mixChoice struct {
	typ  quant.Type
	bits float64 // bits of the whole matrix
	data []byte
	err  float64 // relative output error tr(E·G·Eᵀ)/tr(W·G·Wᵀ)
}

// mixMatrix is one matrix of the plan.
type mixMatrix struct {
	name    string
	rows    int
	cols    int
	choices []mixChoice
	sens    float64 // KL divergence per unit of relative output error
	pick    int
}

// planMixed chooses a type per matrix of src (fallback for a matrix whose
// rows no type of mixLadder holds) so that the matrices take at
// most budget bits and the predicted KL divergence is smallest: each
// matrix is quantized to every type of its ladder (GPTQ where gram gives
// its second moment), the KL divergence of the model with that one
// matrix at its smallest type is measured on text (MatrixSensitivity),
// the divergence at the other types is predicted in proportion to their
// relative output error, and bits go greedily where they lower the
// predicted divergence most per bit. It returns the chosen type and data
// by name, and the report per matrix.
func planMixed(ctx context.Context, m *qsf.Model, src *format.File, gram map[string][]float64, energy map[string][]float32, text string, budget float64, fallback quant.Type, log io.Writer) (map[string]mixChoice, []mixReport, error) {
	var mats []*mixMatrix
	minBits := 0.0
	for i := range src.Tensors {
		t := &src.Tensors[i]
		if len(t.Shape) != 2 || t.Shape[1] < 2 {
			continue
		}
		cols, rows := int(t.Shape[0]), int(t.Shape[1])
		l := mixLadder(cols)
		if len(l) == 0 {
			// Rows no ladder type holds: the --fallback type, fixed.
			if fallback == quant.F32 || cols%fallback.BlockSize() != 0 {
				return nil, nil, fmt.Errorf("--bpw: %s has rows of %d elements, which neither the types --bpw chooses among nor --fallback %v can hold", t.Name, cols, fallback)
			}
			l = []quant.Type{fallback}
		}
		w, err := dequantizeAll(src, t)
		if err != nil {
			return nil, nil, err
		}
		mm := &mixMatrix{name: t.Name, rows: rows, cols: cols}
		for _, typ := range l {
			c, err := quantizeChoice(typ, w, rows, cols, gram[t.Name], energy[t.Name])
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", t.Name, err)
			}
			mm.choices = append(mm.choices, c)
		}
		minBits += mm.choices[0].bits
		mats = append(mats, mm)
		fmt.Fprintf(log, "\rquantize: %d matrices at every type", len(mats))
	}
	fmt.Fprintln(log)
	if minBits > budget {
		return nil, nil, fmt.Errorf("%w: the smallest types take %.0f bits, the target %.0f", errTargetSize, minBits, budget)
	}
	names := make([]string, len(mats))
	byName := map[string]*mixMatrix{}
	for i, mm := range mats {
		names[i], byName[mm.name] = mm.name, mm
	}
	done := 0
	kl, ntok, err := m.MatrixSensitivity(ctx, text, qsf.SensitivityOptions{}, names, func(name string) (quant.Type, []byte, error) {
		done++
		fmt.Fprintf(log, "\rquantize: sensitivity %d/%d", done, len(names))
		c := byName[name].choices[0]
		return c.typ, c.data, nil
	})
	fmt.Fprintln(log)
	if err != nil {
		return nil, nil, fmt.Errorf("sensitivity: %w", err)
	}
	fmt.Fprintf(log, "quantize: sensitivity measured on %d tokens\n", ntok)
	for _, mm := range mats {
		if e := mm.choices[0].err; e > 0 {
			mm.sens = kl[mm.name] / e
		}
	}
	// Greedy: the upgrade with the largest drop in predicted divergence per
	// extra bit, while it fits.
	used := minBits
	for {
		best, bestJ, bestGain := (*mixMatrix)(nil), 0, 0.0
		for _, mm := range mats {
			cur := mm.choices[mm.pick]
			for j := mm.pick + 1; j < len(mm.choices); j++ {
				c := mm.choices[j]
				extra := c.bits - cur.bits
				if extra <= 0 || used+extra > budget {
					continue
				}
				gain := mm.sens * (cur.err - c.err) / extra
				if gain > bestGain {
					best, bestJ, bestGain = mm, j, gain
				}
			}
		}
		if best == nil {
			break
		}
		used += best.choices[bestJ].bits - best.choices[best.pick].bits
		best.pick = bestJ
	}
	plan := map[string]mixChoice{}
	var rep []mixReport
	for _, mm := range mats {
		c := mm.choices[mm.pick]
		plan[mm.name] = c
		rep = append(rep, mixReport{Name: mm.name, Type: c.typ.String(), KLSmallest: kl[mm.name], PredictedKL: mm.sens * c.err})
	}
	sort.Slice(rep, func(i, j int) bool { return rep[i].KLSmallest > rep[j].KLSmallest })
	return plan, rep, nil
}

// mixReport is the --json record of one matrix's choice.
type mixReport struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	KLSmallest  float64 `json:"kl_smallest"`  // measured with this matrix alone at the smallest type
	PredictedKL float64 `json:"predicted_kl"` // at the chosen type
}

// quantizeChoice quantizes w to typ (GPTQ when the type is rotated and
// gram is known, else weighted by energy) and measures its relative
// output error.
func quantizeChoice(typ quant.Type, w []float32, rows, cols int, gram []float64, energy []float32) (mixChoice, error) {
	rb, err := quant.RowBytes(typ, cols)
	if err != nil {
		return mixChoice{}, err
	}
	data := make([]byte, rows*rb)
	tr, err := quant.Lookup(typ)
	if err != nil {
		return mixChoice{}, err
	}
	if len(gram) != cols*cols {
		gram = nil
	}
	if tr.RotatedInput && gram != nil {
		if err := quant.QuantizeGPTQ(typ, data, w, rows, cols, gram); err != nil {
			return mixChoice{}, err
		}
	} else {
		for r := 0; r < rows; r++ {
			dst, x := data[r*rb:(r+1)*rb], w[r*cols:(r+1)*cols]
			if len(energy) == cols {
				err = quant.QuantizeRowImportance(typ, dst, x, energy)
			} else {
				err = quant.QuantizeRow(typ, dst, x)
			}
			if err != nil {
				return mixChoice{}, err
			}
		}
	}
	back := make([]float32, rows*cols)
	if err := quant.DequantizeRow(typ, back, data); err != nil {
		return mixChoice{}, err
	}
	return mixChoice{typ: typ, bits: float64(len(data) * 8), data: data, err: outputError(w, back, rows, cols, gram, energy)}, nil
}

// outputError returns tr(E·G·Eᵀ)/tr(W·G·Wᵀ) for E = w − q: the relative
// error of the products with inputs of second moment G (gram; its
// diagonal energy, or the identity, when unknown).
func outputError(w, q []float32, rows, cols int, gram []float64, energy []float32) float64 {
	var num, den float64
	e := make([]float64, cols)
	for r := 0; r < rows; r++ {
		x := w[r*cols : (r+1)*cols]
		for j := range e {
			e[j] = float64(x[j]) - float64(q[r*cols+j])
		}
		switch {
		case gram != nil:
			for i := 0; i < cols; i++ {
				g := gram[i*cols : (i+1)*cols]
				var a, b float64
				for j, v := range g {
					a += float64(v * e[j])
					b += float64(v * float64(x[j]))
				}
				num += float64(e[i] * a)
				den += float64(float64(x[i]) * b)
			}
		case len(energy) == cols:
			for j, v := range e {
				num += float64(float64(energy[j]) * float64(v*v))
				den += float64(float64(energy[j]) * float64(float64(x[j])*float64(x[j])))
			}
		default:
			for j, v := range e {
				num += float64(v * v)
				den += float64(float64(x[j]) * float64(x[j]))
			}
		}
	}
	if !(den > 0) {
		return 0
	}
	return num / den
}

// matrixBudget converts a --target-size in bytes into bits for the
// matrices: what is left after the file's other tensors, its metadata and
// tokenizer (as large as in src), the quality report and alignment.
func matrixBudget(src *format.File, target float64) float64 {
	var all, vectors, report float64
	nmat := 0
	for _, t := range src.Tensors {
		all += float64(t.Size)
		if len(t.Shape) != 2 || t.Shape[1] < 2 {
			vectors += float64(t.Size)
		} else {
			nmat++
			// The quality report's entry: name and type strings, three f32.
			report += float64(len(t.Name) + 48)
		}
	}
	other := float64(src.Size()) - all + vectors + float64(64*(len(src.Tensors)+nmat)) + report + 4096
	return math.Floor((target - other) * 8)
}
