package llamacpp

import (
	"fmt"
	"runtime"
)

// A Batched is a context of several sequences decoded together, as
// llama-batched-bench runs them: every step is one llama_decode of each
// sequence's next token (or its prompt), with its own ggml threadpool.
type Batched struct {
	c *Context
}

// NewBatched makes a context of nSeq sequences sharing nCtx positions.
func (m *Model) NewBatched(nSeq, nCtx, threads int) (*Batched, error) {
	if nSeq < 1 {
		return nil, fmt.Errorf("llama.cpp batch of %d sequences", nSeq)
	}
	c, err := m.NewContext(ContextOptions{NCtx: nCtx, NBatch: nCtx, NUbatch: 512, Threads: threads, ThreadsBatch: threads,
		NSeq: nSeq, FlashAttn: FlashAttnOff, KVCacheF32: true})
	if err != nil {
		return nil, err
	}
	if err := c.attachThreadpool(threads, 50); err != nil {
		c.Close()
		return nil, err
	}
	c.clear()
	return &Batched{c: c}, nil
}

// Close frees the context.
func (b *Batched) Close() error { return b.c.Close() }

// Decode runs tokens[i] at position pos[i] of sequence seq[i] in one
// llama_decode, asking for logits where logits[i] is set, and waits for it.
func (b *Batched) Decode(tokens, pos, seq []int32, logits []bool) error {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(tokens)
	if n == 0 || len(pos) != n || len(seq) != n || len(logits) != n {
		return fmt.Errorf("llama.cpp batched decode: %d tokens, %d positions, %d sequences, %d logit flags", n, len(pos), len(seq), len(logits))
	}
	nSeq := make([]int32, n)
	seqs := make([]*int32, n)
	want := make([]int8, n)
	for i := range n {
		nSeq[i], seqs[i] = 1, &seq[i]
		if logits[i] {
			want[i] = 1
		}
	}
	bt := batch{nTokens: int32(n), token: &tokens[0], pos: &pos[0], nSeqID: &nSeq[0], seqID: &seqs[0], logits: &want[0]}
	mark := logMark()
	var rc int32
	onComputeThread(func() {
		rc = c.m.l.llama.decode(c.h, bt)
		c.m.l.llama.synchronize(c.h)
	})
	runtime.KeepAlive(tokens)
	runtime.KeepAlive(pos)
	runtime.KeepAlive(seq)
	runtime.KeepAlive(nSeq)
	runtime.KeepAlive(seqs)
	runtime.KeepAlive(want)
	if rc != 0 {
		return fmt.Errorf("llama_decode of %d tokens over several sequences returned %d: %s", n, rc, logSince(mark, 2))
	}
	return nil
}
