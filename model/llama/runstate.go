package llama

// runState is the activations of one batch, llama2.c's RunState: NBatch rows
// of each buffer, allocated once so that evaluation allocates nothing.
type runState struct {
	x      []float32 // the residual stream
	xn     []float32 // x normalized: the input of the next products
	q      []float32 // queries
	kb, vb []float32 // the batch's keys and values, before they enter the cache
	att    []float32 // attention output
	tmp    []float32 // a block's output, added to x
	gate   []float32 // FFN gate, then silu(gate)·up
	up     []float32 // FFN up
	// cos, sin are each row's rope angles (HeadDim/2 values).
	cos, sin []float32
	logits   []float32 // Vocab values, or a row per token when all are asked for
	// pos and seq are each row's position and sequence (its KV cache):
	// a Context's rows are consecutive positions of sequence 0, a Batch's
	// may belong to several sequences.
	pos, seq []int32
	// wantHidden asks forward for the output norm of every row in xn
	// (HiddenStates), hidden holds those rows across batches.
	wantHidden bool
	hidden     []float32
}

func newRunState(cfg Config, nBatch int) *runState {
	nb, kvd, half := nBatch, cfg.KVDim(), cfg.HeadDim/2
	return &runState{
		x: make([]float32, nb*cfg.Dim), xn: make([]float32, nb*cfg.Dim),
		q: make([]float32, nb*cfg.QDim()), att: make([]float32, nb*cfg.QDim()),
		kb: make([]float32, nb*kvd), vb: make([]float32, nb*kvd),
		tmp:  make([]float32, nb*cfg.Dim),
		gate: make([]float32, nb*cfg.FFNDim), up: make([]float32, nb*cfg.FFNDim),
		cos: make([]float32, nb*half), sin: make([]float32, nb*half),
		logits: make([]float32, cfg.Vocab),
		pos:    make([]int32, nb), seq: make([]int32, nb),
	}
}
