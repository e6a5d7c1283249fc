// Package synth makes synthetic Llama 3.2 model files: the exact tensor
// names, shapes, types and metadata of Llama 3.2 1B/3B Instruct as GGUF,
// with the real Llama 3 tokenizer and deterministic pseudo-random weights
// scaled so that activations and logits behave like a trained model's.
package synth

import (
	"fmt"
	"strings"
)

// A Preset is a model shape. Every preset shares Llama 3.2's fixed facts
// (RoPE, context, norm epsilon, vocabulary, tied output head).
type Preset struct {
	Name      string
	SizeLabel string // general.size_label
	Embedding int    // n_embd
	Layers    int    // n_layer
	Heads     int    // n_head
	KVHeads   int    // n_head_kv
	HeadDim   int    // n_embd_head_k = n_embd_head_v
	FFN       int    // n_ff
}

// Facts shared by the Llama 3.2 family (config.json of Llama-3.2-1B/3B-Instruct).
const (
	ContextLength = 131072
	RopeBase      = 500000
	RMSEps        = 1e-5

	// Llama 3 RoPE frequency scaling ("rope_type": "llama3").
	RopeScaleFactor    = 32
	RopeLowFreqFactor  = 1
	RopeHighFreqFactor = 4
	RopeOriginalCtx    = 8192
)

var presets = []Preset{
	{Name: "tiny", SizeLabel: "tiny", Embedding: 256, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 768},
	{Name: "llama3.2-1b", SizeLabel: "1B", Embedding: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192},
	{Name: "llama3.2-1b-2l", SizeLabel: "1B", Embedding: 2048, Layers: 2, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192},
	{Name: "llama3.2-3b", SizeLabel: "3B", Embedding: 3072, Layers: 28, Heads: 24, KVHeads: 8, HeadDim: 128, FFN: 8192},
	{Name: "llama3.2-3b-2l", SizeLabel: "3B", Embedding: 3072, Layers: 2, Heads: 24, KVHeads: 8, HeadDim: 128, FFN: 8192},
}

// Presets returns every preset.
func Presets() []Preset { return append([]Preset(nil), presets...) }

// LookupPreset returns the preset called name.
func LookupPreset(name string) (Preset, error) {
	var names []string
	for _, p := range presets {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Preset{}, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(names, ", "))
}
