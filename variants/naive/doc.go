// Package naive holds the scalar Go variant of every op in the ledger: plain
// loops that follow ggml's reference C (vec_dot_*_generic, quantize_row_*_ref)
// one operation at a time. They are the floor every faster variant is timed
// against and the fallback the engine uses when nothing else is available.
package naive
