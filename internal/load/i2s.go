package load

import (
	"fmt"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/model"
	"github.com/qsf-llm/qsf/quant"
)

// noI2SExperts fails for a mixture of experts with I2_S tensors: under a
// budget it streams its experts from the file's layouts, and I2_S is only
// read converted (i2sTensor; dense models stream it converted, see
// package stream).
func noI2SExperts(f *format.File, hp *model.Hparams) error {
	if hp.MoE.Experts == 0 {
		return nil
	}
	for i := range f.Tensors {
		if t := &f.Tensors[i]; t.Type == quant.I2_S {
			return fmt.Errorf("%w: %s is I2_S, which a mixture of experts loads only without a RAM budget (it is converted at load; expert streaming reads the file's layouts)", quant.ErrUnsupported, t.Name)
		}
	}
	return nil
}

// i2sTensor loads an I2_S matrix (bitnet.cpp's ternary type): it detects
// the layout from the size of the tensor's data and converts it, exactly,
// into a type the kernels run (quant.ConvertI2S): TQ2_0 with the tensor
// scale kept apart, or Q8_0 with the block scales. The converted data
// lives on the heap; the file's pages of the I2_S data are handed back
// (format.File.Release), as the memory plan counts the converted bytes
// in their place.
func i2sTensor(f *format.File, ti *format.TensorInfo, data []byte) (model.Tensor, error) {
	rows, cols := ti.Rows(), ti.Cols()
	layout, err := quant.DetectI2S(ti.Name, rows*cols, len(data))
	if err != nil {
		return model.Tensor{}, err
	}
	var scales []float32
	if layout == quant.I2SSiblingScale {
		name := quant.I2SScalesName(ti.Name)
		si, ok := f.Tensor(name)
		if !ok {
			return model.Tensor{}, fmt.Errorf("%w: %s (scales of %v tensor %s)", model.ErrMissingTensor, name, layout, ti.Name)
		}
		if si.Type != quant.F32 && si.Type != quant.F16 {
			return model.Tensor{}, fmt.Errorf("%w: %s is %v, want F32 or F16", quant.ErrUnsupported, name, si.Type)
		}
		sd, err := f.TensorData(si)
		if err != nil {
			return model.Tensor{}, err
		}
		scales = make([]float32, si.Elements())
		if err := quant.DequantizeRow(si.Type, scales, sd); err != nil {
			return model.Tensor{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	typ, out, scale, err := quant.ConvertI2S(layout, data, rows, cols, scales)
	if err != nil {
		return model.Tensor{}, fmt.Errorf("tensor %s (%v): %w", ti.Name, layout, err)
	}
	f.Release(data)
	if scale == 1 {
		scale = 0 // none
	}
	return model.Tensor{Name: ti.Name, Type: typ, Rows: rows, Cols: cols, Data: out, Scale: scale}, nil
}
