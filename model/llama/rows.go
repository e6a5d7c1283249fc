package llama

import (
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/quant"
)

// minPoolRows is the smallest batch whose row work goes to the pool. Smaller
// batches (decode above all) run it on the caller: a barrier is not worth a
// few rows, and decode keeps exactly the dispatches it had.
const minPoolRows = 4

// rowOp is the first step of a rowTask on each row.
type rowOp uint8

const (
	rowNone      rowOp = iota // nothing: the row is only normalized or quantized
	rowEmbed                  // x = the token's embedding; rope angles of its position
	rowAdd                    // x += tmp, the residual
	rowRopeStore              // rotate q and k, write k and v into the cache
	rowSiLU                   // gate = silu(gate)·up
)

// rowTask is the work between two matrix products that is independent per
// token: each worker takes a run of rows and does every step on them, so one
// dispatch covers, say, the residual add, the next rmsnorm and the
// quantization of its output for the next matrix.
type rowTask struct {
	op     rowOp
	n      int     // rows in the batch
	tokens []int32 // rowEmbed
	layer  int     // rowRopeStore: the cache written

	// from is the first row normalized and quantized: the output norm needs
	// only the last row unless every row's logits are wanted.
	from int
	norm []float32 // then xn = rmsnorm(x) with this weight; nil: no norm

	// Then rows of qsrc (qk values each) quantized into xq (qrs bytes each,
	// row j at j-from); qz nil: none.
	qz   ledger.Quantize
	qat  quant.Type
	qsrc []float32
	qk   int
	qrs  int
}

// quantizeFor makes the row task end by quantizing its rows of src for l, so
// that l's product finds them in xq instead of quantizing on one core.
func (c *Context) quantizeFor(l *linear, src []float32) {
	t := &c.rt
	rs, _ := quant.RowSize(l.at, int64(l.w.Cols)) // checked in NewContext
	t.qz, t.qat, t.qsrc, t.qk, t.qrs = c.quant[l.at], l.at, src, l.w.Cols, int(rs)
}

// normBefore makes the row task end with the norm that comes before layer l
// (its attention norm, or with l == Layers and out set, the output norm over
// rows from first on), its output quantized for the matrix that reads it.
func (c *Context) normBefore(l, first int, out bool) {
	t := &c.rt
	switch {
	case l < c.cfg.Layers:
		t.norm = c.m.Layers[l].AttnNorm
		c.quantizeFor(&c.layers[l].q, c.xn)
	case out:
		t.norm, t.from = c.m.Norm, first
		c.quantizeFor(&c.output, c.xn)
	}
}

// runRows runs the row task c.rt: on the pool, or inline for small batches.
// It rewrites activation rows, so the quantized input is forgotten, unless
// the task itself quantized its rows. Errors (only rowEmbed has any) wait in rowErrs.
func (c *Context) runRows() {
	c.invalidate()
	t := &c.rt
	if t.n < minPoolRows {
		c.rowWork(0, 1)
	} else {
		c.deal.Reset((t.n+rowChunk-1)/rowChunk, c.pool.Size())
		c.pool.Run(c.rowsFn)
	}
	if t.qz != nil {
		c.xqSrc, c.xqType, c.xqRows = &t.qsrc[t.from*t.qk], t.qat, t.n-t.from
	}
}

// rowErr returns and clears the first worker error of the last row task.
func (c *Context) rowErr() error {
	for w, err := range c.rowErrs {
		if err != nil {
			clear(c.rowErrs[w:])
			return err
		}
	}
	return nil
}

// rowChunk is the rows of a row task dealt at a time on the pool.
const rowChunk = 16

// rowWork does worker w's rows of c.rt: all of them alone, else chunks of
// rowChunk dealt by c.deal. Every row goes through the same kernels as in a
// serial loop: results do not depend on the number of workers.
func (c *Context) rowWork(w, nw int) {
	if nw == 1 {
		c.rowRange(w, 0, c.rt.n)
		return
	}
	for {
		ch, ok := c.deal.Next(w)
		if !ok || c.rowErrs[w] != nil {
			return
		}
		lo := ch * rowChunk
		c.rowRange(w, lo, min(lo+rowChunk, c.rt.n))
	}
}

// rowRange does rows [lo, hi) of c.rt as worker w.
func (c *Context) rowRange(w, lo, hi int) {
	t := &c.rt
	cfg := c.cfg
	d, half, f := cfg.Dim, cfg.HeadDim/2, cfg.FFNDim
	qd, kvd, hd := cfg.QDim(), cfg.KVDim(), cfg.HeadDim
	for j := lo; j < hi; j++ {
		x := c.x[j*d : (j+1)*d]
		switch t.op {
		case rowEmbed:
			if err := c.m.Embed.DequantizeRow(x, int(t.tokens[j])); err != nil {
				c.rowErrs[w] = err
				return
			}
			c.m.ropeAngles(c.cos[j*half:(j+1)*half], c.sin[j*half:(j+1)*half], c.pos+j)
		case rowAdd:
			add(x, c.tmp[j*d:(j+1)*d])
		case rowRopeStore:
			cs, sn := c.cos[j*half:(j+1)*half], c.sin[j*half:(j+1)*half]
			k := c.kb[j*kvd : (j+1)*kvd]
			c.rope(c.q[j*qd:(j+1)*qd], cfg.Heads, hd, cs, sn, ropeNeoX)
			c.rope(k, cfg.KVHeads, hd, cs, sn, ropeNeoX)
			c.store(t.layer, c.pos+j, k, c.vb[j*kvd:(j+1)*kvd])
		case rowSiLU:
			g := c.gate[j*f : (j+1)*f]
			c.silu(g, g, c.up[j*f:(j+1)*f])
		}
		if j < t.from {
			continue
		}
		if t.norm != nil {
			c.rms(c.xn[j*d:(j+1)*d], x, t.norm, cfg.RMSEps)
		}
		if t.qz != nil {
			i := j - t.from
			t.qz(c.xq[i*t.qrs:(i+1)*t.qrs], t.qsrc[j*t.qk:(j+1)*t.qk])
		}
	}
}
