package llama

import (
	"errors"
	"fmt"

	"github.com/damascus-llm/damascus/gguf"
)

// Config is the shape of a Llama model, read from GGUF metadata.
type Config struct {
	Layers        int // {arch}.block_count
	Dim           int // {arch}.embedding_length
	FFNDim        int // {arch}.feed_forward_length
	Heads         int // {arch}.attention.head_count
	KVHeads       int // {arch}.attention.head_count_kv (default Heads)
	HeadDim       int // {arch}.attention.key_length (default Dim/Heads)
	ContextLength int // {arch}.context_length: the length the model was trained for
	Vocab         int // rows of token_embd.weight

	RopeBase      float32 // {arch}.rope.freq_base (llama.cpp's default 10000 when absent)
	RopeFreqScale float32 // 1/{arch}.rope.scaling.factor for linear scaling, else 1
	RMSEps        float32 // {arch}.attention.layer_norm_rms_epsilon

	// Pooling is {arch}.pooling_type, how the model's embeddings are meant
	// to be pooled (PoolNone when absent, as llama.cpp reads it; embedding
	// models name one, generative ones mostly do not).
	Pooling Pooling
}

// KVDim is the width of one position's keys (and values).
func (c Config) KVDim() int { return c.KVHeads * c.HeadDim }

// QDim is the width of the queries: Heads×HeadDim.
func (c Config) QDim() int { return c.Heads * c.HeadDim }

// metadata is what the config reader needs of a GGUF file.
type metadata interface {
	Has(key string) bool
	String(key string) (string, error)
	Uint32(key string) (uint32, error)
	Float32(key string) (float32, error)
}

var _ metadata = (*gguf.File)(nil)

// ReadConfig reads and checks the hyperparameters of a llama-architecture
// file. Every required key that is missing is named in the error. Vocab is
// left 0: it comes from the embedding tensor.
func ReadConfig(md metadata) (Config, error) {
	arch, err := md.String("general.architecture")
	if err != nil {
		return Config{}, err
	}
	if arch != "llama" {
		return Config{}, fmt.Errorf("architecture %q is not supported (want \"llama\")", arch)
	}
	var errs []error
	u := func(key string, dst *int) {
		v, err := md.Uint32(key)
		if err != nil {
			errs = append(errs, err)
			return
		}
		*dst = int(v)
	}
	var c Config
	u("llama.block_count", &c.Layers)
	u("llama.embedding_length", &c.Dim)
	u("llama.feed_forward_length", &c.FFNDim)
	u("llama.attention.head_count", &c.Heads)
	u("llama.context_length", &c.ContextLength)
	eps, err := md.Float32("llama.attention.layer_norm_rms_epsilon")
	if err != nil {
		errs = append(errs, err)
	}
	c.RMSEps = eps
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("llama metadata: %w", errors.Join(errs...))
	}

	// Optional keys take llama.cpp's defaults (llama-model.cpp load_hparams).
	c.KVHeads = c.Heads
	if md.Has("llama.attention.head_count_kv") {
		u("llama.attention.head_count_kv", &c.KVHeads)
	}
	if md.Has("llama.attention.key_length") {
		u("llama.attention.key_length", &c.HeadDim)
	} else if c.Heads > 0 {
		if c.Dim%c.Heads != 0 {
			errs = append(errs, fmt.Errorf("llama.embedding_length %d is not divisible by llama.attention.head_count %d, and no llama.attention.key_length gives the head size", c.Dim, c.Heads))
		}
		c.HeadDim = c.Dim / c.Heads
	}
	if md.Has("llama.attention.value_length") {
		var vl int
		u("llama.attention.value_length", &vl)
		if len(errs) == 0 && vl != c.HeadDim {
			errs = append(errs, fmt.Errorf("llama.attention.value_length %d differs from key_length %d (unsupported)", vl, c.HeadDim))
		}
	}
	if md.Has("llama.rope.dimension_count") {
		var rd int
		u("llama.rope.dimension_count", &rd)
		if len(errs) == 0 && rd != c.HeadDim {
			errs = append(errs, fmt.Errorf("llama.rope.dimension_count %d differs from the head size %d (partial rotary is unsupported)", rd, c.HeadDim))
		}
	}
	c.RopeBase = 10000
	if md.Has("llama.rope.freq_base") {
		if c.RopeBase, err = md.Float32("llama.rope.freq_base"); err != nil {
			errs = append(errs, err)
		}
	}
	if md.Has("llama.pooling_type") {
		var p int
		u("llama.pooling_type", &p)
		c.Pooling = Pooling(p)
	}
	c.RopeFreqScale = 1
	if err := readRopeScaling(md, &c); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("llama metadata: %w", errors.Join(errs...))
	}
	return c, c.check()
}

// readRopeScaling handles {arch}.rope.scaling.*: none and linear are
// supported; YaRN and LongRoPE are refused. (Llama 3.1's scaling is not here
// but in the rope_freqs tensor.)
func readRopeScaling(md metadata, c *Config) error {
	typ := "none"
	if md.Has("llama.rope.scaling.type") {
		t, err := md.String("llama.rope.scaling.type")
		if err != nil {
			return err
		}
		typ = t
	}
	factor := float32(0)
	for _, key := range []string{"llama.rope.scaling.factor", "llama.rope.scale_linear"} {
		if md.Has(key) {
			f, err := md.Float32(key)
			if err != nil {
				return err
			}
			factor = f
			break
		}
	}
	switch typ {
	case "none":
		if factor != 0 && factor != 1 && !md.Has("llama.rope.scaling.type") {
			c.RopeFreqScale = 1 / factor // the legacy scale_linear key implies linear
		}
	case "linear":
		if factor != 0 {
			c.RopeFreqScale = 1 / factor
		}
	default:
		return fmt.Errorf("llama.rope.scaling.type %q is not supported (none, linear)", typ)
	}
	return nil
}

// maxDim bounds every width and head count of the config: far above any
// model's (Llama 3.1 405B: width 16384, FFN 53248, 128 heads), and low
// enough that products of two never overflow. (block_count is checked
// against the tensor directory, see FromGGUF.)
const maxDim = 1 << 20

func (c Config) check() error {
	for _, d := range []struct {
		key string
		v   int
	}{{"llama.embedding_length", c.Dim}, {"llama.feed_forward_length", c.FFNDim},
		{"llama.attention.head_count", c.Heads}, {"llama.attention.head_count_kv", c.KVHeads}, {"head size", c.HeadDim}} {
		if d.v > maxDim {
			return fmt.Errorf("%s is %d, more than %d: the metadata is damaged", d.key, d.v, maxDim)
		}
	}
	switch {
	case c.Layers <= 0:
		return fmt.Errorf("llama.block_count is %d", c.Layers)
	case c.Dim <= 0 || c.FFNDim <= 0:
		return fmt.Errorf("embedding_length %d or feed_forward_length %d is not positive", c.Dim, c.FFNDim)
	case c.Heads <= 0 || c.KVHeads <= 0 || c.Heads%c.KVHeads != 0:
		return fmt.Errorf("head_count %d is not a positive multiple of head_count_kv %d", c.Heads, c.KVHeads)
	case c.HeadDim <= 0 || c.HeadDim%2 != 0:
		return fmt.Errorf("head size %d is not a positive even number", c.HeadDim)
	case c.ContextLength <= 0:
		return fmt.Errorf("llama.context_length is %d", c.ContextLength)
	case !(c.RMSEps > 0):
		return fmt.Errorf("llama.attention.layer_norm_rms_epsilon is %g", c.RMSEps)
	case !(c.RopeBase > 0):
		return fmt.Errorf("llama.rope.freq_base is %g", c.RopeBase)
	}
	return nil
}
