// Package format reads and writes GGUF, the model file format of ggml and
// llama.cpp.
//
// A GGUF file is a little-endian header — magic "GGUF", version, tensor and
// key-value counts — followed by typed metadata key-value pairs, tensor
// descriptions (name, shape, ggml type, offset) and, after padding to the
// alignment, the tensor data. ReadGGUF parses the header from any
// io.ReaderAt, validating every length, count, shape and data range against
// the file size before it allocates, so malformed files produce errors
// matching ErrTruncated, ErrCorrupt and the other sentinels rather than
// panics or huge allocations. Open adds zero-copy access to the tensor data
// through a read-only memory mapping, falling back to ReadAt where mapping
// is not possible.
//
// WriteGGUF writes version 3 files, streaming the tensor data so that files
// larger than memory can be produced.
//
// Shapes are in ggml order: Shape[0] is the length of a row (ne0) and
// Shape[1] the number of rows. Tensor types are quant.Type values, which are
// ggml's type ids.
package format
