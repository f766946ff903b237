package convert

import (
	"fmt"
	"time"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// FromGGUF converts the GGUF file in to the QSF file out. Every tensor
// keeps its type and bytes unless opts.Requantize is set; all metadata is
// kept (the keys QSF types are stored in the header and architecture
// config, the others as key/values), so the QSF file presents the same
// model. In may also be a QSF file (read through its GGUF view): it is
// written again, re-quantized or recompressed as opts say.
func FromGGUF(in, out string, opts Options) (*Result, error) {
	start := time.Now()
	// Read with pread rather than a mapping: mapped pages would count
	// against the conversion's resident memory.
	f, err := format.OpenWith(in, format.OpenOptions{NoMmap: true})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := planGGUF(f, opts)
	if err != nil {
		return nil, fmt.Errorf("convert: %s: %w", in, err)
	}
	return write(p, out, opts, start)
}

func planGGUF(f *format.File, opts Options) (*plan, error) {
	cfg, err := format.QSFConfigFromGGUF(&f.Metadata)
	if err != nil {
		return nil, err
	}
	p := &plan{kind: "gguf", inBytes: f.Size(), cfg: cfg}
	if f.QSF() != nil {
		p.kind = "qsf"
	}
	if embd, ok := f.Tensor("token_embd.weight"); ok {
		cfg.Header.Vocab = uint32(embd.Rows())
	}
	nLayers := 0
	for i := range f.Tensors {
		if _, place, layer := format.ClassifyTensor(f.Tensors[i].Name); place == format.PlaceLayer {
			nLayers = max(nLayers, layer+1)
		}
	}
	if bc, ok := f.Metadata.Uint(f.Architecture() + ".block_count"); ok && int(bc) > nLayers && bc < 1<<20 {
		nLayers = int(bc) // layers without tensors still count
	}
	p.layers = make([][]*source, nLayers)
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if len(ti.Shape) > 2 {
			for _, d := range ti.Shape[2:] {
				if d != 1 {
					return nil, fmt.Errorf("%w: tensor %s has shape %v; QSF v1 stores vectors and matrices", ErrUnsupported, ti.Name, ti.Shape)
				}
			}
		}
		role, place, layer := format.ClassifyTensor(ti.Name)
		shape := ti.Shape[:min(2, len(ti.Shape))]
		s := &source{
			out:     format.QSFTensor{Role: role, Name: ti.Name, Shape: shape, Type: outputType(ti.Name, shape, ti.Type, opts, ti.Type)},
			srcType: ti.Type,
		}
		if len(shape) < 2 {
			s.out.Type = ti.Type // vectors keep their bytes
		}
		rb := int64(ti.RowBytes())
		base := f.DataOffset + int64(ti.Offset)
		if ti.Type == quant.I2_S {
			// Its size follows its layout, not its rows (quant.DetectI2S):
			// copied whole, span and all.
			s.out.Type, s.out.Size = quant.I2_S, ti.Size
			s.rows = func(dst []byte, _, _ int) ([]byte, error) {
				b := grow(dst, int64(ti.Size))
				if _, err := f.ReadAt(b, base); err != nil {
					return nil, fmt.Errorf("tensor %s: %w", ti.Name, err)
				}
				return b, nil
			}
		} else if f.QSF() != nil {
			// A QSF layer may be compressed: its tensors are read through
			// the view, a layer at a time.
			s.rows = func(dst []byte, lo, hi int) ([]byte, error) {
				data, err := f.TensorData(ti)
				if err != nil {
					return nil, err
				}
				b := grow(dst, int64(hi-lo)*rb)
				copy(b, data[int64(lo)*rb:int64(hi)*rb])
				return b, nil
			}
		} else {
			s.rows = func(dst []byte, lo, hi int) ([]byte, error) {
				b := grow(dst, int64(hi-lo)*rb)
				if _, err := f.ReadAt(b, base+int64(lo)*rb); err != nil {
					return nil, fmt.Errorf("tensor %s: %w", ti.Name, err)
				}
				return b, nil
			}
		}
		switch place {
		case format.PlaceEmbedding:
			p.emb = append(p.emb, s)
		case format.PlaceFinal:
			p.fin = append(p.fin, s)
		default:
			p.layers[layer] = append(p.layers[layer], s)
		}
	}
	cfg.Arch.Features = features(p, cfg.Arch.Features)
	return p, nil
}
