package llama

import (
	"github.com/damascus-llm/damascus/internal/pool"
	"github.com/damascus-llm/damascus/ledger"
)

// linSchedule is the products of one dispatch and how their rows are dealt.
type linSchedule struct {
	// tasks[:count] are matrices sharing one input, run in one dispatch
	// (Q, K, V; gate, up) so that decode pays one barrier for them.
	tasks [3]linTask
	count int
	// dealt says the rows are dealt in chunks; tasks[i]'s chunks end at
	// chunkEnd[i] in the dealt sequence.
	dealt    bool
	chunkEnd [3]int
	// prepBufs hold a prepared batch's activations, one buffer per task at
	// most, grown by the first batch that needs them.
	prepBufs [3][]byte
	// xrBufs hold the tokens' activations laid out for a weight layout's
	// kernel (matvec or batched product), per task.
	xrBufs [3][]byte
	// work computes the products; prepWork lays out a prepared batch's
	// activations (method values, made once).
	work, prepWork func(w, n int)
}

type linTask struct {
	l     *linear
	dst   []float32
	xq    []byte
	n     int
	mode  linMode
	chunk int // rows per dealt chunk
	// prep is the activations laid out for the task's prepared kernel
	// (pk, nil when it has none); owner says this task lays it out (the
	// first task of its layout).
	pk    *ledger.PreparedMatMul
	prep  []byte
	owner bool
	// xr is the tokens' activations laid out for its kernel's weight
	// layout (linear.layout or .blayout), when it reads one.
	xr []byte
}

// linMode is which kernel a product goes through.
type linMode uint8

const (
	// linVec: the matvec, a single token's (a Context's decode).
	linVec linMode = iota
	// linRows: the batched decode kernel (matvec_batch), every row's
	// results independent of the others (a Batch's steps, any n).
	linRows
	// linMat: the matmul (a Context's prefill).
	linMat
)

// prepared is the task's prepared kernel and the name of its layout (nil
// and "" without one).
func (t *linTask) prepared() (*ledger.PreparedMatMul, string) {
	switch t.mode {
	case linRows:
		return t.l.bprep, t.l.bmmID
	case linMat:
		return t.l.prep, t.l.mmID
	}
	return nil, ""
}

// dealBytes is about how much weight data one dealt chunk of a matvec
// streams: large enough that taking a chunk (one uncontended
// compare-and-swap) and a kernel call cost nothing next to it and a stolen
// chunk is a long sequential stream, small enough that the workers finish
// within microseconds of each other. On the 2-vCPU dev VM (1B decode, sizes
// alternated every 2 tokens, two runs): 64 KiB 18.65/17.10, 128 KiB
// 18.45/16.89, 256 KiB 18.32/16.66, 512 KiB 18.47/16.83 ms/token (means).
var dealBytes = 256 << 10 // a variable for the tests, which shrink it

// linear computes dst (n rows of l.w.Rows) = W·x for n activation rows of
// l.w.Cols, quantizing x first unless it is quantized already.
func (c *cpuBackend) linear(dst []float32, l *linear, x []float32, n int) {
	c.lin.tasks[0], c.lin.count = linTask{l: l, dst: dst, xq: c.quantized(l, x, n), n: n}, 1
	c.runLins()
}

// linearShared runs the two or three matrices in one dispatch when their
// kernels take the same activation type, else one after the other.
func (c *cpuBackend) linearShared(x []float32, n int, a *linear, da []float32, b *linear, db []float32, cl *linear, dc []float32) {
	if b.at != a.at || b.w.Cols != a.w.Cols || (cl != nil && (cl.at != a.at || cl.w.Cols != a.w.Cols)) {
		c.linear(da, a, x, n)
		c.linear(db, b, x, n)
		if cl != nil {
			c.linear(dc, cl, x, n)
		}
		return
	}
	xq := c.quantized(a, x, n)
	s := &c.lin
	s.tasks[0] = linTask{l: a, dst: da, xq: xq, n: n}
	s.tasks[1] = linTask{l: b, dst: db, xq: xq, n: n}
	s.count = 2
	if cl != nil {
		s.tasks[2], s.count = linTask{l: cl, dst: dc, xq: xq, n: n}, 3
	}
	c.runLins()
}

// runLins runs the scheduled products on the pool. A prefill step of at most
// kernels.smallRows rows goes through the batched decode kernel as a
// Batch's rows do (issue 19: below the crossover, reading the weights as
// stored beats unpacking them for the matmul). A single token's matvecs
// and a Batch's rows (the batched decode kernel) are dealt in chunks of
// rows (whole 64-byte lines of dst, about dealBytes of weights each) over
// all the tasks' matrices in order. A prefill batch whose kernels have a
// prepared form, and a Batch's rows whose kernel has one, lay their
// activations out once (each worker a share of the tokens); the prefill
// then deals kernels.chunkRows rows at a time the same way. Other prefill
// batches split each matrix's rows statically, the matmul kernels laying
// out the activations and tiling their own share.
func (c *cpuBackend) runLins() {
	s := &c.lin
	n := s.tasks[0].n
	mode := linMat
	switch {
	case c.perRow: // a Batch's rows, whatever their number
		mode = linRows
	case n == 1:
		mode = linVec
	case n <= c.k.smallRows: // a short prefill step: below the matmul's crossover
		mode = linRows
	}
	for i := range s.count {
		t := &s.tasks[i]
		t.mode, t.chunk = mode, c.k.chunkRows
		if t.layout() != nil && mode != linMat {
			c.prepareLayout(i)
		}
	}
	prepared := false
	switch mode {
	case linRows:
		prepared = c.planPrepared()
	case linMat: // on one worker the matmul lays out its activations itself, in one call
		prepared = c.pool.Size() > 1 && c.planPrepared()
	}
	s.dealt = c.pool.Size() > 1 && (mode != linMat || prepared)
	if prepared {
		c.pool.Run(s.prepWork)
	}
	if !s.dealt {
		c.pool.Run(s.work)
		return
	}
	total := 0
	for i := range s.count {
		t := &s.tasks[i]
		if mode != linMat {
			t.chunk = max(16, dealBytes/t.l.w.RowSize&^15)
			if g := t.layoutRows(); t.chunk%g != 0 {
				t.chunk = max(g, t.chunk/g*g)
			}
		}
		total += (t.l.w.Rows + t.chunk - 1) / t.chunk
		s.chunkEnd[i] = total
	}
	c.deal.Reset(total, c.pool.Size())
	c.pool.Run(s.work)
}

// prepareLayout lays out task i's activations (its n tokens') for its
// kernel's weight layout, or shares an earlier task's layout of the same
// input for the same weight layout (Q, K and V; gate and up).
func (c *cpuBackend) prepareLayout(i int) {
	s := &c.lin
	t := &s.tasks[i]
	lay := t.layout()
	for j := range i {
		if u := &s.tasks[j]; u.layout() == lay && &u.xq[0] == &t.xq[0] {
			t.xr = u.xr
			return
		}
	}
	size := t.n * lay.ActBytes(t.l.w.Cols)
	if cap(s.xrBufs[i]) < size {
		s.xrBufs[i] = make([]byte, size)
	}
	t.xr = s.xrBufs[i][:size]
	lay.PrepareBatch(t.xr, t.xq, t.n, t.l.w.Cols)
}

// planPrepared reports whether every matrix of the batch's products has a
// prepared form, and if so gives each task its layout buffer, shared by the
// tasks of one kernel and input.
func (c *cpuBackend) planPrepared() bool {
	s := &c.lin
	for i := range s.count {
		t := &s.tasks[i]
		t.owner = false
		if t.pk, _ = t.prepared(); t.pk == nil && (t.layout() == nil || t.mode == linMat) {
			for j := range s.count {
				s.tasks[j].pk = nil
			}
			return false
		}
	}
	for i := range s.count {
		t := &s.tasks[i]
		if t.pk == nil { // a batched product's weight layout: prepareLayout laid it out
			continue
		}
		_, id := t.prepared()
		t.owner = true
		for j := range i {
			if _, jd := s.tasks[j].prepared(); jd == id && &s.tasks[j].xq[0] == &t.xq[0] {
				t.prep, t.owner = s.tasks[j].prep, false
				break
			}
		}
		if t.owner {
			size := t.pk.Size(t.n, t.l.w.Cols)
			if cap(s.prepBufs[i]) < size {
				s.prepBufs[i] = make([]byte, size)
			}
			t.prep = s.prepBufs[i][:size]
		}
	}
	return true
}

// prepWork lays out worker w's share of the batch's tokens for each layout
// the products need.
func (c *cpuBackend) prepWork(w, nw int) {
	s := &c.lin
	for i := range s.count {
		t := &s.tasks[i]
		if t.owner {
			if lo, hi := pool.Split(t.n, w, nw, t.pk.Align); lo < hi {
				t.pk.Prepare(t.prep, t.xq, lo, hi, t.n, t.l.w.Cols)
			}
		}
	}
}

// linWork computes worker w's rows: a static share of each matrix, or dealt
// chunks until none is left (a single token's matvecs in runs of up to
// kernels.dealRun chunks, each task's part of a run in one call).
func (c *cpuBackend) linWork(w, nw int) {
	s := &c.lin
	if !s.dealt {
		for i := range s.count {
			linPart(&s.tasks[i], w, nw)
		}
		return
	}
	most := 1 // a chunk at a time, but for a single token's matvecs
	if s.tasks[0].mode == linVec {
		most = c.k.dealRun
	}
	for {
		ch, end, ok := c.deal.NextRun(w, most)
		if !ok {
			return
		}
		// The run's chunks task by task (a run may cross from one matrix
		// to the next): each task's part in one call.
		for ch < end {
			i, first := 0, 0
			for ch >= s.chunkEnd[i] {
				first = s.chunkEnd[i]
				i++
			}
			t := &s.tasks[i]
			stop := min(end, s.chunkEnd[i])
			t.rows((ch-first)*t.chunk, min((stop-first)*t.chunk, t.l.w.Rows))
			ch = stop
		}
	}
}

// linPart computes worker w's share of the rows of one matrix: a matvec's
// or a Batch's in the chunks they are dealt in when there are workers to
// deal them to, a prefill's in one matmul call.
func linPart(t *linTask, w, nw int) {
	lo, hi := pool.Split(t.l.w.Rows, w, nw, max(8, t.layoutRows()))
	if lo >= hi {
		return
	}
	if t.mode == linMat && t.pk == nil && t.l.mlayout == nil {
		rs := t.l.w.RowSize
		t.l.mm(t.dst[lo:], t.l.w.Rows, t.l.w.Data[lo*rs:hi*rs], hi-lo, t.xq, t.n, t.l.w.Cols)
		return
	}
	step := max(16, dealBytes/t.l.w.RowSize&^15)
	switch {
	case t.mode == linMat && t.pk == nil: // a matmul over a weight layout, its share in one call
		step = hi - lo
	case t.mode == linMat:
		step = t.chunk
	}
	for a := lo; a < hi; a += step {
		t.rows(a, min(a+step, hi))
	}
}

// rows computes weight rows [lo, hi) of the task, for every token, through
// its mode's kernel. A Batch's rows (the batched decode kernel) and a
// single token's (the matvec) give each token the same bits whatever the
// chunk and the other tokens.
func (t *linTask) rows(lo, hi int) {
	if t.layout() != nil {
		t.rowsInLayout(lo, hi)
		return
	}
	w := t.l.w
	rs := w.RowSize
	wd := w.Data[lo*rs : hi*rs]
	switch {
	case t.mode == linVec:
		t.l.mv(t.dst[lo:hi], wd, t.xq, w.Cols)
	case t.pk != nil:
		t.pk.Run(t.dst[lo:], w.Rows, wd, hi-lo, t.prep, t.n, w.Cols)
	case t.mode == linRows:
		t.l.bmm(t.dst[lo:], w.Rows, wd, hi-lo, t.xq, t.n, w.Cols)
	default:
		t.l.mm(t.dst[lo:], w.Rows, wd, hi-lo, t.xq, t.n, w.Cols)
	}
}
