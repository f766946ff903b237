// Package synth writes deterministic random-weight model files with the
// shapes of real models, for benchmarks, demos and tests that must not
// depend on downloaded weights.
//
// A file is described by a Plan: a Shape (the architecture's dimensions),
// a FileType (the tensor type mix llama-quantize would produce) and a seed.
// Plan.Write streams the GGUF file one tensor at a time, so files larger
// than memory can be written. Every weight is a normal random number whose
// value depends only on the seed, the tensor's name and its row, so the same
// plan always gives byte-identical files and a quantized file holds the same
// weights as the f32 file of the same seed, rounded by the quantizer.
//
// The files carry valid llama.cpp metadata (architecture hyperparameters and
// a generated SentencePiece vocabulary), so llama.cpp loads them as well.
package synth
