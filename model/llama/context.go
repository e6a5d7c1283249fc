package llama

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/damascus-llm/damascus/internal/pool"
	"github.com/damascus-llm/damascus/ledger"
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

// linear is one weight matrix bound to its kernels.
type linear struct {
	w  *Matrix
	at quant.Type // activation type its kernels take
	mv ledger.MatVec
	mm ledger.MatMul
	// prep is mm in two steps (nil when its kernel has none): batches then
	// lay their activations out once and deal the rows in chunks. Tasks
	// whose kernels share mmID share the layout.
	prep *ledger.PreparedMatMul
	mmID string
}

type layerOps struct{ q, k, v, out, gate, up, down linear }

// Context is the production forward pass: quantized weights straight into
// the promoted kernels, activations quantized to each weight type's
// activation type as llama.cpp does, a KV cache, prefill in batches through
// MatMul and single-token decode through MatVec, all on a persistent pool.
// It is not safe for concurrent use.
type Context struct {
	m    *Model
	cfg  Config
	opts Options
	pool *pool.Pool
	pos  int

	layers []layerOps
	output linear
	quant  map[quant.Type]ledger.Quantize
	rms    ledger.RMSNorm
	silu   ledger.SiLUMul
	rope   ledger.RoPE
	attn   ledger.Attention
	attnB  ledger.AttentionBatch // prefill over the F32 cache
	attnH  ledger.AttentionBatch // prefill attention over a 16-bit cache, on its rows widened
	widenH ledger.Dequantize     // a 16-bit cache's rows to float32
	attn16 ledger.AttentionHalf  // decode attention over a 16-bit cache as stored

	// KV cache per layer, laid out [kvHead][position][headDim] so that one
	// key/value head's history is contiguous for the attention kernel.
	k32, v32 [][]float32
	k16, v16 [][]uint16 // F16 or BF16 bits

	// Batch buffers: NBatch rows each. xq holds the activation rows at
	// xqSrc quantized to xqType, reused by matrices sharing an input (Q, K,
	// V; gate, up) until invalidate.
	x, xn, q, kb, vb, att, tmp, gate, up []float32
	xq                                   []byte
	xqType                               quant.Type
	xqRows                               int
	xqSrc                                *float32
	cos, sin                             []float32
	logits                               []float32
	wide                                 [][]float32 // per-worker keys then values of one KV head, widened (16-bit cache)

	// Current parallel task; the method values are made once so that
	// dispatching allocates nothing.
	// lins[:nlin] are matrices sharing one input, run in one dispatch
	// (Q, K, V; gate, up) so that decode pays one barrier for them.
	lins  [3]linTask
	nlin  int
	linFn func(w, n int)
	// prepFn lays out a prepared batch's activations (prepWork) into
	// prepBufs, one buffer per task at most.
	prepFn   func(w, n int)
	prepBufs [3][]byte
	// deal hands out the rows of decode's matvecs and of prepared batch
	// matmuls, and attention's tasks, in chunks, so a worker that falls
	// behind is helped instead of waited for; dealt says the current linear task uses it, and lins[i]'s chunks
	// end at chunkEnd[i] in the dealt sequence.
	deal     *pool.Dealer
	dealt    bool
	chunkEnd [3]int
	at       attnTask
	attnFn   func(w, n int)
	// rt is the per-token work between products (see rowTask); rowErrs
	// holds each worker's error from it.
	rt      rowTask
	rowsFn  func(w, n int)
	rowErrs []error
}

type linTask struct {
	l     *linear
	dst   []float32
	xq    []byte
	n     int
	chunk int // rows per dealt chunk
	// prep is the activations laid out for l.prep (a batch run prepared);
	// owner says this task lays it out (the first task of its layout).
	prep  []byte
	owner bool
}

// batchChunkRows is the rows per dealt chunk of a prepared batch matmul:
// four row tiles of the tile kernels. A chunk of the 3B's up projection at
// 1024 tokens is then about 1.5 ms of tile work, so taking one costs
// nothing next to it, while a matrix is still 16 to 128 chunks for the
// workers to even out.
const batchChunkRows = 64

// dealBytes is about how much weight data one dealt chunk of a matvec
// streams: large enough that taking a chunk (one uncontended
// compare-and-swap) and a kernel call cost nothing next to it and a stolen
// chunk is a long sequential stream, small enough that the workers finish
// within microseconds of each other. On the 2-vCPU dev VM (1B decode, sizes
// alternated every 2 tokens, two runs): 64 KiB 18.65/17.10, 128 KiB
// 18.45/16.89, 256 KiB 18.32/16.66, 512 KiB 18.47/16.83 ms/token (means).
const dealBytes = 256 << 10

type attnTask struct {
	layer int
	pos0  int // position of the first token of the batch
	n     int
	chunk int // query tokens per prefill task
}

// NewContext prepares a production context: kernels resolved for every weight
// type, cache and buffers allocated once, the worker pool started.
func (m *Model) NewContext(opts Options) (*Context, error) {
	if err := promoted.Validate(); err != nil {
		return nil, err // a bad $DAMASCUS_KERNELS, named, before any kernel is resolved
	}
	cfg := m.Config
	if opts.NCtx == 0 {
		opts.NCtx = cfg.ContextLength
	}
	if opts.NCtx < 0 {
		return nil, fmt.Errorf("context length %d is negative", opts.NCtx)
	}
	if opts.NBatch <= 0 {
		opts.NBatch = 512
	}
	opts.NBatch = min(opts.NBatch, opts.NCtx)
	if opts.Threads <= 0 {
		opts.Threads = runtime.NumCPU()
	}
	if opts.Threads > MaxThreads {
		return nil, fmt.Errorf("%d threads is more than %d: each worker holds buffers of its own", opts.Threads, MaxThreads)
	}
	switch opts.KVType {
	case quant.F32, quant.F16, quant.BF16:
	default:
		return nil, fmt.Errorf("KV cache type %s is not supported (F32, F16, BF16)", opts.KVType)
	}
	if err := checkMemory(cfg, opts); err != nil {
		return nil, err
	}
	c := &Context{m: m, cfg: cfg, opts: opts, quant: map[quant.Type]ledger.Quantize{},
		rms: promoted.RMSNorm(), silu: promoted.SiLUMul(), rope: promoted.RoPE(), attn: promoted.Attention(), attnB: promoted.AttentionBatch()}
	var err error
	if p, ok := cachePrecision[opts.KVType]; ok {
		if c.attnH, err = promoted.AttentionBatchAt(p); err != nil {
			return nil, fmt.Errorf("%s KV cache: %w", opts.KVType, err)
		}
		if c.widenH, err = promoted.Dequantize(opts.KVType); err != nil {
			return nil, fmt.Errorf("%s KV cache: %w", opts.KVType, err)
		}
		if c.attn16, err = promoted.AttentionHalf(opts.KVType); err != nil {
			return nil, fmt.Errorf("%s KV cache: %w", opts.KVType, err)
		}
	}
	bind := func(w *Matrix) linear {
		if err != nil {
			return linear{}
		}
		l := linear{w: w, at: ledger.ActivationType(w.Type)}
		if l.mv, err = promoted.MatVec(w.Type); err != nil {
			err = fmt.Errorf("%s: %w", w.Name, err)
			return l
		}
		mk, e := promoted.MatMulFor(w.Type)
		if e != nil {
			err = fmt.Errorf("%s: %w", w.Name, e)
			return l
		}
		l.mm, l.mmID = mk.MatMul, mk.ID
		if !opts.StaticSplit {
			l.prep = mk.Prepared
		}
		if _, ok := c.quant[l.at]; !ok {
			var q ledger.Quantize
			if q, err = promoted.Quantize(l.at); err != nil {
				err = fmt.Errorf("%s: %w", w.Name, err)
				return l
			}
			c.quant[l.at] = q
		}
		for _, k := range []int{w.Cols} {
			if _, e := quant.RowSize(l.at, int64(k)); e != nil {
				err = fmt.Errorf("%s: activations of %d values in %s: %w", w.Name, k, l.at, e)
			}
		}
		return l
	}
	c.layers = make([]layerOps, cfg.Layers)
	for i := range m.Layers {
		L := &m.Layers[i]
		c.layers[i] = layerOps{q: bind(&L.Q), k: bind(&L.K), v: bind(&L.V), out: bind(&L.Out),
			gate: bind(&L.Gate), up: bind(&L.Up), down: bind(&L.Down)}
	}
	c.output = bind(&m.Output)
	if err != nil {
		return nil, err
	}

	nb, nctx, kvd := opts.NBatch, opts.NCtx, cfg.KVDim()
	if opts.KVType != quant.F32 {
		c.k16, c.v16 = make([][]uint16, cfg.Layers), make([][]uint16, cfg.Layers)
		for l := range cfg.Layers {
			c.k16[l], c.v16[l] = make([]uint16, nctx*kvd), make([]uint16, nctx*kvd)
		}
		c.wide = make([][]float32, opts.Threads)
		for w := range opts.Threads {
			c.wide[w] = make([]float32, 2*nctx*cfg.HeadDim)
		}
	} else {
		c.k32, c.v32 = make([][]float32, cfg.Layers), make([][]float32, cfg.Layers)
		for l := range cfg.Layers {
			c.k32[l], c.v32[l] = make([]float32, nctx*kvd), make([]float32, nctx*kvd)
		}
	}
	c.x, c.xn = make([]float32, nb*cfg.Dim), make([]float32, nb*cfg.Dim)
	c.q, c.att = make([]float32, nb*cfg.QDim()), make([]float32, nb*cfg.QDim())
	c.kb, c.vb = make([]float32, nb*kvd), make([]float32, nb*kvd)
	c.tmp = make([]float32, nb*cfg.Dim)
	c.gate, c.up = make([]float32, nb*cfg.FFNDim), make([]float32, nb*cfg.FFNDim)
	c.xq = make([]byte, nb*max(cfg.Dim, cfg.QDim(), cfg.FFNDim)*4)
	c.cos, c.sin = make([]float32, nb*cfg.HeadDim/2), make([]float32, nb*cfg.HeadDim/2)
	c.logits = make([]float32, cfg.Vocab)
	c.pool = pool.New(opts.Threads)
	c.deal = pool.NewDealer(c.pool.Size())
	c.linFn = c.linWork
	c.prepFn = c.prepWork
	c.attnFn = c.attnWork
	c.rowsFn = c.rowWork
	c.rowErrs = make([]error, c.pool.Size())
	return c, nil
}

// checkMemory refuses a context whose cache and buffers (as NewContext
// allocates them, counted in float64 so nothing overflows) exceed the
// machine's memory: a context length taken from damaged metadata would
// otherwise end the process in "fatal error: out of memory".
func checkMemory(cfg Config, opts Options) error {
	total := physicalMemory()
	if total == 0 {
		return nil // unknown here
	}
	f := func(x int) float64 { return float64(x) }
	kv := 2 * f(cfg.Layers) * f(opts.NCtx) * f(cfg.KVDim()) // keys and values
	need := 4 * kv
	if opts.KVType != quant.F32 {
		need = 2*kv + f(opts.Threads)*2*f(opts.NCtx)*f(cfg.HeadDim)*4 // and each worker's widened rows
	}
	need += f(opts.NBatch) * 4 * (3*f(cfg.Dim) + 2*f(cfg.QDim()) + 2*f(cfg.KVDim()) + 2*f(cfg.FFNDim) + f(max(cfg.Dim, cfg.QDim(), cfg.FFNDim)))
	need += 4 * f(cfg.Vocab)
	if need > float64(total) {
		return fmt.Errorf("a context of %d positions needs %.1f GiB for its KV cache and buffers, more than this machine's %.1f GiB: use a shorter context (--ctx-size)",
			opts.NCtx, need/(1<<30), float64(total)/(1<<30))
	}
	return nil
}

// Close stops the worker pool.
func (c *Context) Close() { c.pool.Close() }

// Pos is the number of positions in the KV cache.
func (c *Context) Pos() int { return c.pos }

// NCtx is the KV cache length.
func (c *Context) NCtx() int { return c.opts.NCtx }

// Options returns the options in effect, defaults filled in.
func (c *Context) Options() Options { return c.opts }

// Truncate drops the cached positions from n on, so evaluation continues at n.
func (c *Context) Truncate(n int) error {
	if n < 0 || n > c.pos {
		return fmt.Errorf("truncate to %d: cache holds %d positions", n, c.pos)
	}
	c.pos = n
	return nil
}

// Eval appends tokens to the sequence and returns logits: for the last token
// only (Vocab values), or with all set for every token (len(tokens)×Vocab,
// row-major). The slice is reused by the next call. Tokens run through the
// model in batches of at most NBatch.
func (c *Context) Eval(tokens []int32, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("no tokens to evaluate")
	}
	if c.pos+len(tokens) > c.opts.NCtx {
		return nil, fmt.Errorf("%d tokens at position %d exceed the context length %d", len(tokens), c.pos, c.opts.NCtx)
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= c.cfg.Vocab {
			return nil, fmt.Errorf("token %d is outside the vocabulary of %d", t, c.cfg.Vocab)
		}
	}
	V := c.cfg.Vocab
	if all && len(c.logits) < len(tokens)*V {
		c.logits = make([]float32, len(tokens)*V)
	}
	start := c.pos
	for i := 0; i < len(tokens); i += c.opts.NBatch {
		batch := tokens[i:min(i+c.opts.NBatch, len(tokens))]
		last := i+len(batch) == len(tokens)
		var dst []float32
		switch {
		case all:
			dst = c.logits[i*V : (i+len(batch))*V]
		case last:
			dst = c.logits[:V]
		}
		if err := c.forward(batch, dst, all); err != nil {
			return nil, err
		}
	}
	logits, pos0 := c.logits[:V], start+len(tokens)-1
	if all {
		logits, pos0 = c.logits[:len(tokens)*V], start
	}
	if err := checkFinite(logits, V, pos0); err != nil {
		c.pos = start // the cache's new positions hold the same damage
		return nil, err
	}
	return logits, nil
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

// forward runs one batch. dst receives logits for every row (all) or for the
// last row, or nothing when nil. Besides the products and attention, the
// per-token work (embedding, rope and cache writes, residual adds, norms,
// SwiGLU, quantizing activations) runs on the pool as row tasks, fused so
// that each stretch between two products is one dispatch.
func (c *Context) forward(tokens []int32, dst []float32, all bool) error {
	cfg := c.cfg
	n, dim := len(tokens), cfg.Dim
	out, first := dst != nil, 0 // rows from first on get logits
	if !all {
		first = n - 1
	}
	c.rt = rowTask{op: rowEmbed, n: n, tokens: tokens}
	c.normBefore(0, first, out)
	c.runRows()
	if err := c.rowErr(); err != nil {
		return err
	}
	for l := range cfg.Layers {
		L, ops := &c.m.Layers[l], &c.layers[l]
		c.linearRun3(&ops.q, c.q, &ops.k, c.kb, &ops.v, c.vb, c.xn, n)
		if n > 1 {
			// Decode rotates and stores each KV head in its attention
			// task instead (see attnWork); a batch's tokens attend to
			// each other's keys, so all are stored first.
			c.rt = rowTask{op: rowRopeStore, n: n, layer: l}
			c.runRows()
		}
		c.runAttn(l, n)
		c.linearRun(&ops.out, c.tmp, c.att, n)

		c.rt = rowTask{op: rowAdd, n: n, norm: L.FFNNorm}
		c.quantizeFor(&ops.gate, c.xn)
		c.runRows()
		c.linearRun3(&ops.gate, c.gate, &ops.up, c.up, nil, nil, c.xn, n)
		c.rt = rowTask{op: rowSiLU, n: n}
		c.quantizeFor(&ops.down, c.gate)
		c.runRows()
		c.linearRun(&ops.down, c.tmp, c.gate, n)
		c.rt = rowTask{op: rowAdd, n: n}
		c.normBefore(l+1, first, out)
		c.runRows()
		if c.opts.Capture != nil {
			for j := range n {
				c.opts.Capture(l, c.pos+j, c.x[j*dim:(j+1)*dim])
			}
		}
	}
	c.pos += n
	if out {
		c.linearRun(&c.output, dst, c.xn[first*dim:], n-first)
	}
	return nil
}

func add(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}

// linearRun computes dst (n rows of l.w.Rows) = W·x for n activation rows of
// l.w.Cols, quantizing x first unless xq already holds it in that type.
func (c *Context) linearRun(l *linear, dst, x []float32, n int) {
	c.lins[0], c.nlin = linTask{l: l, dst: dst, xq: c.quantized(l, x, n), n: n}, 1
	c.runLins()
}

// linearRun3 runs two or three matrices that share the input x (cl may be
// nil) in one dispatch when their kernels take the same activation type, so
// decode pays one barrier for Q, K and V (and one for gate and up).
func (c *Context) linearRun3(a *linear, da []float32, b *linear, db []float32, cl *linear, dc []float32, x []float32, n int) {
	if b.at != a.at || b.w.Cols != a.w.Cols || (cl != nil && (cl.at != a.at || cl.w.Cols != a.w.Cols)) {
		c.linearRun(a, da, x, n)
		c.linearRun(b, db, x, n)
		if cl != nil {
			c.linearRun(cl, dc, x, n)
		}
		return
	}
	xq := c.quantized(a, x, n)
	c.lins[0] = linTask{l: a, dst: da, xq: xq, n: n}
	c.lins[1] = linTask{l: b, dst: db, xq: xq, n: n}
	c.nlin = 2
	if cl != nil {
		c.lins[2], c.nlin = linTask{l: cl, dst: dc, xq: xq, n: n}, 3
	}
	c.runLins()
}

// runLins runs c.lins[:nlin] on the pool. A single token's matvecs are
// dealt in chunks of rows (whole 64-byte lines of dst, about dealBytes of
// weights each) over all the task's matrices in order. A batch whose
// kernels have a prepared form lays its activations out once (each worker a
// share of the tokens) and deals batchChunkRows rows at a time the same
// way; other batches split each matrix's rows statically, the matmul
// kernels laying out the activations and tiling their own share.
func (c *Context) runLins() {
	n := c.lins[0].n
	c.dealt = c.pool.Size() > 1 && (n == 1 || c.planPrepared())
	if !c.dealt {
		c.pool.Run(c.linFn)
		return
	}
	if n > 1 {
		c.pool.Run(c.prepFn)
	}
	total := 0
	for i := range c.nlin {
		t := &c.lins[i]
		if n == 1 {
			t.chunk = max(16, dealBytes/t.l.w.RowSize&^15)
		} else {
			t.chunk = batchChunkRows
		}
		total += (t.l.w.Rows + t.chunk - 1) / t.chunk
		c.chunkEnd[i] = total
	}
	c.deal.Reset(total, c.pool.Size())
	c.pool.Run(c.linFn)
}

// planPrepared reports whether every matrix of the batch task has a
// prepared form, and if so gives each task its layout buffer, shared by
// the tasks of one kernel and input.
func (c *Context) planPrepared() bool {
	for i := range c.nlin {
		if c.lins[i].l.prep == nil {
			return false
		}
	}
	for i := range c.nlin {
		t := &c.lins[i]
		t.owner = true
		for j := range i {
			if c.lins[j].l.mmID == t.l.mmID && &c.lins[j].xq[0] == &t.xq[0] {
				t.prep, t.owner = c.lins[j].prep, false
				break
			}
		}
		if t.owner {
			size := t.l.prep.Size(t.n, t.l.w.Cols)
			if cap(c.prepBufs[i]) < size {
				c.prepBufs[i] = make([]byte, size)
			}
			t.prep = c.prepBufs[i][:size]
		}
	}
	return true
}

// prepWork lays out worker w's share of the batch's tokens for each layout
// the task needs.
func (c *Context) prepWork(w, nw int) {
	for i := range c.nlin {
		t := &c.lins[i]
		if t.owner {
			if lo, hi := pool.Split(t.n, w, nw, t.l.prep.Align); lo < hi {
				t.l.prep.Prepare(t.prep, t.xq, lo, hi, t.n, t.l.w.Cols)
			}
		}
	}
}

// quantized returns x's n rows quantized to l's activation type, reusing
// the last quantization (usually made by the row task that wrote x) while
// its source is unchanged, else quantizing them as a row task.
func (c *Context) quantized(l *linear, x []float32, n int) []byte {
	k := l.w.Cols
	rs, _ := quant.RowSize(l.at, int64(k)) // checked in NewContext
	xq := c.xq[:int(rs)*n]
	if c.xqSrc != &x[0] || c.xqType != l.at || c.xqRows != n {
		c.rt = rowTask{op: rowNone, n: n}
		c.quantizeFor(l, x)
		c.runRows()
	}
	return xq
}

// invalidate forgets the quantized input: its source buffer is being rewritten.
func (c *Context) invalidate() { c.xqSrc = nil }

func (c *Context) linWork(w, nw int) {
	if !c.dealt {
		for i := range c.nlin {
			c.linPart(&c.lins[i], w, nw)
		}
		return
	}
	for {
		ch, ok := c.deal.Next(w)
		if !ok {
			return
		}
		i, first := 0, 0
		for ch >= c.chunkEnd[i] {
			first = c.chunkEnd[i]
			i++
		}
		t := &c.lins[i]
		lo := (ch - first) * t.chunk
		hi := min(lo+t.chunk, t.l.w.Rows)
		rs := t.l.w.RowSize
		if t.n == 1 {
			t.l.mv(t.dst[lo:hi], t.l.w.Data[lo*rs:hi*rs], t.xq, t.l.w.Cols)
		} else {
			t.l.prep.Run(t.dst[lo:], t.l.w.Rows, t.l.w.Data[lo*rs:hi*rs], hi-lo, t.prep, t.n, t.l.w.Cols)
		}
	}
}

// linPart computes worker w's share of the rows of one matrix.
func (c *Context) linPart(t *linTask, w, nw int) {
	lo, hi := pool.Split(t.l.w.Rows, w, nw, 8)
	if lo >= hi {
		return
	}
	rs := t.l.w.RowSize
	wd := t.l.w.Data[lo*rs : hi*rs]
	if t.n == 1 {
		t.l.mv(t.dst[lo:hi], wd, t.xq, t.l.w.Cols)
		return
	}
	t.l.mm(t.dst[lo:], t.l.w.Rows, wd, hi-lo, t.xq, t.n, t.l.w.Cols)
}

// store writes one position's keys and values into the cache.
func (c *Context) store(l, pos int, k, v []float32) {
	hd := c.cfg.HeadDim
	for h := range c.cfg.KVHeads {
		c.storeHead(l, pos, h, k[h*hd:(h+1)*hd], v[h*hd:(h+1)*hd])
	}
}

// storeHead writes KV head h's key and value at one position into the cache.
func (c *Context) storeHead(l, pos, h int, k, v []float32) {
	hd := c.cfg.HeadDim
	off := (h*c.opts.NCtx + pos) * hd
	if c.k32 != nil {
		copy(c.k32[l][off:off+hd], k)
		copy(c.v32[l][off:off+hd], v)
		return
	}
	narrow := quant.Float32ToFP16
	if c.opts.KVType == quant.BF16 {
		narrow = quant.Float32ToBF16
	}
	for i := range hd {
		c.k16[l][off+i] = narrow(k[i])
		c.v16[l][off+i] = narrow(v[i])
	}
}

// bytesOf is the memory of u, little-endian on every platform built for.
func bytesOf(u []uint16) []byte {
	if len(u) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&u[0])), 2*len(u))
}

// cachePrecision is the attention precision class of each 16-bit cache type.
var cachePrecision = map[quant.Type]ledger.Precision{quant.BF16: ledger.PrecisionBF16, quant.F16: ledger.PrecisionF16}

// widen returns KV head h's first n cached keys and values of layer l as
// float32 (exact), in worker w's buffer.
func (c *Context) widen(w, l, h, n int) (k, v []float32) {
	hd := c.cfg.HeadDim
	base := h * c.opts.NCtx * hd
	k, v = c.wide[w][:n*hd], c.wide[w][n*hd:2*n*hd]
	c.widenH(k, bytesOf(c.k16[l][base:base+n*hd]))
	c.widenH(v, bytesOf(c.v16[l][base:base+n*hd]))
	return k, v
}

// ropeStoreHead is rowRopeStore for decode's one token, restricted to KV
// head h: its group's query heads and its key rotated, its key and value
// stored at the token's position. The rope kernels work head by head, so
// the results are those of the whole-row task.
func (c *Context) ropeStoreHead(l, h int) {
	cfg := c.cfg
	hd, half, group := cfg.HeadDim, cfg.HeadDim/2, cfg.Heads/cfg.KVHeads
	cs, sn := c.cos[:half], c.sin[:half]
	k := c.kb[h*hd : (h+1)*hd]
	c.rope(c.q[h*group*hd:(h+1)*group*hd], group, hd, cs, sn, ropeNeoX)
	c.rope(k, 1, hd, cs, sn, ropeNeoX)
	c.storeHead(l, c.pos, h, k, c.vb[h*hd:(h+1)*hd])
}

// runAttn runs layer l's attention for the batch's n tokens on the pool:
// decode's tasks are the KV heads, a batch's are (KV head, chunk of
// tokens), all dealt by c.deal.
func (c *Context) runAttn(l, n int) {
	c.at = attnTask{layer: l, pos0: c.pos, n: n}
	c.invalidate()
	tasks := c.cfg.KVHeads
	if n > 1 {
		perWorker := attnTasksPerWorker
		if c.k32 == nil {
			perWorker = 2 // each task widens its head's whole history
		}
		c.at.chunk = attnChunkTokens(n, c.cfg.KVHeads, c.pool.Size(), perWorker)
		tasks *= (n + c.at.chunk - 1) / c.at.chunk
	}
	c.deal.Reset(tasks, c.pool.Size())
	c.pool.Run(c.attnFn)
}

// attnTasksPerWorker is about how many prefill attention tasks each worker
// gets over a float32 cache, where a task costs nothing beyond its blocks:
// enough that dealing them evens out a worker slowed down for a while.
const attnTasksPerWorker = 8

// attnChunkTokens is the query tokens of one batched-attention task: equal
// slices of a multiple of 16 tokens (16 rows fill the avx512 kernel's
// blocks for groups of 3 and 4 heads per KV head), so that each of the
// workers gets about perWorker tasks, or a KV head's whole batch when that
// already does.
func attnChunkTokens(n, kvHeads, workers, perWorker int) int {
	slices := (perWorker*workers + kvHeads - 1) / kvHeads
	c := (n + slices - 1) / slices
	return (c + 15) / 16 * 16
}

// attnWork runs the attention of the batch's tokens assigned to worker w:
// each query head of a KV group attends causally over the cache. A 16-bit
// cache's rows are widened to float32 (exactly) for the kernel of its
// precision class, which rounds as llama.cpp's graph does for that type.
func (c *Context) attnWork(w, nw int) {
	t := &c.at
	cfg := c.cfg
	hd, nctx, group := cfg.HeadDim, c.opts.NCtx, cfg.Heads/cfg.KVHeads
	qd := cfg.QDim()
	scale := float32(1 / math.Sqrt(float64(hd)))
	if t.n > 1 {
		// Prefill: (KV head, chunk of tokens) tasks through the batched
		// kernel, dealt latest chunk first: later chunks see more
		// positions, so the cheap tasks are left to even out the end.
		chunk := t.chunk
		chunks := (t.n + chunk - 1) / chunk
		for {
			task, ok := c.deal.Next(w)
			if !ok {
				return
			}
			ci, h := chunks-1-task/cfg.KVHeads, task%cfg.KVHeads
			j0 := ci * chunk
			nt := min(chunk, t.n-j0)
			base, end := h*nctx*hd, t.pos0+j0+nt
			qo := j0*qd + h*group*hd
			if c.k32 == nil {
				k, v := c.widen(w, t.layer, h, end)
				c.attnH(c.att[qo:], c.q[qo:], qd, k, v, nt, group, 1, hd, t.pos0+j0, scale)
				continue
			}
			c.attnB(c.att[qo:], c.q[qo:], qd, c.k32[t.layer][base:base+end*hd], c.v32[t.layer][base:base+end*hd],
				nt, group, 1, hd, t.pos0+j0, scale)
		}
	}
	// Decode: one task per KV head, dealt by c.deal: the head's rope and
	// store, then its group's attention.
	for {
		h, ok := c.deal.Next(w)
		if !ok {
			return
		}
		c.ropeStoreHead(t.layer, h)
		ctx := t.pos0 + 1
		qo := h * group * hd
		if c.k16 != nil {
			base := h * nctx * hd
			k, v := c.k16[t.layer][base:base+ctx*hd], c.v16[t.layer][base:base+ctx*hd]
			c.attn16(c.att[qo:qo+group*hd], c.q[qo:qo+group*hd], k, v, group, 1, hd, ctx, scale)
			continue
		}
		base := h * nctx * hd
		k, v := c.k32[t.layer][base:base+ctx*hd], c.v32[t.layer][base:base+ctx*hd]
		c.attn(c.att[qo:qo+group*hd], c.q[qo:qo+group*hd], k, v, group, 1, hd, ctx, scale)
	}
}
