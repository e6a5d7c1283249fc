package llama

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// minPoolRows is the smallest batch whose row work goes to the pool. Smaller
// batches (decode above all) run it on the caller: a barrier is not worth a
// few rows, and decode keeps exactly the dispatches it had.
const minPoolRows = 4

// rowChunk is the rows of a row task dealt at a time on the pool.
const rowChunk = 16

// rowSchedule is the row task being run: each worker takes a run of rows and
// does every step on them, ending with the quantization of the rows the next
// product reads.
type rowSchedule struct {
	task rowTask
	// qz quantizes the rows the next product reads (nil: none), qk values
	// into qrs bytes each.
	qz      ledger.Quantize
	qk, qrs int
	work    func(w, n int) // rowWork, made once
	errs    []error        // each worker's error (only rowEmbed has any)
}

// rows runs t on the pool, or inline for small batches.
func (c *cpuBackend) rows(t rowTask) error {
	c.row.task = t
	c.runRows()
	return c.rowErr()
}

// runRows runs c.row.task. It rewrites activation rows, so the quantized
// input is forgotten, unless the task itself quantized its rows for the
// next product.
func (c *cpuBackend) runRows() {
	c.invalidate()
	r := &c.row
	t := &r.task
	r.qz = nil
	if t.next != nil {
		rs, _ := quant.RowSize(t.next.at, int64(t.next.w.Cols)) // checked in resolveKernels
		r.qz, r.qk, r.qrs = c.k.quant[t.next.at], t.next.w.Cols, int(rs)
	}
	if t.n < minPoolRows {
		c.rowWork(0, 1)
	} else {
		c.deal.Reset((t.n+rowChunk-1)/rowChunk, c.pool.Size())
		c.pool.Run(r.work)
	}
	if t.next != nil {
		c.act.src, c.act.typ, c.act.rows = &t.nextIn[t.from*r.qk], t.next.at, t.n-t.from
	}
}

// rowErr returns and clears the first worker error of the last row task.
func (c *cpuBackend) rowErr() error {
	for w, err := range c.row.errs {
		if err != nil {
			clear(c.row.errs[w:])
			return err
		}
	}
	return nil
}

// rowWork does worker w's rows of the row task: all of them alone, else
// chunks of rowChunk dealt by c.deal. Every row goes through the same
// kernels as in a serial loop: results do not depend on the number of
// workers.
func (c *cpuBackend) rowWork(w, nw int) {
	n := c.row.task.n
	if nw == 1 {
		c.rowRange(w, 0, n)
		return
	}
	for {
		ch, ok := c.deal.Next(w)
		if !ok || c.row.errs[w] != nil {
			return
		}
		lo := ch * rowChunk
		c.rowRange(w, lo, min(lo+rowChunk, n))
	}
}

// rowRange does rows [lo, hi) of the row task as worker w.
func (c *cpuBackend) rowRange(w, lo, hi int) {
	r, s, k := &c.row, c.s, c.k
	t := &r.task
	cfg := c.m.Config
	d, half, f := cfg.Dim, cfg.HeadDim/2, cfg.FFNDim
	qd, kvd, hd := cfg.QDim(), cfg.KVDim(), cfg.HeadDim
	from, xq := t.from, c.act.xq
	for j := lo; j < hi; j++ {
		x := s.x[j*d : (j+1)*d]
		switch t.op {
		case rowEmbed:
			if err := c.m.Embed.DequantizeRow(x, int(t.tokens[j])); err != nil {
				c.row.errs[w] = err
				return
			}
			c.m.ropeAngles(s.cos[j*half:(j+1)*half], s.sin[j*half:(j+1)*half], int(s.pos[j]))
		case rowAdd:
			add(x, s.tmp[j*d:(j+1)*d])
		case rowRopeStore:
			cs, sn := s.cos[j*half:(j+1)*half], s.sin[j*half:(j+1)*half]
			kr := s.kb[j*kvd : (j+1)*kvd]
			k.rope(s.q[j*qd:(j+1)*qd], cfg.Heads, hd, cs, sn, ropeNeoX)
			k.rope(kr, cfg.KVHeads, hd, cs, sn, ropeNeoX)
			c.kvs[s.seq[j]].store(t.layer, int(s.pos[j]), kr, s.vb[j*kvd:(j+1)*kvd])
		case rowSiLU:
			g := s.gate[j*f : (j+1)*f]
			k.silu(g, g, s.up[j*f:(j+1)*f])
		}
		if j < from {
			continue
		}
		if t.norm != nil {
			k.rms(s.xn[j*d:(j+1)*d], x, t.norm, cfg.RMSEps)
		}
		if r.qz != nil {
			i := j - from
			r.qz(xq[i*r.qrs:(i+1)*r.qrs], t.nextIn[j*r.qk:(j+1)*r.qk])
		}
	}
}

func add(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}
