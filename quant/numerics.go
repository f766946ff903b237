package quant

// Numerics of llama.cpp b4748 (commit c392e509) that this package
// reproduces, as read from ggml/src/ggml-quants.c and
// ggml/src/ggml-cpu/ggml-cpu-quants.c of that era (AVX2+FMA+F16C build):
//
//   - Weights: llama-quantize without an imatrix runs quantize_row_*_ref
//     (Q4_0..Q8_0, Q2_K..Q6_K) and quantize_iq4_nl (ntry = 7) for IQ4_NL.
//     ggml-base is compiled without -mfma, so these run in plain float32
//     with no contraction; fp16 stores are round-to-nearest-even.
//     nearest_int is the 1.5·2²³ trick (ties to even); the legacy types
//     use (int8_t)(x + 8.5f)-style truncation and Q8_0 uses roundf.
//   - Activations: quantize_row_q8_0 (AVX2) takes maxAbs over the block,
//     d = maxAbs/127 (stored fp16), id = 127/maxAbs (0 when maxAbs is 0) and
//     q = _mm256_round_ps(x·id, _MM_ROUND_NEAREST), i.e. ties to even —
//     unlike the reference's roundf. quantize_row_q8_1 (AVX2) is the same
//     plus s = fp16(d·Σq) with Σq summed in int32. quantize_row_q8_K on x86
//     is quantize_row_q8_K_ref: the element of largest magnitude keeps its
//     sign, iscale = -127/max, q = min(127, nearest_int(iscale·x)), d =
//     1/iscale stored as float32, bsums are sums of 16 quants.
//   - Dots: per block an exact integer sum times float32 scales
//     (fp16(dw)·fp16(da) for the legacy types, q8_K.d·fp16(d) for the
//     K-quants), accumulated in float32 (ggml accumulates in SIMD lanes, so
//     only the summation order differs). Q4_1/Q5_1 add m·s with the
//     fp16-rounded s of Q8_1. Q2_K/Q4_K/Q5_K subtract dmin·Σ min·bsum.
//   - F32/F16 dots: FMA into four 8-lane accumulators per 32 elements,
//     reduced (x0+x2, x1+x3, x0+x1, halves, two hadds), tail in float64.
//     BF16 on AVX2: multiply then add (no FMA) into four accumulators.
//   - Caveat: with GGML_USE_LLAMAFILE (the default), mul_mat may run
//     llamafile's tinyBLAS for F32, F16, Q8_0, Q4_0, Q5_0 and IQ4_NL weights
//     when the row length is a multiple of its tile; the integer parts are
//     the same but the float32 accumulation order differs from vec_dot.
