// Package llama is the Llama forward pass (Llama 2, TinyLlama, Llama 3.x):
// configuration asserted from GGUF metadata, a float64-accumulating reference
// over dequantized weights (the oracle), and the production path that feeds
// quantized weights to the promoted kernels with a KV cache, batched prefill
// and single-token decode on a persistent worker pool.
//
// The files, by flow:
//
//   - Loading: load.go (Load: file, model, tokenizer, placement), arch.go
//     (readers by general.architecture), config.go (hyperparameters),
//     model.go (weights), placement.go (where the weights live).
//   - The production graph: context.go (Context, Options, Eval), graph.go
//     (forward, one function per step), kernels.go (the kernels resolved
//     for a model), runstate.go (the batch's activations), kvcache.go (the
//     KV cache), rope.go (rotation angles).
//   - The device the graph runs on: backend.go (the interface and its row
//     tasks), cpu.go and cpu_*.go (the CPU backend: how products, attention
//     and row work are dealt on the pool, activations quantized once).
//   - The oracle: reference.go (Reference.Eval), compare.go.
package llama
