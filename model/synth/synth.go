package synth

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/rowstream"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/quant"
)

// Options describe one synthetic model file.
type Options struct {
	Preset Preset
	Type   ftype.FileType
	Seed   uint64
	// Tokenizer holds the tokenizer.* metadata (llama3vocab.Vocab.Metadata()).
	Tokenizer []gguf.KV
	// Workers is how many goroutines generate each tensor (at least 1).
	Workers int
	// Progress, if set, is told how many tensor bytes were produced.
	Progress func(n int64)
}

// A tensor of the model: its place in the file and how to produce it.
type tensor struct {
	name      string
	dims      []uint64
	typ       quant.Type // type in the file
	canonical quant.Type // type its values are generated in (see Build)
	std       float64    // target standard deviation of the weights
	fixed     []float32  // exact values of a small 1-D tensor, if any
}

// Build returns a writer holding the model's metadata and tensors; writing
// it generates the weights.
//
// The weights are generated once, in canonical form: every 2-D weight as
// blocks of the type llama.cpp's Q4_K_M mix gives it (Q4_K or Q6_K), with
// uniformly random quants and scales chosen so the weights have a target
// standard deviation (see stdOf). A Q4_K_M file stores these blocks as they
// are; every other file type stores their exact dequantization, converted
// (F32, F16, BF16) or requantized with the reference quantizer (Q8_0,
// Q4_0, …). So the files of one seed are one model in several encodings,
// and the Q4_K_M file's weights equal the F32 file's. Generating blocks
// directly also keeps the 3B preset to seconds of CPU work.
func Build(o Options) (*gguf.Writer, int64, error) {
	p := o.Preset
	if p.Heads*p.HeadDim == 0 || p.Heads%max(p.KVHeads, 1) != 0 {
		return nil, 0, fmt.Errorf("preset %s: %d heads cannot share %d KV heads", p.Name, p.Heads, p.KVHeads)
	}
	tensors, err := planTensors(p, o.Type)
	if err != nil {
		return nil, 0, err
	}
	w := gguf.NewWriter()
	for _, kv := range metadata(p, o) {
		w.Set(kv.Key, kv.Value)
	}
	var total int64
	for _, t := range tensors {
		size, err := quant.RowSize(t.typ, int64(t.dims[0]))
		if err != nil {
			return nil, 0, fmt.Errorf("tensor %s: %w", t.name, err)
		}
		rows := 1
		for _, d := range t.dims[1:] {
			rows *= int(d)
		}
		bytes := uint64(size) * uint64(rows)
		total += int64(bytes)
		gen := newRowGen(t, tensorSeed(o.Seed, t.name))
		if err := w.AddTensorFunc(t.name, t.typ, t.dims, bytes, func(out io.Writer) error {
			return rowstream.Write(out, rows, int(size), o.Workers, gen.row, o.Progress)
		}); err != nil {
			return nil, 0, err
		}
	}
	return w, total, nil
}

// metadata returns the keys llama.cpp's convert_hf_to_gguf.py writes for
// Llama 3.2 Instruct, in its order, plus two damascus.synth.* keys that
// record how the file was made.
func metadata(p Preset, o Options) []gguf.KV {
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.Str("llama")},
		{Key: "general.type", Value: gguf.Str("model")},
		{Key: "general.name", Value: gguf.Str("Damascus synthetic " + p.Name)},
		{Key: "general.finetune", Value: gguf.Str("Instruct")},
		{Key: "general.basename", Value: gguf.Str("Llama-3.2")},
		{Key: "general.size_label", Value: gguf.Str(p.SizeLabel)},
		{Key: "llama.block_count", Value: gguf.U32(uint32(p.Layers))},
		{Key: "llama.context_length", Value: gguf.U32(ContextLength)},
		{Key: "llama.embedding_length", Value: gguf.U32(uint32(p.Embedding))},
		{Key: "llama.feed_forward_length", Value: gguf.U32(uint32(p.FFN))},
		{Key: "llama.attention.head_count", Value: gguf.U32(uint32(p.Heads))},
		{Key: "llama.attention.head_count_kv", Value: gguf.U32(uint32(p.KVHeads))},
		{Key: "llama.rope.freq_base", Value: gguf.F32(RopeBase)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.F32(RMSEps)},
		{Key: "llama.attention.key_length", Value: gguf.U32(uint32(p.HeadDim))},
		{Key: "llama.attention.value_length", Value: gguf.U32(uint32(p.HeadDim))},
		{Key: "general.file_type", Value: gguf.U32(o.Type.ID)},
		{Key: "llama.vocab_size", Value: gguf.U32(vocabSize)},
		{Key: "llama.rope.dimension_count", Value: gguf.U32(uint32(p.HeadDim))},
	}
	kvs = append(kvs, o.Tokenizer...)
	return append(kvs,
		gguf.KV{Key: "general.quantization_version", Value: gguf.U32(2)},
		gguf.KV{Key: "damascus.synth.preset", Value: gguf.Str(p.Name)},
		gguf.KV{Key: "damascus.synth.seed", Value: gguf.U64(o.Seed)},
	)
}

// vocabSize is the Llama 3 vocabulary's size (token_embd's second dimension).
const vocabSize = 128256

// planTensors lists the model's tensors in llama.cpp's order with their
// file types (ft's mix) and canonical types (the Q4_K_M mix).
func planTensors(p Preset, ft ftype.FileType) ([]tensor, error) {
	e, q, kv, ff := uint64(p.Embedding), uint64(p.Heads*p.HeadDim), uint64(p.KVHeads*p.HeadDim), uint64(p.FFN)
	ts := []tensor{
		{name: "token_embd.weight", dims: []uint64{e, vocabSize}},
		{name: "output_norm.weight", dims: []uint64{e}},
		{name: "rope_freqs.weight", dims: []uint64{uint64(p.HeadDim / 2)}, fixed: RopeFactors(p.HeadDim)},
	}
	for i := 0; i < p.Layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			tensor{name: b + "attn_norm.weight", dims: []uint64{e}},
			tensor{name: b + "attn_q.weight", dims: []uint64{e, q}},
			tensor{name: b + "attn_k.weight", dims: []uint64{e, kv}},
			tensor{name: b + "attn_v.weight", dims: []uint64{e, kv}},
			tensor{name: b + "attn_output.weight", dims: []uint64{q, e}},
			tensor{name: b + "ffn_norm.weight", dims: []uint64{e}},
			tensor{name: b + "ffn_gate.weight", dims: []uint64{e, ff}},
			tensor{name: b + "ffn_up.weight", dims: []uint64{e, ff}},
			tensor{name: b + "ffn_down.weight", dims: []uint64{ff, e}},
		)
	}
	specs := make([]ftype.Tensor, len(ts))
	for i, t := range ts {
		specs[i] = ftype.Tensor{Name: t.name, Dims: t.dims, Type: quant.F32}
	}
	canonical, err := ftype.FileType{Name: "Q4_K_M", ID: 15, Base: quant.Q4_K}.Plan(specs, p.Layers)
	if err != nil {
		return nil, err
	}
	types, err := ft.Plan(specs, p.Layers)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		ts[i].typ, ts[i].canonical = types[i], canonical[i]
		ts[i].std = stdOf(p, ts[i].name)
	}
	ftype.Sort(specs) // llama.cpp's order, as its quantizer would write the file
	byName := make(map[string]tensor, len(ts))
	for _, t := range ts {
		byName[t.name] = t
	}
	for i, s := range specs {
		ts[i] = byName[s.Name]
	}
	return ts, nil
}

// stdOf is the standard deviation each weight matrix is drawn with. With
// RMS-normalized inputs x (RMS 1):
//   - token_embd, the tied output head: 3/√n_embd, so logits have a standard
//     deviation near 3 and the next-token distribution is peaked, not flat;
//   - attn_q, attn_k: √(2/n_embd) each, so q·k/√head_dim has a standard
//     deviation near 2 and attention is neither uniform nor one-hot;
//   - attn_v, ffn_gate, ffn_up: 1/√n_in, so their outputs have RMS near 1;
//   - attn_output, ffn_down: 1/√n_in · 1/√(2·n_layer), so each of the 2·n_layer
//     residual additions adds RMS about 1/√(2·n_layer) and the residual stream
//     stays near RMS 1 (GPT-2's residual scaling).
//
// Norm weights are 1 ± 0.05 (uniform).
func stdOf(p Preset, name string) float64 {
	n := float64(p.Embedding)
	resid := 1 / math.Sqrt(2*float64(p.Layers))
	switch {
	case name == "token_embd.weight":
		return 3 / math.Sqrt(n)
	case hasSuffix(name, "attn_q.weight"), hasSuffix(name, "attn_k.weight"):
		return math.Sqrt(2 / n)
	case hasSuffix(name, "attn_v.weight"), hasSuffix(name, "ffn_gate.weight"), hasSuffix(name, "ffn_up.weight"):
		return 1 / math.Sqrt(n)
	case hasSuffix(name, "attn_output.weight"):
		return resid / math.Sqrt(float64(p.Heads*p.HeadDim))
	case hasSuffix(name, "ffn_down.weight"):
		return resid / math.Sqrt(float64(p.FFN))
	}
	return 0
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// RopeFactors returns Llama 3's RoPE frequency factors for a head dimension,
// as convert_hf_to_gguf.py computes the rope_freqs tensor (in float32): 1 for
// wavelengths under original_ctx/high_freq_factor, factor for those over
// original_ctx/low_freq_factor, and a smooth blend between.
func RopeFactors(headDim int) []float32 {
	const (
		factor = RopeScaleFactor
		low    = RopeLowFreqFactor
		high   = RopeHighFreqFactor
		orig   = RopeOriginalCtx
	)
	lowWavelen := float32(orig / low)
	highWavelen := float32(orig / high)
	out := make([]float32, headDim/2)
	for i := range out {
		exp := float32(2*i) / float32(headDim)
		freq := 1 / float32(math.Pow(RopeBase, float64(exp)))
		wavelen := float32(2*math.Pi) / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = factor
		default:
			smooth := (orig/wavelen - low) / (high - low)
			out[i] = 1 / ((1-smooth)/factor + smooth)
		}
	}
	return out
}

// tensorSeed derives a tensor's seed from the model seed and its name, so
// every tensor's values are independent of the others and of their order.
func tensorSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() ^ (seed * 0x9e3779b97f4a7c15)
}

// rowGen produces the rows of one tensor.
type rowGen struct {
	t    tensor
	seed uint64
	cols int
}

func newRowGen(t tensor, seed uint64) *rowGen {
	return &rowGen{t: t, seed: seed, cols: int(t.dims[0])}
}

// row writes row r of the tensor, in the file's type, into dst.
func (g *rowGen) row(dst []byte, r int) error {
	rng := rand.New(rand.NewPCG(g.seed, uint64(r)))
	t := g.t
	if t.canonical == t.typ && (t.typ == quant.Q4_K || t.typ == quant.Q6_K) {
		fillBlocks(dst, t.typ, t.std, rng)
		return nil
	}
	vals := make([]float32, g.cols)
	switch {
	case t.fixed != nil:
		copy(vals, t.fixed)
	case t.canonical == quant.F32: // norm weights
		for i := range vals {
			vals[i] = float32(1 + 0.05*(2*rng.Float64()-1))
		}
	default:
		size, _ := quant.RowSize(t.canonical, int64(g.cols))
		blocks := make([]byte, size)
		fillBlocks(blocks, t.canonical, t.std, rng)
		if err := quant.Dequantize(t.canonical, blocks, vals); err != nil {
			return err
		}
	}
	return quant.Quantize(t.typ, vals, dst)
}

// Uniform quants: the standard deviation of q − 7.5 for q uniform in 0..15
// and of q − 32 for q uniform in 0..63 (√((k²−1)/12), k levels).
var (
	q4Std = math.Sqrt((16*16 - 1) / 12.0)
	q6Std = math.Sqrt((64*64 - 1) / 12.0)
)

// fillBlocks writes random Q4_K or Q6_K blocks whose values have standard
// deviation about std and mean about 0.
func fillBlocks(dst []byte, typ quant.Type, std float64, rng *rand.Rand) {
	var raw [8]byte
	randomBytes := func(b []byte) {
		for i := 0; i < len(b); i += 8 {
			binary.LittleEndian.PutUint64(raw[:], rng.Uint64())
			copy(b[i:], raw[:])
		}
	}
	switch typ {
	case quant.Q4_K:
		// value = d·sc·q − dmin·m with sc uniform in 32..63 (mean 47.5),
		// q uniform in 0..15, dmin = 8d and m = round(sc·15/16), so that
		// dmin·m ≈ 7.5·d·sc centres each sub-block on 0.
		d := std / (q4Std * 47.5)
		dh := quant.Float32ToFP16(float32(d))
		dminh := quant.Float32ToFP16(8 * quant.FP16ToFloat32(dh))
		for b := 0; b+144 <= len(dst); b += 144 {
			blk := dst[b : b+144]
			binary.LittleEndian.PutUint16(blk, dh)
			binary.LittleEndian.PutUint16(blk[2:], dminh)
			var sc, m [8]uint8
			for j := range sc {
				sc[j] = uint8(32 + rng.IntN(32))
				m[j] = uint8(math.Round(float64(sc[j]) * 15 / 16))
			}
			clear(blk[4:16])
			quant.PutScaleMinK4(blk[4:16], &sc, &m)
			randomBytes(blk[16:144])
		}
	case quant.Q6_K:
		// value = d·sc·(q − 32) with |sc| uniform in 64..127 (mean 95.5) and a
		// random sign, q uniform in 0..63.
		d := std / (q6Std * 95.5)
		dh := quant.Float32ToFP16(float32(d))
		for b := 0; b+210 <= len(dst); b += 210 {
			blk := dst[b : b+210]
			randomBytes(blk[0:192])
			for j := 192; j < 208; j++ {
				s := int8(64 + rng.IntN(64))
				if rng.Uint64()&1 == 1 {
					s = -s
				}
				blk[j] = uint8(s)
			}
			binary.LittleEndian.PutUint16(blk[208:], dh)
		}
	default:
		panic("synth: no block generator for " + typ.String())
	}
}
