// Package naive holds the scalar Go variant of every op in the ledger: plain
// loops that follow ggml's reference C (vec_dot_*_generic, quantize_row_*_ref)
// one operation at a time. They are the floor every faster variant is timed
// against and the fallback the engine uses when nothing else is available.
// naive-bf16 and naive-f16 spell out, in the same way, the attention of
// llama.cpp's graph over a 16-bit KV cache: the reference every kernel of
// those precision classes is held to.
package naive
