package llama

import "github.com/damascus-llm/damascus/quant"

// actQuant is the last activations quantized for a product: rows rows at
// src quantized to typ in xq. Matrices sharing an input (Q, K, V; gate, up)
// reuse it, and a row task that writes a product's input quantizes it there
// on every worker, instead of the product quantizing it on one core.
type actQuant struct {
	xq   []byte
	typ  quant.Type
	rows int
	src  *float32 // nil: nothing valid
}

// quantized returns x's n rows quantized to l's activation type, reusing
// the last quantization (usually made by the row task that wrote x) while
// its source is unchanged, else quantizing them as a row task.
func (c *cpuBackend) quantized(l *linear, x []float32, n int) []byte {
	a := &c.act
	rs, _ := quant.RowSize(l.at, int64(l.w.Cols)) // checked in resolveKernels
	xq := a.xq[:int(rs)*n]
	if a.src != &x[0] || a.typ != l.at || a.rows != n {
		c.row.task = rowTask{op: rowNone, n: n, next: l, nextIn: x}
		c.runRows()
	}
	return xq
}

// invalidate forgets the quantized input: its source buffer is being rewritten.
func (c *cpuBackend) invalidate() { c.act.src = nil }
