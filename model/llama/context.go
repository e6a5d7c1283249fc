package llama

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// MaxThreads bounds Options.Threads, whatever the machine: the commands
// refuse more than a few per CPU (internal/cli), this only keeps a caller's
// mistake from reaching the allocator.
const MaxThreads = 1024

// Options configure a production Context.
type Options struct {
	NCtx    int // KV cache length in positions; 0: the model's context length
	NBatch  int // most tokens one prefill step takes; 0: DefaultBatch(Device)
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
	// Device is where the graph runs: "" or "cpu" (the promoted CPU
	// kernels on a worker pool), or DeviceCUDA (the GPU, float32 cache).
	Device string
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
		o.NBatch = DefaultBatch(o.Device)
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
	switch o.Device {
	case "", DeviceCPU, DeviceCUDA:
	default:
		return o, fmt.Errorf("device %q is not one of %s, %s", o.Device, DeviceCPU, DeviceCUDA)
	}
	return o, nil
}

// Context is the production forward pass: quantized weights straight into
// the promoted kernels, activations quantized to each weight type's
// activation type as llama.cpp does, a KV cache, prefill in batches through
// MatMul and single-token decode through MatVec, all on a persistent pool.
// The graph (graph.go) runs on a backend (backend.go): the CPU's (cpu.go)
// or the GPU's (cuda.go). It is not safe for concurrent use.
type Context struct {
	m    *Model
	opts Options
	k    *kernels
	s    *runState
	kv   *kvCache   // the sequence Eval extends
	kvs  []*kvCache // every sequence's cache (a Batch's slots; kvs[0] is kv)
	b    backend
}

// DeviceCPU runs the graph on the CPU (Options.Device).
const DeviceCPU = "cpu"

// NewContext prepares a production context: kernels resolved for every weight
// type, cache and buffers allocated once, the worker pool started (or, on
// the GPU, the weights uploaded and the cache allocated there).
func (m *Model) NewContext(opts Options) (*Context, error) {
	return m.newContext(opts, 1, false)
}

// newContext is NewContext with seqs KV caches (kvs; kv is the first) and,
// with perRow, every row through the kernels of a Batch (cpuBackend.perRow).
func (m *Model) newContext(opts Options, seqs int, perRow bool) (*Context, error) {
	if err := promoted.Validate(); err != nil {
		return nil, err // a bad $DAMASCUS_KERNELS, named, before any kernel is resolved
	}
	nb := opts.NBatch
	opts, err := opts.withDefaults(m.Config)
	if err != nil {
		return nil, err
	}
	if perRow && nb > 0 {
		opts.NBatch = nb // a Batch's step spans sequences: not bounded by one's context
	}
	if opts.Threads > MaxThreads {
		return nil, fmt.Errorf("%d threads is more than %d: each worker holds buffers of its own", opts.Threads, MaxThreads)
	}
	k, err := resolveKernels(m, opts)
	if err != nil {
		return nil, err
	}
	c := &Context{m: m, opts: opts, k: k, s: newRunState(m.Config, opts.NBatch)}
	if opts.Device == DeviceCUDA && m.storedGone() {
		return nil, errors.New("this model was loaded for the CPU: matrices whose CPU kernels all read a weight layout were placed in it alone; load it with LoadOptions.Device \"cuda\" (--device cuda) for the GPU")
	}
	if opts.Device == DeviceCUDA {
		if perRow {
			return nil, errors.New("a batch of several sequences runs on the CPU only so far (--device cpu)")
		}
		c.kv = &kvCache{typ: opts.KVType, nctx: opts.NCtx} // positions only: the cache is on the GPU
		if c.b, err = newCUDABackend(m, c.s, opts); err != nil {
			return nil, err
		}
		return c, nil
	}
	if err := checkMemory(m.Config, opts, seqs); err != nil {
		return nil, err
	}
	c.kvs = make([]*kvCache, seqs)
	for i := range c.kvs {
		c.kvs[i] = newKVCache(m.Config, opts.KVType, opts.NCtx)
	}
	c.kv = c.kvs[0]
	c.b = newCPUBackend(m, k, c.s, c.kvs, opts, perRow)
	return c, nil
}

// Close stops the worker pool.
func (c *Context) Close() { c.b.close() }

// SetThreads sets the workers the next evaluations use: 1 up to the
// Options.Threads the context was made with (the workers started; the
// others park). A bench fills a long cache on many cores, then times
// decode on few (ledger e2e --depth-threads). The CPU's only.
func (c *Context) SetThreads(n int) error {
	cb, ok := c.b.(*cpuBackend)
	if !ok {
		return fmt.Errorf("threads cannot change on device %s", c.opts.Device)
	}
	return cb.pool.SetSize(n)
}

// Threads is the workers the next evaluations use (Options.Threads unless
// SetThreads lowered it; 1 on the GPU's host side).
func (c *Context) Threads() int {
	if cb, ok := c.b.(*cpuBackend); ok {
		return cb.pool.Size()
	}
	return 1
}

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
	if err := c.checkIDs(tokens); err != nil {
		return nil, err
	}
	V := c.m.Config.Vocab
	start := c.kv.pos
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
		if err := c.run(batch, dst, logitRows(all, len(batch))); err != nil {
			return nil, err
		}
		c.kv.pos += len(batch)
	}
	logits, pos0 := c.s.logits[:V], start+len(tokens)-1
	if all {
		logits, pos0 = c.s.logits[:len(tokens)*V], start
	}
	if err := checkFinite(logits, V, pos0); err != nil {
		c.kv.pos = start // the cache's new positions hold the same damage
		return nil, err
	}
	return logits, nil
}

// checkIDs refuses a token outside the model's vocabulary.
func (c *Context) checkIDs(tokens []int32) error {
	V := c.m.Config.Vocab
	for _, t := range tokens {
		if t < 0 || int(t) >= V {
			return fmt.Errorf("token %d is outside the vocabulary of %d", t, V)
		}
	}
	return nil
}

// logitRows is how many of a batch's last rows Eval wants logits for.
func logitRows(all bool, n int) int {
	if all {
		return n
	}
	return 1
}

// run is one forward pass over consecutive positions of the one sequence,
// through the backend's own stepping where it has one (the GPU records a
// decode step once and replays it).
func (c *Context) run(batch []int32, dst []float32, logits int) error {
	for j := range batch {
		c.s.pos[j], c.s.seq[j] = int32(c.kv.pos+j), 0
	}
	if st, ok := c.b.(stepper); ok {
		return st.step(batch, c.kv.pos, dst, func() error { return c.forward(batch, dst, logits) })
	}
	return c.forward(batch, dst, logits)
}

// checkMemory refuses a context whose cache and buffers (as NewContext
// allocates them, counted in float64 so nothing overflows) exceed the
// machine's memory: a context length taken from damaged metadata would
// otherwise end the process in "fatal error: out of memory".
func checkMemory(cfg Config, opts Options, seqs int) error {
	total := physicalMemory()
	if total == 0 {
		return nil // unknown here
	}
	f := func(x int) float64 { return float64(x) }
	kv := 2 * f(seqs) * f(cfg.Layers) * f(opts.NCtx) * f(cfg.KVDim()) // keys and values
	need := 4 * kv
	if opts.KVType != quant.F32 {
		need = 2*kv + f(opts.Threads)*2*f(opts.NCtx)*f(cfg.HeadDim)*4 // and each worker's widened rows
	}
	need += f(opts.NBatch) * 4 * (3*f(cfg.Dim) + 2*f(cfg.QDim()) + 2*f(cfg.KVDim()) + 2*f(cfg.FFNDim) + f(max(cfg.Dim, cfg.QDim(), cfg.FFNDim)))
	need += 4 * f(cfg.Vocab) * f(seqs) // logits: a row per sequence at most
	if need > float64(total) {
		what := fmt.Sprintf("a context of %d positions needs", opts.NCtx)
		if seqs > 1 {
			what = fmt.Sprintf("%d sequences of %d positions need", seqs, opts.NCtx)
		}
		return fmt.Errorf("%s %.1f GiB for its KV cache and buffers, more than this machine's %.1f GiB: use a shorter context (--ctx-size)",
			what, need/(1<<30), float64(total)/(1<<30))
	}
	return nil
}

// A NonFiniteError reports logits that are NaN or infinite: the forward
// pass has broken down, which a sampler or a perplexity cannot recover from.
type NonFiniteError struct {
	Pos   int     // position of the token whose logits are damaged
	Value float32 // the first non-finite value
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("logits at position %d are not finite (%v): the model's weights may be damaged", e.Pos, e.Value)
}

// checkFinite returns a *NonFiniteError for the first row of logits (rows of
// V, the first at position pos0) holding NaN or ±Inf. One pass over the
// logits: tens of microseconds against milliseconds of forward pass.
func checkFinite(logits []float32, V, pos0 int) error {
	for i, x := range logits {
		if x-x != 0 { // NaN and ±Inf only
			return &NonFiniteError{Pos: pos0 + i/V, Value: x}
		}
	}
	return nil
}

// DefaultBatch is the prefill step a context takes where none is asked for:
// 512 tokens on the CPU (llama.cpp's n_ubatch) and 1024 on the GPU, where
// a 512-token step leaves the tensor-core products' last wave of tiles part
// empty (3B pp1024 on the H200, session 12: 21,400 against 17,400 tok/s).
func DefaultBatch(device string) int {
	if device == DeviceCUDA {
		return 1024
	}
	return 512
}
