package convert

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzSafetensors parses arbitrary safetensors files: errors are fine,
// panics and allocations beyond the file size are not.
func FuzzSafetensors(f *testing.F) {
	hdr := []byte(`{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"format":"pt"}}`)
	seed := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	seed = append(append(seed, hdr...), make([]byte, 16)...)
	f.Add(seed)
	f.Add(seed[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := readSafetensors(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for _, x := range ts {
			if x.Type.BlockBytes() != 0 {
				if _, err := x.f32(); err != nil {
					t.Fatalf("tensor %s: %v", x.Name, err)
				}
			}
		}
	})
}

// FuzzLlama2c parses arbitrary llama2.c checkpoint headers and plans the
// conversion.
func FuzzLlama2c(f *testing.F) {
	var seed []byte
	for _, x := range []int32{8, 16, 1, 2, 1, 4, 8} {
		seed = binary.LittleEndian.AppendUint32(seed, uint32(x))
	}
	f.Add(append(seed, make([]byte, 4096)...))
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		planLlama2c(bytes.NewReader(b), int64(len(b)), Options{})
	})
}

// FuzzLlama2cTokenizer parses arbitrary tokenizer.bin files.
func FuzzLlama2cTokenizer(f *testing.F) {
	var seed []byte
	seed = binary.LittleEndian.AppendUint32(seed, 8)
	for _, tok := range []string{"<unk>", "<s>", "</s>", "<0x0A>", " a"} {
		seed = binary.LittleEndian.AppendUint32(seed, 0)
		seed = binary.LittleEndian.AppendUint32(seed, uint32(len(tok)))
		seed = append(seed, tok...)
	}
	f.Add(seed, 5)
	f.Fuzz(func(t *testing.T, b []byte, vocab int) {
		if vocab < 0 || vocab > 1<<16 {
			return
		}
		parseLlama2cTokenizer(bytes.NewReader(b), int64(len(b)), vocab)
	})
}
