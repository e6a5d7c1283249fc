package llama

import (
	"fmt"
	"runtime"

	"github.com/damascus-llm/damascus/model/quant"
	"github.com/damascus-llm/damascus/promoted"
)

// Options configure a production Context.
type Options struct {
	NCtx    int // KV cache length in positions; 0: the model's context length
	NBatch  int // most tokens one prefill step takes; 0: 512
	Threads int // workers of the pool; 0: runtime.NumCPU()
	// KVType is the KV cache's type: F32 (the zero value), F16 or BF16,
	// each computed with the roundings llama.cpp's graph applies to a cache
	// of that type (F16 and BF16 round the queries and the probabilities).
	KVType quant.Type
	// StaticSplit runs every prefill matmul as one call per worker on a
	// fixed share of the rows, each call laying out the whole batch's
	// activations: the schedule before prepared kernels, kept to compare.
	StaticSplit bool
	// Capture, when set, receives every layer's output hidden state for
	// every token evaluated (debugging and per-layer comparisons).
	Capture CaptureFunc
}

// withDefaults fills in the zero values and checks the rest.
func (o Options) withDefaults(cfg Config) (Options, error) {
	if o.NCtx == 0 {
		o.NCtx = cfg.ContextLength
	}
	if o.NCtx < 0 {
		return o, fmt.Errorf("context length %d is negative", o.NCtx)
	}
	if o.NBatch <= 0 {
		o.NBatch = 512
	}
	o.NBatch = min(o.NBatch, o.NCtx)
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	switch o.KVType {
	case quant.F32, quant.F16, quant.BF16:
	default:
		return o, fmt.Errorf("KV cache type %s is not supported (F32, F16, BF16)", o.KVType)
	}
	return o, nil
}

// Context is the production forward pass: quantized weights straight into
// the promoted kernels, activations quantized to each weight type's
// activation type as llama.cpp does, a KV cache, prefill in batches through
// MatMul and single-token decode through MatVec, all on a persistent pool.
// The graph (graph.go) runs on a backend (backend.go); the CPU's (cpu.go)
// is the only one. It is not safe for concurrent use.
type Context struct {
	m    *Model
	opts Options
	k    *kernels
	s    *runState
	kv   *kvCache
	b    backend
}

// NewContext prepares a production context: kernels resolved for every weight
// type, cache and buffers allocated once, the worker pool started.
func (m *Model) NewContext(opts Options) (*Context, error) {
	if err := promoted.Validate(); err != nil {
		return nil, err // a bad $DAMASCUS_KERNELS, named, before any kernel is resolved
	}
	opts, err := opts.withDefaults(m.Config)
	if err != nil {
		return nil, err
	}
	k, err := resolveKernels(m, opts)
	if err != nil {
		return nil, err
	}
	c := &Context{m: m, opts: opts, k: k,
		s: newRunState(m.Config, opts.NBatch), kv: newKVCache(m.Config, opts.KVType, opts.NCtx)}
	c.b = newCPUBackend(m, k, c.s, c.kv, opts)
	return c, nil
}

// Close stops the worker pool.
func (c *Context) Close() { c.b.close() }

// Pos is the number of positions in the KV cache.
func (c *Context) Pos() int { return c.kv.pos }

// NCtx is the KV cache length.
func (c *Context) NCtx() int { return c.opts.NCtx }

// Options returns the options in effect, defaults filled in.
func (c *Context) Options() Options { return c.opts }

// Truncate drops the cached positions from n on, so evaluation continues at n.
func (c *Context) Truncate(n int) error { return c.kv.truncate(n) }

// Eval appends tokens to the sequence and returns logits: for the last token
// only (Vocab values), or with all set for every token (len(tokens)×Vocab,
// row-major). The slice is reused by the next call. Tokens run through the
// model in batches of at most NBatch.
func (c *Context) Eval(tokens []int32, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("no tokens to evaluate")
	}
	if c.kv.pos+len(tokens) > c.opts.NCtx {
		return nil, fmt.Errorf("%d tokens at position %d exceed the context length %d", len(tokens), c.kv.pos, c.opts.NCtx)
	}
	V := c.m.Config.Vocab
	for _, t := range tokens {
		if t < 0 || int(t) >= V {
			return nil, fmt.Errorf("token %d is outside the vocabulary of %d", t, V)
		}
	}
	if all && len(c.s.logits) < len(tokens)*V {
		c.s.logits = make([]float32, len(tokens)*V)
	}
	for i := 0; i < len(tokens); i += c.opts.NBatch {
		batch := tokens[i:min(i+c.opts.NBatch, len(tokens))]
		last := i+len(batch) == len(tokens)
		var dst []float32
		switch {
		case all:
			dst = c.s.logits[i*V : (i+len(batch))*V]
		case last:
			dst = c.s.logits[:V]
		}
		if err := c.forward(batch, dst, all); err != nil {
			return nil, err
		}
	}
	if all {
		return c.s.logits[:len(tokens)*V], nil
	}
	return c.s.logits[:V], nil
}
