package llama

import "github.com/damascus-llm/damascus/internal/pool"

// cpuBackend runs the graph on a persistent worker pool through the promoted
// kernels: products and attention dealt in chunks (cpu_linear.go,
// cpu_attention.go), row tasks fused between them (cpu_rows.go), each
// product's input quantized once and reused (cpu_actquant.go). Every
// dispatch runs a method value made in newCPUBackend, so evaluation
// allocates nothing.
type cpuBackend struct {
	m   *Model
	k   *kernels
	s   *runState
	kv  *kvCache   // the cache of a single-sequence step
	kvs []*kvCache // each sequence's, indexed by runState.seq
	// perRow runs every row through the same kernels whatever the batch
	// (a Batch's steps): products through the batched decode kernel
	// (matvec_batch: every row's results independent of the others, each
	// chunk of weight rows read once for all the step's tokens), never the
	// matmul (which rounds otherwise); attention one query row at a time
	// through the decode kernel over its own sequence. A row's results
	// then do not depend on the other rows of its step.
	perRow bool

	pool *pool.Pool
	// deal hands out the rows of decode's matvecs and of prepared batch
	// matmuls, attention's tasks and row chunks, so that a worker that
	// falls behind is helped instead of waited for.
	deal *pool.Dealer
	// wide is per worker the keys then values of one KV head, widened
	// (16-bit cache).
	wide [][]float32

	act  actQuant    // the last quantized activations
	lin  linSchedule // the current products
	attn attnTask    // the current attention
	row  rowSchedule // the current row task
}

var _ backend = (*cpuBackend)(nil)

func newCPUBackend(m *Model, k *kernels, s *runState, kvs []*kvCache, opts Options, perRow bool) *cpuBackend {
	cfg := m.Config
	c := &cpuBackend{m: m, k: k, s: s, kv: kvs[0], kvs: kvs, perRow: perRow}
	if c.kv.half() && !perRow { // perRow attention reads the 16-bit cache as stored
		c.wide = make([][]float32, opts.Threads)
		for w := range opts.Threads {
			c.wide[w] = make([]float32, 2*opts.NCtx*cfg.HeadDim)
		}
	}
	c.act.xq = make([]byte, opts.NBatch*max(cfg.Dim, cfg.QDim(), cfg.FFNDim)*4)
	c.pool = pool.New(opts.Threads)
	c.deal = pool.NewDealer(c.pool.Size())
	c.lin.work, c.lin.prepWork = c.linWork, c.prepWork
	c.attn.work = c.attnWork
	c.row.work = c.rowWork
	c.row.errs = make([]error, c.pool.Size())
	return c
}

func (c *cpuBackend) close() { c.pool.Close() }
