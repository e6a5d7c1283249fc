package llama

import (
	"errors"
	"fmt"
)

// A Batch is several independent sequences (a server's slots) over one
// model, run together: each Step takes rows of any of them — a prefill
// chunk of one, single decode tokens of others — through one forward pass,
// so that every matrix is read once for all of the step's rows. Each
// sequence has its own KV cache of NCtx positions.
//
// A row's results do not depend on the other rows of its step: products go
// through the batched decode kernel (op matvec_batch) for every row, whose
// contract is that each token's outputs are the same bits whatever else is
// in the call (the promoted ones read each weight block once for up to 8
// tokens and give every token the bits of the matvec they were written
// beside; without one, the promoted matvec runs over chunks of rows), and
// attention one query row at a time through the decode kernel over the
// row's own sequence. A stream decoded at temperature 0 gives the same
// tokens alone or beside others, with any prefill chunking. (A Context's
// prefill goes through the matmul, which rounds otherwise, so a Batch's
// logits are close to a Context's, not equal.) It is not safe for
// concurrent use.
type Batch struct {
	c      *Context
	tokens []int32   // a step's tokens in the order they run
	logits []float32 // a row of Vocab values per span that wants logits
	seen   []bool    // per sequence: already in the step being checked
}

// A Span is one sequence's tokens in a step, evaluated at that sequence's
// next positions. Logits asks for the logits of its last token.
type Span struct {
	Seq    int
	Tokens []int32
	Logits bool
}

// NewBatch prepares seqs sequences of opts.NCtx positions each, sharing
// kernels, buffers (NBatch rows a step) and the worker pool. The CPU only.
func (m *Model) NewBatch(opts Options, seqs int) (*Batch, error) {
	if seqs < 1 {
		return nil, fmt.Errorf("a batch of %d sequences: at least one is wanted", seqs)
	}
	if opts.Capture != nil {
		return nil, errors.New("a batch does not capture hidden states: use a Context")
	}
	c, err := m.newContext(opts, seqs, true)
	if err != nil {
		return nil, err
	}
	return &Batch{c: c, tokens: make([]int32, c.opts.NBatch),
		logits: make([]float32, min(seqs, c.opts.NBatch)*m.Config.Vocab), seen: make([]bool, seqs)}, nil
}

// Close stops the worker pool.
func (b *Batch) Close() { b.c.Close() }

// Seqs is the number of sequences.
func (b *Batch) Seqs() int { return len(b.c.kvs) }

// NCtx is each sequence's KV cache length.
func (b *Batch) NCtx() int { return b.c.opts.NCtx }

// NBatch is the most tokens one step takes, over all its spans.
func (b *Batch) NBatch() int { return b.c.opts.NBatch }

// Options returns the options in effect, defaults filled in.
func (b *Batch) Options() Options { return b.c.opts }

// Pos is the number of positions in sequence seq's cache.
func (b *Batch) Pos(seq int) int {
	if seq < 0 || seq >= len(b.c.kvs) {
		return 0
	}
	return b.c.kvs[seq].pos
}

// Truncate drops sequence seq's cached positions from n on.
func (b *Batch) Truncate(seq, n int) error {
	if seq < 0 || seq >= len(b.c.kvs) {
		return fmt.Errorf("sequence %d of %d", seq, len(b.c.kvs))
	}
	return b.c.kvs[seq].truncate(n)
}

// Step runs the spans' tokens in one forward pass and returns the logits of
// the spans with Logits set, a row of Vocab values each, in span order. The
// slice is reused by the next call. Each sequence appears at most once and
// the spans hold NBatch tokens at most. On an error no sequence advances.
func (b *Batch) Step(spans []Span) ([]float32, error) {
	c := b.c
	V := c.m.Config.Vocab
	n, nl, err := b.check(spans)
	if err != nil {
		return nil, err
	}
	// Rows wanting logits go last, in span order, so that the output
	// products read them as one block: a row's place in the step changes
	// nothing of its results (see Batch), and every key of the step is in
	// the cache before any row attends.
	s, rows, last := c.s, 0, n-nl
	for _, sp := range spans {
		kv := c.kvs[sp.Seq]
		body := sp.Tokens
		if sp.Logits {
			body = body[:len(body)-1]
			j := last
			b.tokens[j], s.pos[j], s.seq[j] = sp.Tokens[len(body)], int32(kv.pos+len(body)), int32(sp.Seq)
			last++
		}
		for i, t := range body {
			b.tokens[rows], s.pos[rows], s.seq[rows] = t, int32(kv.pos+i), int32(sp.Seq)
			rows++
		}
	}
	var dst []float32
	if nl > 0 {
		dst = b.logits[:nl*V]
	}
	if err := c.forward(b.tokens[:n], dst, nl); err != nil {
		return nil, err
	}
	for i := range nl {
		if err := checkFinite(dst[i*V:(i+1)*V], V, int(s.pos[n-nl+i])); err != nil {
			return nil, err // the caches' positions are not advanced: their new rows are overwritten later
		}
	}
	for _, sp := range spans {
		c.kvs[sp.Seq].pos += len(sp.Tokens)
	}
	return dst, nil
}

// check validates a step's spans: their total tokens and how many want logits.
func (b *Batch) check(spans []Span) (n, nl int, err error) {
	c := b.c
	clear(b.seen)
	if len(spans) == 0 {
		return 0, 0, errors.New("a step of no spans")
	}
	for i, sp := range spans {
		if sp.Seq < 0 || sp.Seq >= len(c.kvs) {
			return 0, 0, fmt.Errorf("span %d: sequence %d of %d", i, sp.Seq, len(c.kvs))
		}
		if b.seen[sp.Seq] {
			return 0, 0, fmt.Errorf("span %d: sequence %d appears twice in one step", i, sp.Seq)
		}
		b.seen[sp.Seq] = true
		if len(sp.Tokens) == 0 {
			return 0, 0, fmt.Errorf("span %d: no tokens to evaluate", i)
		}
		if pos := c.kvs[sp.Seq].pos; pos+len(sp.Tokens) > c.opts.NCtx {
			return 0, 0, fmt.Errorf("span %d: %d tokens at position %d of sequence %d exceed the context length %d",
				i, len(sp.Tokens), pos, sp.Seq, c.opts.NCtx)
		}
		for _, t := range sp.Tokens {
			if t < 0 || int(t) >= c.m.Config.Vocab {
				return 0, 0, fmt.Errorf("span %d: token %d is outside the vocabulary of %d", i, t, c.m.Config.Vocab)
			}
		}
		n += len(sp.Tokens)
		if sp.Logits {
			nl++
		}
	}
	if n > c.opts.NBatch {
		return 0, 0, fmt.Errorf("a step of %d tokens: the batch holds %d", n, c.opts.NBatch)
	}
	return n, nl, nil
}
