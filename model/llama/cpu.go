package llama

import "github.com/damascus-llm/damascus/internal/pool"

// cpuBackend runs the graph on a persistent worker pool through the promoted
// kernels: products and attention dealt in chunks (cpu_linear.go,
// cpu_attention.go), row tasks fused between them (cpu_rows.go), each
// product's input quantized once and reused (cpu_actquant.go). Every
// dispatch runs a method value made in newCPUBackend, so evaluation
// allocates nothing.
type cpuBackend struct {
	m  *Model
	k  *kernels
	s  *runState
	kv *kvCache

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

func newCPUBackend(m *Model, k *kernels, s *runState, kv *kvCache, opts Options) *cpuBackend {
	cfg := m.Config
	c := &cpuBackend{m: m, k: k, s: s, kv: kv}
	if kv.half() {
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
