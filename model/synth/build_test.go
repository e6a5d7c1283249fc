package synth_test

import (
	"crypto/sha256"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/numcmp"
	"github.com/damascus-llm/damascus/model/ftype"
	"github.com/damascus-llm/damascus/model/synth/synthtest"
	"github.com/damascus-llm/damascus/quant"
)

// build builds the named preset's synthetic model.
func build(t testing.TB, preset, typ string, seed uint64, workers int) *gguf.Writer {
	t.Helper()
	return synthtest.Build(t, synthtest.Preset(t, preset), typ, seed, workers)
}

// writeModel writes a synthetic model into a temporary directory and opens it.
func writeModel(t testing.TB, preset, typ string, seed uint64) *gguf.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%s.gguf", preset, typ))
	synthtest.Write(t, synthtest.Preset(t, preset), typ, seed, path)
	return gguftest.Open(t, path)
}

// tinyTensors lists the tiny preset's tensors in llama.cpp's loader order
// with their shapes.
func tinyTensors() ([]string, map[string][]uint64) {
	names := []string{"output_norm.weight", "rope_freqs.weight", "token_embd.weight"}
	dims := map[string][]uint64{
		"output_norm.weight": {256}, "rope_freqs.weight": {32}, "token_embd.weight": {256, 128256},
	}
	for i := 0; i < 2; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		for _, n := range []string{"attn_k", "attn_norm", "attn_output", "attn_q", "attn_v", "ffn_down", "ffn_gate", "ffn_norm", "ffn_up"} {
			names = append(names, b+n+".weight")
		}
		dims[b+"attn_norm.weight"] = []uint64{256}
		dims[b+"ffn_norm.weight"] = []uint64{256}
		dims[b+"attn_q.weight"] = []uint64{256, 256}
		dims[b+"attn_k.weight"] = []uint64{256, 128}
		dims[b+"attn_v.weight"] = []uint64{256, 128}
		dims[b+"attn_output.weight"] = []uint64{256, 256}
		dims[b+"ffn_gate.weight"] = []uint64{256, 768}
		dims[b+"ffn_up.weight"] = []uint64{256, 768}
		dims[b+"ffn_down.weight"] = []uint64{768, 256}
	}
	return names, dims
}

// wantType is the type a tiny-preset tensor has in each file type, by
// llama.cpp's rules: 1-D tensors stay F32; the tied token_embd is the output
// head (Q6_K for Q4_K_M and Q4_0); with 2 layers use_more_bits picks layer 1
// for attn_v and ffn_down in Q4_K_M.
func wantType(typ, name string) quant.Type {
	oneD := map[string]bool{"output_norm.weight": true, "rope_freqs.weight": true,
		"blk.0.attn_norm.weight": true, "blk.0.ffn_norm.weight": true,
		"blk.1.attn_norm.weight": true, "blk.1.ffn_norm.weight": true}
	if oneD[name] {
		return quant.F32
	}
	switch typ {
	case "Q4_K_M":
		if name == "token_embd.weight" || name == "blk.1.attn_v.weight" || name == "blk.1.ffn_down.weight" {
			return quant.Q6_K
		}
		return quant.Q4_K
	case "Q4_0":
		if name == "token_embd.weight" {
			return quant.Q6_K
		}
		return quant.Q4_0
	}
	t, _ := quant.ParseType(typ)
	return t
}

func TestTinyEveryType(t *testing.T) {
	names, dims := tinyTensors()
	var ref map[string][]float32 // F32 values, to compare the other types with
	for _, typ := range []string{"F32", "Q4_K_M", "F16", "BF16", "Q8_0", "Q4_0"} {
		t.Run(typ, func(t *testing.T) {
			f := writeModel(t, "tiny", typ, 7)
			ft, _ := ftype.Parse(typ)
			for key, want := range map[string]uint32{"llama.block_count": 2, "llama.embedding_length": 256,
				"llama.attention.head_count": 4, "llama.attention.head_count_kv": 2, "llama.feed_forward_length": 768,
				"llama.rope.dimension_count": 64, "llama.context_length": 131072, "general.file_type": ft.ID,
				"tokenizer.ggml.bos_token_id": 128000, "tokenizer.ggml.eos_token_id": 128009} {
				if got, err := f.Uint32(key); err != nil || got != want {
					t.Errorf("%s = %d (%v), want %d", key, got, err, want)
				}
			}
			if n, err := f.ArrayLen("tokenizer.ggml.tokens"); err != nil || n != 128256 {
				t.Errorf("tokenizer.ggml.tokens: %d (%v)", n, err)
			}
			if pre, _ := f.String("tokenizer.ggml.pre"); pre != "llama-bpe" {
				t.Errorf("tokenizer.ggml.pre = %q", pre)
			}
			if len(f.Tensors) != len(names) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(names))
			}
			values := map[string][]float32{}
			for i, ti := range f.Tensors {
				if ti.Name != names[i] {
					t.Errorf("tensor %d is %s, want %s", i, ti.Name, names[i])
					continue
				}
				if fmt.Sprint(ti.Dims) != fmt.Sprint(dims[ti.Name]) {
					t.Errorf("%s dims %v, want %v", ti.Name, ti.Dims, dims[ti.Name])
				}
				if want := wantType(typ, ti.Name); ti.Type != want {
					t.Errorf("%s is %s, want %s", ti.Name, ti.Type, want)
				}
				// Values are checked on every tensor but only the first
				// rows of the 128,256-row embedding, to keep the test quick.
				data, n := f.TensorData(&ti), ti.Elements()
				if ti.Name == "token_embd.weight" {
					rowBytes, _ := quant.RowSize(ti.Type, int64(ti.Dims[0]))
					data, n = data[:2048*rowBytes], 2048*ti.Dims[0]
				}
				v := make([]float32, n)
				if err := quant.Dequantize(ti.Type, data, v); err != nil {
					t.Fatalf("%s: %v", ti.Name, err)
				}
				values[ti.Name] = v
			}
			checkValues(t, values)
			switch typ {
			case "F32":
				ref = values
			case "Q4_K_M":
				// The Q4_K_M file holds the canonical blocks; F32 holds their
				// exact dequantization.
				for name, v := range values {
					if ref == nil {
						break
					}
					for i := range v {
						if v[i] != ref[name][i] {
							t.Fatalf("%s[%d]: Q4_K_M %g, F32 %g", name, i, v[i], ref[name][i])
						}
					}
				}
			default:
				if ref == nil {
					break
				}
				for name, v := range values {
					if e := numcmp.RelRMSE(ref[name], v); e > 0.15 {
						t.Errorf("%s: relative error against F32 %.3f", name, e)
					}
				}
			}
		})
	}
}

// checkValues checks that weights are finite and have the documented scale:
// RMS within 25% of the target standard deviation, norms 1 ± 0.05.
func checkValues(t *testing.T, values map[string][]float32) {
	t.Helper()
	target := map[string]float64{
		"token_embd.weight": 3 / 16.0, "attn_q.weight": math.Sqrt(2 / 256.0), "attn_k.weight": math.Sqrt(2 / 256.0),
		"attn_v.weight": 1 / 16.0, "ffn_gate.weight": 1 / 16.0, "ffn_up.weight": 1 / 16.0,
		"attn_output.weight": 0.5 / 16, "ffn_down.weight": 0.5 / math.Sqrt(768),
	}
	for name, v := range values {
		var sum, sq float64
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%s[%d] = %g", name, i, x)
			}
			sum += float64(x)
			sq += float64(x) * float64(x)
		}
		mean, rms := sum/float64(len(v)), math.Sqrt(sq/float64(len(v)))
		short := name
		if len(name) > 6 && name[:4] == "blk." {
			short = name[6:]
		}
		if name == "rope_freqs.weight" {
			continue
		}
		if want, ok := target[short]; ok {
			if math.Abs(rms/want-1) > 0.25 || math.Abs(mean) > 0.1*want {
				t.Errorf("%s: rms %.4g mean %.2g, want rms %.4g mean ≈ 0", name, rms, mean, want)
			}
			continue
		}
		for i, x := range v { // norm weights
			if x < 0.949 || x > 1.051 {
				t.Fatalf("%s[%d] = %g, want 1 ± 0.05", name, i, x)
			}
		}
	}
}

func digest(t *testing.T, w *gguf.Writer) string {
	t.Helper()
	h := sha256.New()
	if _, err := w.WriteTo(h); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// A seed fixes the file byte for byte, whatever the number of workers.
func TestDeterministic(t *testing.T) {
	a := digest(t, build(t, "tiny", "Q4_K_M", 11, 1))
	b := digest(t, build(t, "tiny", "Q4_K_M", 11, 3))
	c := digest(t, build(t, "tiny", "Q4_K_M", 12, 2))
	if a != b {
		t.Errorf("seed 11 with 1 and 3 workers: %s vs %s", a, b)
	}
	if a == c {
		t.Error("seeds 11 and 12 give the same file")
	}
}
