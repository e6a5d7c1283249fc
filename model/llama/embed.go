package llama

import (
	"errors"
	"fmt"
	"math"
)

// Pooling is how Embed reduces a sequence's hidden states to one vector,
// llama.cpp's llama_pooling_type.
type Pooling int

// The poolings, numbered as llama.cpp's enum and the GGUF key
// {arch}.pooling_type (rank, 4, scores a pair with a classifier head these
// models do not have).
const (
	PoolNone Pooling = 0 // every token's state
	PoolMean Pooling = 1
	PoolCLS  Pooling = 2 // the first token's
	PoolLast Pooling = 3 // the last token's
)

// ParsePooling reads a pooling's name as llama-server's --pooling takes it.
func ParsePooling(s string) (Pooling, error) {
	switch s {
	case "none":
		return PoolNone, nil
	case "mean":
		return PoolMean, nil
	case "cls":
		return PoolCLS, nil
	case "last":
		return PoolLast, nil
	}
	return 0, fmt.Errorf("pooling %q is not one of none, mean, cls, last", s)
}

func (p Pooling) String() string {
	switch p {
	case PoolNone:
		return "none"
	case PoolMean:
		return "mean"
	case PoolCLS:
		return "cls"
	case PoolLast:
		return "last"
	}
	return fmt.Sprintf("pooling(%d)", int(p))
}

// EmbedPooling is the pooling an embedding of this model takes unless told
// otherwise: the model's own pooling_type where it gives one vector (mean,
// cls, last), else mean (llama-server would refuse /v1/embeddings with
// pooling none; a generative model's GGUF names none).
func (c Config) EmbedPooling() Pooling {
	switch c.Pooling {
	case PoolMean, PoolCLS, PoolLast:
		return c.Pooling
	}
	return PoolMean
}

// HiddenStates runs tokens through the model as a new sequence (the cache
// is emptied first) and returns each token's final hidden state after the
// output norm, len(tokens)×Dim row-major: what llama.cpp returns as
// embeddings (the input of the output matrix, which is not applied). The
// slice is the Context's, reused by the next call. The cache is left
// holding the tokens, as Eval would.
func (c *Context) HiddenStates(tokens []int32) ([]float32, error) {
	if c.opts.Device == DeviceCUDA {
		return nil, errors.New("embeddings run on the CPU only so far (--device cpu)")
	}
	if len(tokens) == 0 {
		return nil, errors.New("no tokens to embed")
	}
	if len(tokens) > c.opts.NCtx {
		return nil, fmt.Errorf("%d tokens exceed the context length %d", len(tokens), c.opts.NCtx)
	}
	if err := c.checkIDs(tokens); err != nil {
		return nil, err
	}
	if err := c.kv.truncate(0); err != nil {
		return nil, err
	}
	dim := c.m.Config.Dim
	if len(c.s.hidden) < len(tokens)*dim {
		c.s.hidden = make([]float32, len(tokens)*dim)
	}
	h := c.s.hidden[:len(tokens)*dim]
	for i := 0; i < len(tokens); i += c.opts.NBatch {
		batch := tokens[i:min(i+c.opts.NBatch, len(tokens))]
		c.s.wantHidden = true
		err := c.run(batch, nil, 0) // the CPU's pass: no stepper replays it
		c.s.wantHidden = false
		if err != nil {
			return nil, err
		}
		copy(h[i*dim:], c.s.xn[:len(batch)*dim])
		c.kv.pos += len(batch)
	}
	for i, x := range h {
		if x-x != 0 {
			c.kv.pos = 0
			return nil, &NonFiniteError{Pos: i / dim, Value: x}
		}
	}
	return h, nil
}

// Pool reduces the hidden states h (n rows of dim) as p asks, into dst
// (dim values; n×dim for PoolNone), and with normalize scales each vector
// to unit Euclidean length (llama-server's default, embd_normalize 2; a zero
// vector stays zero). The mean is summed in float64 and rounded to float32
// once.
func Pool(dst, h []float32, n, dim int, p Pooling, normalize bool) []float32 {
	switch p {
	case PoolNone:
		dst = append(dst[:0], h[:n*dim]...)
	case PoolCLS:
		dst = append(dst[:0], h[:dim]...)
	case PoolLast:
		dst = append(dst[:0], h[(n-1)*dim:n*dim]...)
	default: // PoolMean
		dst = dst[:0]
		for i := range dim {
			var s float64
			for j := range n {
				s += float64(h[j*dim+i])
			}
			dst = append(dst, float32(s/float64(n)))
		}
	}
	if normalize {
		for v := 0; v < len(dst); v += dim {
			unit(dst[v : v+dim])
		}
	}
	return dst
}

// unit scales x to Euclidean length 1, as llama.cpp's common_embd_normalize
// with norm 2 does (in double precision); zero stays zero.
func unit(x []float32) {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	if s == 0 {
		return
	}
	k := 1 / math.Sqrt(s)
	for i, v := range x {
		x[i] = float32(float64(v) * k)
	}
}
