package llama

import (
	"fmt"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
)

// fakeMD is metadata held in a map; errors name the key as gguf's do.
type fakeMD map[string]any

func (m fakeMD) Has(k string) bool { _, ok := m[k]; return ok }
func (m fakeMD) String(k string) (string, error) {
	v, ok := m[k].(string)
	if !ok {
		return "", fmt.Errorf("key %s: %w", k, gguf.ErrKeyNotFound)
	}
	return v, nil
}
func (m fakeMD) Uint32(k string) (uint32, error) {
	v, ok := m[k].(int)
	if !ok {
		return 0, fmt.Errorf("key %s: %w", k, gguf.ErrKeyNotFound)
	}
	return uint32(v), nil
}
func (m fakeMD) Float32(k string) (float32, error) {
	v, ok := m[k].(float64)
	if !ok {
		return 0, fmt.Errorf("key %s: %w", k, gguf.ErrKeyNotFound)
	}
	return float32(v), nil
}

func llama32() fakeMD {
	return fakeMD{
		"general.architecture": "llama", "llama.block_count": 28, "llama.embedding_length": 3072,
		"llama.feed_forward_length": 8192, "llama.attention.head_count": 24, "llama.attention.head_count_kv": 8,
		"llama.context_length": 131072, "llama.attention.layer_norm_rms_epsilon": 1e-5,
		"llama.rope.freq_base": 500000.0, "llama.attention.key_length": 128, "llama.attention.value_length": 128,
		"llama.rope.dimension_count": 128,
	}
}

func TestReadConfig(t *testing.T) {
	c, err := ReadConfig(llama32())
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Layers: 28, Dim: 3072, FFNDim: 8192, Heads: 24, KVHeads: 8, HeadDim: 128, ContextLength: 131072,
		RopeBase: 500000, RopeFreqScale: 1, RMSEps: 1e-5}
	if c != want {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	md := llama32()
	md["llama.rope.scaling.type"], md["llama.rope.scaling.factor"] = "linear", 4.0
	if c, err := ReadConfig(md); err != nil || c.RopeFreqScale != 0.25 {
		t.Errorf("linear scaling: %v, freq scale %g", err, c.RopeFreqScale)
	}
}

func TestReadConfigErrors(t *testing.T) {
	for _, c := range []struct {
		edit func(fakeMD)
		want []string
	}{
		{func(m fakeMD) { delete(m, "llama.block_count"); delete(m, "llama.attention.layer_norm_rms_epsilon") },
			[]string{"llama.block_count", "llama.attention.layer_norm_rms_epsilon"}},
		{func(m fakeMD) { m["general.architecture"] = "qwen2" }, []string{`"qwen2"`}},
		{func(m fakeMD) { m["llama.attention.head_count_kv"] = 5 }, []string{"head_count_kv"}},
		{func(m fakeMD) { m["llama.rope.scaling.type"] = "yarn" }, []string{"yarn"}},
		{func(m fakeMD) { m["llama.rope.dimension_count"] = 64 }, []string{"partial rotary"}},
	} {
		md := llama32()
		c.edit(md)
		_, err := ReadConfig(md)
		if err == nil {
			t.Errorf("want an error naming %v", c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %s", err, w)
			}
		}
	}
}

func TestStories260KConfig(t *testing.T) {
	m, _ := openStories(t)
	c := m.Config
	if c.Layers != 5 || c.Dim != 64 || c.Heads != 8 || c.KVHeads != 4 || c.HeadDim != 8 || c.Vocab != 512 {
		t.Errorf("stories260K config %+v", c)
	}
	t.Logf("stories260K: %+v tied=%v rope_freqs=%v", c, m.Tied, m.FreqFactors != nil)
}
