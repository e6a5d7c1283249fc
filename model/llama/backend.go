package llama

// backend runs the graph's heavy steps on one device: the matrix products,
// attention over the KV cache, and the per-token row work between them. The
// graph (forward) says what is computed in which order; a backend says where
// and how it is scheduled: cpuBackend on the promoted kernels over a worker
// pool, cudaBackend (cuda.go) on the GPU.
//
// A device other than the CPU must provide the same steps over its own copies of what
// they read and write: the weights (each linear's matrix), the activations
// of runState, the kvCache, and the logits, which it hands back in host
// memory; and the same roundings (activations quantized to each weight
// type's activation type, a 16-bit cache's values and probabilities), so
// that its logits can be held to the CPU's.
type backend interface {
	// rows runs step t on each of the batch's rows; rows are independent.
	// Only rowEmbed fails (a token whose embedding cannot be read).
	rows(t rowTask) error
	// linear computes dst = W·x for n activation rows of x.
	linear(dst []float32, l *linear, x []float32, n int)
	// linearShared computes two or three products over the same input x
	// (c nil for two): Q, K and V, or gate and up.
	linearShared(x []float32, n int, a *linear, da []float32, b *linear, db []float32, c *linear, dc []float32)
	// attention runs layer's causal attention for the batch's n queries
	// (runState.q) over the cache, into runState.att. A batch's keys are
	// in the cache already (rowRopeStore); a single token's are rotated
	// and stored here, head by head.
	attention(layer, n int)
	// close releases the device's resources.
	close()
}

// A stepper is a backend that runs a whole forward pass itself: fwd walks
// the graph at the batch's first position pos; dst (nil: no logits) is
// where the pass's logits belong in host memory. The GPU records a decode
// step once and replays it instead of walking the graph again.
type stepper interface {
	step(tokens []int32, pos int, dst []float32, fwd func() error) error
}

// A hostCopier is a backend whose activations live in another memory:
// toHost brings the rows of a runState buffer into it (Options.Capture
// reads x there).
type hostCopier interface {
	toHost(x []float32) error
}

// backendFailure carries a device error out of a step that returns none;
// the backend's stepper recovers it as the pass's error.
type backendFailure struct{ err error }

// rowOp is the first step of a rowTask on each row; it reads and writes the
// runState's buffers named.
type rowOp uint8

const (
	rowNone      rowOp = iota // nothing: the row is only normalized or its input prepared
	rowEmbed                  // x = the token's embedding; cos, sin = rope angles of its position
	rowAdd                    // x += tmp, the residual
	rowRopeStore              // rotate q and kb, write kb and vb into the cache
	rowSiLU                   // gate = silu(gate)·up
)

// rowTask is the work between two matrix products that is independent per
// token, fused so that one pass covers, say, the residual add, the next
// rmsnorm and the preparation of its output for the next matrix.
type rowTask struct {
	op     rowOp
	n      int     // rows in the batch
	tokens []int32 // rowEmbed
	layer  int     // rowRopeStore: the cache written

	// from is the first row normalized and prepared: the output norm needs
	// only the last row unless every row's logits are wanted.
	from int
	norm []float32 // then xn = rmsnorm(x) with this weight; nil: no norm
	// next, when set, is the matrix that reads rows from `from` on of
	// nextIn once the task is done: a backend may prepare them for it in
	// the same pass (the CPU quantizes them to its activation type).
	next   *linear
	nextIn []float32
}
