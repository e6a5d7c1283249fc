package llama

// forward runs one batch of tokens through the model, as llama2.c's
// forward() does one token: embed, then per layer the attention block and
// the feed-forward block, each adding into the residual stream x, then the
// final norm and the logits. Row j is at position s.pos[j] of sequence
// s.seq[j] (which the caller sets and advances). dst receives the logits of
// the last logitRows rows, or nothing when nil.
//
// Each step is a call on the backend; the per-token work between two
// products is fused into the step before the product (a residual add with
// the next norm, the SwiGLU with the quantization for down), so that each
// stretch between two products is one dispatch.
func (c *Context) forward(tokens []int32, dst []float32, logitRows int) error {
	m, k, s, b := c.m, c.k, c.s, c.b
	n := len(tokens)
	first := n - logitRows // rows from first on get logits
	if err := embed(b, s, tokens, m.Layers[0].AttnNorm, &k.layers[0].q); err != nil {
		return err
	}
	for l := range m.Layers {
		L, ops := &m.Layers[l], &k.layers[l]
		// Attention: x += Wo · attention(rope(Wq·xn), rope(Wk·xn), Wv·xn).
		qkv(b, s, ops, n)
		ropeAndStore(b, l, n)
		b.attention(l, n)                              // att
		b.linear(s.tmp, &ops.out, s.att, n)            // tmp = Wo·att
		residualNorm(b, s, n, 0, L.FFNNorm, &ops.gate) // x += tmp; xn = ffn_norm(x)
		// Feed-forward: x += Wdown · (silu(Wgate·xn) · Wup·xn).
		gateUp(b, s, ops, n)
		siluMul(b, s, n, &ops.down)
		b.linear(s.tmp, &ops.down, s.gate, n) // tmp = Wdown·gate
		// x += tmp; xn = the next layer's attention norm, or the final norm.
		norm, next, from := nextNorm(m, k, l+1, dst != nil, s.wantHidden, first)
		residualNorm(b, s, n, from, norm, next)
		c.capture(l, n)
	}
	if dst != nil {
		b.linear(dst, &k.output, s.xn[first*m.Config.Dim:], n-first) // logits = Wout·xn
	}
	return nil
}

// embed sets x to the tokens' embeddings and xn to x normalized with norm
// (the first layer's attention norm), the input of next.
func embed(b backend, s *runState, tokens []int32, norm []float32, next *linear) error {
	return b.rows(rowTask{op: rowEmbed, n: len(tokens), tokens: tokens, norm: norm, next: next, nextIn: s.xn})
}

// qkv projects xn to the queries, keys and values.
func qkv(b backend, s *runState, ops *layerOps, n int) {
	b.linearShared(s.xn, n, &ops.q, s.q, &ops.k, s.kb, &ops.v, s.vb)
}

// ropeAndStore rotates a batch's queries and keys and stores its keys and
// values in the cache of layer l before any of its tokens attends. A single
// token's attention does both per KV head instead (see cpuBackend.attnWork).
func ropeAndStore(b backend, l, n int) {
	if n > 1 {
		b.rows(rowTask{op: rowRopeStore, n: n, layer: l}) // never fails
	}
}

// residualNorm adds the block's output tmp to x and, when norm is set, sets
// rows from `from` on of xn to x normalized with it, the input of next.
func residualNorm(b backend, s *runState, n, from int, norm []float32, next *linear) {
	t := rowTask{op: rowAdd, n: n}
	if norm != nil {
		t.from, t.norm, t.next, t.nextIn = from, norm, next, s.xn
	}
	b.rows(t) // never fails
}

// gateUp projects xn to the FFN's gate and up.
func gateUp(b backend, s *runState, ops *layerOps, n int) {
	b.linearShared(s.xn, n, &ops.gate, s.gate, &ops.up, s.up, nil, nil)
}

// siluMul sets gate to silu(gate)·up, the input of down.
func siluMul(b backend, s *runState, n int, down *linear) {
	b.rows(rowTask{op: rowSiLU, n: n, next: down, nextIn: s.gate}) // never fails
}

// nextNorm is the norm after layer l-1, the matrix that reads its output and
// the first row it is needed for: layer l's attention norm and Q over every
// row, or past the last layer the output norm and head over the rows from
// first on when logits are wanted, the output norm alone over every row
// when the hidden states are (HiddenStates), else nil, nil.
func nextNorm(m *Model, k *kernels, l int, logits, hidden bool, first int) ([]float32, *linear, int) {
	switch {
	case l < len(m.Layers):
		return m.Layers[l].AttnNorm, &k.layers[l].q, 0
	case logits:
		return m.Norm, &k.output, first
	case hidden:
		return m.Norm, nil, 0
	}
	return nil, nil, 0
}

// capture hands layer l's output rows to Options.Capture, if set.
func (c *Context) capture(l, n int) {
	if c.opts.Capture == nil {
		return
	}
	dim := c.m.Config.Dim
	if h, ok := c.b.(hostCopier); ok {
		if err := h.toHost(c.s.x[:n*dim]); err != nil {
			panic(backendFailure{err}) // recovered by the backend's step
		}
	}
	for j := range n {
		c.opts.Capture(l, int(c.s.pos[j]), c.s.x[j*dim:(j+1)*dim])
	}
}
