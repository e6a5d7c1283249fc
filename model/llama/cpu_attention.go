package llama

import "math"

// attnTask is the attention being run and how it is dealt.
type attnTask struct {
	layer int
	pos0  int // position of the first token of the batch
	n     int
	chunk int // query tokens per prefill task
	work  func(w, n int)
}

// attnTasksPerWorker is about how many prefill attention tasks each worker
// gets over a float32 cache, where a task costs nothing beyond its blocks:
// enough that dealing them evens out a worker slowed down for a while.
const attnTasksPerWorker = 8

// attention runs layer l's attention for the batch's n tokens on the pool:
// decode's tasks are the KV heads, a batch's are (KV head, chunk of tokens),
// all dealt by c.deal.
func (c *cpuBackend) attention(l, n int) {
	cfg := c.m.Config
	c.attn.layer, c.attn.pos0, c.attn.n, c.attn.chunk = l, c.kv.pos, n, 0
	c.invalidate()
	tasks := cfg.KVHeads
	switch {
	case c.perRow:
		tasks *= n // (row, KV head)
	case n > 1:
		perWorker := attnTasksPerWorker
		if c.kv.half() {
			perWorker = 2 // each task widens its head's whole history
		}
		c.attn.chunk = attnChunkTokens(n, cfg.KVHeads, c.pool.Size(), perWorker)
		tasks *= (n + c.attn.chunk - 1) / c.attn.chunk
	}
	c.deal.Reset(tasks, c.pool.Size())
	c.pool.Run(c.attn.work)
}

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
func (c *cpuBackend) attnWork(w, nw int) {
	t, k, s := &c.attn, c.k, c.s
	cfg := c.m.Config
	hd, group := cfg.HeadDim, cfg.Heads/cfg.KVHeads
	qd := cfg.QDim()
	scale := float32(1 / math.Sqrt(float64(hd)))
	if c.perRow && t.n > 1 {
		// A Batch's rows (their keys stored by rowRopeStore): each (row, KV
		// head) through the decode kernel over the row's own sequence.
		for {
			task, ok := c.deal.Next(w)
			if !ok {
				return
			}
			c.attendRow(t.layer, task/cfg.KVHeads, task%cfg.KVHeads, scale)
		}
	}
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
			end := t.pos0 + j0 + nt
			qo := j0*qd + h*group*hd
			if c.kv.half() {
				kh, vh := c.kv.widen(c.wide[w], k.widenH, t.layer, h, end)
				k.attnH(s.att[qo:], s.q[qo:], qd, kh, vh, nt, group, 1, hd, t.pos0+j0, scale)
				continue
			}
			kh, vh := c.kv.head32(t.layer, h, end)
			k.attnB(s.att[qo:], s.q[qo:], qd, kh, vh, nt, group, 1, hd, t.pos0+j0, scale)
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
		c.attendRow(t.layer, 0, h, scale)
	}
}

// attendRow is row j's attention for KV head h's group of query heads over
// its sequence's cache up to its position, through the decode kernel.
func (c *cpuBackend) attendRow(l, j, h int, scale float32) {
	cfg, k, s := c.m.Config, c.k, c.s
	hd, group := cfg.HeadDim, cfg.Heads/cfg.KVHeads
	kv, ctx := c.kvs[s.seq[j]], int(s.pos[j])+1
	qo := j*cfg.QDim() + h*group*hd
	out, q := s.att[qo:qo+group*hd], s.q[qo:qo+group*hd]
	if kv.half() {
		kh, vh := kv.head16(l, h, ctx)
		k.attn16(out, q, kh, vh, group, 1, hd, ctx, scale)
		return
	}
	kh, vh := kv.head32(l, h, ctx)
	k.attn(out, q, kh, vh, group, 1, hd, ctx, scale)
}

// ropeStoreHead is rowRopeStore for decode's one token, restricted to KV
// head h: its group's query heads and its key rotated, its key and value
// stored at the token's position of its sequence. The rope kernels work
// head by head, so the results are those of the whole-row task.
func (c *cpuBackend) ropeStoreHead(l, h int) {
	cfg, s := c.m.Config, c.s
	hd, half, group := cfg.HeadDim, cfg.HeadDim/2, cfg.Heads/cfg.KVHeads
	cs, sn := s.cos[:half], s.sin[:half]
	k := s.kb[h*hd : (h+1)*hd]
	c.k.rope(s.q[h*group*hd:(h+1)*group*hd], group, hd, cs, sn, ropeNeoX)
	c.k.rope(k, 1, hd, cs, sn, ropeNeoX)
	c.kvs[s.seq[0]].storeHead(l, int(s.pos[0]), h, k, s.vb[h*hd:(h+1)*hd])
}
