package llamacpp

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/damascus-llm/damascus/quant"
)

// ContextOptions size a llama.cpp inference context. Zero values take the
// defaults noted on each field.
type ContextOptions struct {
	NCtx         int       // KV cache length in tokens; default 2048
	NBatch       int       // most tokens one llama_decode call takes; default 2048 (capped at NCtx)
	NUbatch      int       // tokens per compute step; default 512 (capped at NBatch)
	Threads      int       // threads for single-token decodes; default runtime.NumCPU()
	ThreadsBatch int       // threads for batches; default Threads
	FlashAttn    FlashAttn // default off
	// KVCacheF32 stores keys and values as F32 instead of llama.cpp's
	// default F16, for an oracle closer to a float reference.
	KVCacheF32 bool
	// KVCacheBF16 stores them as BF16 (llama-bench's -ctk bf16 -ctv bf16).
	KVCacheBF16 bool
	// NSeq is the sequences the context holds (n_seq_max, a unified KV
	// cache of NCtx positions as llama-batched-bench's -kvu); default 1.
	NSeq int
	// Embeddings makes the context return hidden states (Embeddings)
	// instead of logits, pooled as Pooling says (llama_pooling_type: 0
	// none, 1 mean, 2 cls, 3 last).
	Embeddings bool
	Pooling    int
}

// FlashAttn selects llama.cpp's attention kernel.
type FlashAttn int8

// Flash-attention modes. FlashAttnDefault means off for an oracle Context
// (results must not hang on llama.cpp's automatic choice) and auto for a
// bench, as in llama-bench.
const (
	FlashAttnDefault FlashAttn = iota
	FlashAttnOff
	FlashAttnOn   // llama.cpp's fused flash-attention kernel
	FlashAttnAuto // llama.cpp decides
)

// String returns the mode as llama-bench spells it: "off", "on", "auto"
// ("default" for the zero value).
func (f FlashAttn) String() string {
	switch f {
	case FlashAttnOff:
		return "off"
	case FlashAttnOn:
		return "on"
	case FlashAttnAuto:
		return "auto"
	}
	return "default"
}

// MarshalText writes the mode as String does.
func (f FlashAttn) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText reads a mode as ParseFlashAttn does.
func (f *FlashAttn) UnmarshalText(b []byte) error {
	v, err := ParseFlashAttn(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// ParseFlashAttn reads "on", "off" or "auto" (also "1", "0", "-1").
func ParseFlashAttn(s string) (FlashAttn, error) {
	switch s {
	case "on", "1":
		return FlashAttnOn, nil
	case "off", "0":
		return FlashAttnOff, nil
	case "default", "":
		return FlashAttnDefault, nil
	case "auto", "-1":
		return FlashAttnAuto, nil
	}
	return 0, fmt.Errorf("flash attention mode %q: want on, off or auto", s)
}

func (o ContextOptions) withDefaults() ContextOptions {
	if o.NCtx <= 0 {
		o.NCtx = 2048
	}
	if o.NBatch <= 0 {
		o.NBatch = 2048
	}
	o.NBatch = min(o.NBatch, o.NCtx)
	if o.NUbatch <= 0 {
		o.NUbatch = 512
	}
	o.NUbatch = min(o.NUbatch, o.NBatch)
	if o.Threads <= 0 {
		o.Threads = runtime.NumCPU()
	}
	if o.ThreadsBatch <= 0 {
		o.ThreadsBatch = o.Threads
	}
	return o
}

// Context is a llama.cpp inference context on a Model: the logits oracle and
// the bench's engine. It is not safe for concurrent use; methods lock it.
type Context struct {
	m  *Model
	mu sync.Mutex
	h  uintptr // struct llama_context *
	// threadpool is a ggml threadpool attached by the bench, freed after the
	// context; batchPool, of batchThreads, the one a bench's depth prompt
	// ran on (benchSession.WithThreads), likewise.
	threadpool   uintptr
	batchPool    uintptr
	batchThreads int
	opts         ContextOptions
	nBatch       int
	nCtx         int
	nVocab       int
}

// NewContext creates a context; Close frees it (before the model).
func (m *Model) NewContext(opts ContextOptions) (*Context, error) {
	mh, err := m.handle()
	if err != nil {
		return nil, err
	}
	if m.vocab.n <= 0 {
		return nil, fmt.Errorf("llama.cpp context on %s: the model has no vocabulary", m.path)
	}
	o := opts.withDefaults()
	p := m.l.llama.contextDefaultParams()
	p.nCtx = uint32(o.NCtx)
	p.nBatch = uint32(o.NBatch)
	p.nUbatch = uint32(o.NUbatch)
	p.nThreads = int32(o.Threads)
	p.nThreadsBatch = int32(o.ThreadsBatch)
	if o.NSeq > 1 {
		p.nSeqMax, p.kvUnified = uint32(o.NSeq), true
	}
	switch {
	case o.KVCacheF32 && o.KVCacheBF16:
		return nil, fmt.Errorf("llama.cpp context on %s: KV cache asked as both F32 and BF16", m.path)
	case o.KVCacheF32:
		p.typeK, p.typeV = uint32(quant.F32), uint32(quant.F32)
	case o.KVCacheBF16:
		p.typeK, p.typeV = uint32(quant.BF16), uint32(quant.BF16)
	}
	if o.Embeddings {
		p.embeddings, p.poolingType = true, int32(o.Pooling)
	}
	switch o.FlashAttn {
	case FlashAttnOn:
		p.flashAttnType = flashAttnEnabled
	case FlashAttnAuto:
		p.flashAttnType = flashAttnAuto
	default:
		p.flashAttnType = flashAttnDisabled
	}
	mark := logMark()
	h := m.l.llama.initFromModel(mh, p)
	if h == 0 {
		return nil, fmt.Errorf("llama.cpp could not create a context (n_ctx %d) for %s: %s", o.NCtx, m.path, logSince(mark, 3))
	}
	c := &Context{
		m: m, h: h, opts: o,
		nBatch: int(m.l.llama.nBatch(h)),
		nCtx:   int(m.l.llama.nCtx(h)),
		nVocab: int(m.vocab.n),
	}
	runtime.SetFinalizer(c, (*Context).Close)
	return c, nil
}

// Close frees the context.
func (c *Context) Close() error {
	freeOnce(&c.mu, &c.h, c, func(h uintptr) {
		c.m.l.llama.free(h)
		for _, tp := range []*uintptr{&c.threadpool, &c.batchPool} {
			if *tp != 0 {
				c.m.l.ggmlThreadpoolFree(*tp)
				*tp = 0
			}
		}
	})
	return nil
}

// NCtx is the context length llama.cpp actually allocated.
func (c *Context) NCtx() int { return c.nCtx }

// Options returns the options the context was made with, defaults filled in.
func (c *Context) Options() ContextOptions { return c.opts }

// clear empties the KV cache (llama_memory_clear with data).
func (c *Context) clear() {
	c.m.l.llama.memoryClear(c.m.l.llama.getMemory(c.h), true)
}

// Logits evaluates tokens as one sequence from position 0 (the cache is
// cleared first) and returns the full-vocabulary logits after each index in
// positions (indices into tokens, any order), in the order asked.
func (c *Context) Logits(tokens []int32, positions []int) ([][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == 0 {
		return nil, errClosed
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("llama.cpp logits: no tokens")
	}
	if len(tokens) > c.nCtx {
		return nil, fmt.Errorf("llama.cpp logits: %d tokens exceed the context of %d", len(tokens), c.nCtx)
	}
	if len(positions) == 0 {
		return nil, fmt.Errorf("llama.cpp logits: no positions asked for")
	}
	if err := c.m.vocab.checkIDs(tokens); err != nil {
		return nil, fmt.Errorf("llama.cpp logits: %w", err)
	}
	want := make([]bool, len(tokens))
	for _, p := range positions {
		if p < 0 || p >= len(tokens) {
			return nil, fmt.Errorf("llama.cpp logits: position %d outside the %d tokens", p, len(tokens))
		}
		want[p] = true
	}
	c.clear()
	got := make(map[int][]float32, len(positions))
	for start := 0; start < len(tokens); start += c.nBatch {
		end := min(start+c.nBatch, len(tokens))
		if err := c.decode(tokens[start:end], start, want[start:end]); err != nil {
			return nil, fmt.Errorf("llama.cpp logits: %w", err)
		}
		for i := start; i < end; i++ {
			if !want[i] {
				continue
			}
			p := c.m.l.llama.getLogitsIth(c.h, int32(i-start))
			if p == nil {
				return nil, fmt.Errorf("llama.cpp logits: none returned for position %d", i)
			}
			got[i] = append([]float32(nil), unsafe.Slice(p, c.nVocab)...)
		}
	}
	out := make([][]float32, len(positions))
	for i, p := range positions {
		out[i] = got[p]
	}
	return out, nil
}

// Embeddings evaluates tokens as one sequence from position 0 (the cache is
// cleared first) in a context made with Embeddings, all in one llama_decode
// call (pooled embeddings need the whole sequence in one batch: NBatch and
// NUbatch at least len(tokens)), and returns llama.cpp's embeddings: the
// pooled vector of n_embd values, or with pooling none every token's,
// len(tokens)×n_embd. Not normalized (llama-server normalizes them after).
func (c *Context) Embeddings(tokens []int32) ([]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == 0 {
		return nil, errClosed
	}
	if !c.opts.Embeddings {
		return nil, fmt.Errorf("llama.cpp embeddings: the context was made without ContextOptions.Embeddings")
	}
	if len(tokens) == 0 || len(tokens) > c.nBatch || len(tokens) > c.opts.NUbatch {
		return nil, fmt.Errorf("llama.cpp embeddings: %d tokens, batch %d, ubatch %d: one batch must hold them all", len(tokens), c.nBatch, c.opts.NUbatch)
	}
	if err := c.m.vocab.checkIDs(tokens); err != nil {
		return nil, fmt.Errorf("llama.cpp embeddings: %w", err)
	}
	c.clear()
	want := make([]bool, len(tokens))
	for i := range want {
		want[i] = true
	}
	if err := c.decode(tokens, 0, want); err != nil {
		return nil, fmt.Errorf("llama.cpp embeddings: %w", err)
	}
	n := int(c.m.l.llama.modelNEmbd(c.m.h))
	if c.opts.Pooling != 0 {
		p := c.m.l.llama.getEmbdSeq(c.h, 0)
		if p == nil {
			return nil, fmt.Errorf("llama.cpp embeddings: none pooled for the sequence")
		}
		return append([]float32(nil), unsafe.Slice(p, n)...), nil
	}
	out := make([]float32, 0, len(tokens)*n)
	for i := range tokens {
		p := c.m.l.llama.getEmbdIth(c.h, int32(i))
		if p == nil {
			return nil, fmt.Errorf("llama.cpp embeddings: none for token %d", i)
		}
		out = append(out, unsafe.Slice(p, n)...)
	}
	return out, nil
}

// decode runs llama_decode on one batch of sequence 0 at positions pos0...,
// asking for outputs where want is true (want may be nil: none). The batch
// arrays live in Go memory, alive for the call.
func (c *Context) decode(tokens []int32, pos0 int, want []bool) error {
	n := len(tokens)
	pos := make([]int32, n)
	nSeq := make([]int32, n)
	seq0 := new(int32)
	seqs := make([]*int32, n)
	logits := make([]int8, n)
	for i := range n {
		pos[i] = int32(pos0 + i)
		nSeq[i] = 1
		seqs[i] = seq0
		if want != nil && want[i] {
			logits[i] = 1
		}
	}
	b := batch{
		nTokens: int32(n),
		token:   &tokens[0],
		pos:     &pos[0],
		nSeqID:  &nSeq[0],
		seqID:   &seqs[0],
		logits:  &logits[0],
	}
	mark := logMark()
	var rc int32
	onComputeThread(func() { rc = c.m.l.llama.decode(c.h, b) })
	runtime.KeepAlive(tokens)
	runtime.KeepAlive(pos)
	runtime.KeepAlive(nSeq)
	runtime.KeepAlive(seqs)
	runtime.KeepAlive(seq0)
	runtime.KeepAlive(logits)
	if rc != 0 {
		return fmt.Errorf("llama_decode of %d tokens at position %d returned %d: %s", n, pos0, rc, logSince(mark, 2))
	}
	return nil
}
