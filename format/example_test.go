package format_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/qsf-llm/qsf/format"
	"github.com/qsf-llm/qsf/quant"
)

// Example writes a tiny GGUF file and opens it again.
func Example() {
	dir, err := os.MkdirTemp("", "gguf-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")

	// Write: metadata plus one 4x2 F32 matrix, streamed row by row.
	var md format.Metadata
	md.Set(format.KeyArchitecture, format.StringValue("llama"))
	md.Set("llama.embedding_length", format.Uint32Value(4))
	md.Set("tokenizer.ggml.tokens", format.StringsValue([]string{"<unk>", "<s>"}))
	tensors := []format.WriterTensor{{Name: "token_embd.weight", Shape: []uint64{4, 2}, Type: quant.F32}}
	out, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	err = format.WriteGGUF(out, &md, tensors, func(i int, w io.Writer) error {
		for row := range 2 {
			var buf [16]byte
			for col := range 4 {
				binary.LittleEndian.PutUint32(buf[4*col:], math.Float32bits(float32(10*row+col)))
			}
			if _, err := w.Write(buf[:]); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Fatal(err)
	}

	// Read.
	f, err := format.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	n, _ := f.Metadata.Uint("llama.embedding_length")
	fmt.Println("architecture:", f.Architecture(), "embedding length:", n)
	fmt.Println("tensors:", len(f.Tensors))
	t, _ := f.Tensor("token_embd.weight")
	data, err := f.TensorData(t)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Name, t.Shape, t.Type, "rows:", t.Rows(), "bytes:", len(data))
	fmt.Println("row 1, col 2:", math.Float32frombits(binary.LittleEndian.Uint32(data[4*(4+2):])))
	tokens, _ := f.Metadata.Get("tokenizer.ggml.tokens")
	fmt.Println("tokens:", tokens)
	// Output:
	// architecture: llama embedding length: 4
	// tensors: 1
	// token_embd.weight [4 2] F32 rows: 2 bytes: 32
	// row 1, col 2: 12
	// tokens: ["<unk>", "<s>"]
}
