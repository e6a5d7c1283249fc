package llama

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/damascus-llm/damascus/model/tokenizer"
)

// HFDumpEnv names a directory to write stories260K's dequantized weights,
// tokens and the reference's per-layer hidden states into, for the
// Hugging Face transformers oracle (hfcheck/hf_oracle.py, run where
// transformers is installed).
const HFDumpEnv = "DAMASCUS_HF_DUMP"

func TestDumpForHF(t *testing.T) {
	dir := os.Getenv(HFDumpEnv)
	if dir == "" {
		t.Skipf("set %s=DIR to write the transformers oracle's inputs", HFDumpEnv)
	}
	m, tok := openStories(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("Once upon a time, there was a little girl named Lily. She loved to play", tokenizer.AddSpecial)
	if err != nil {
		t.Fatal(err)
	}
	var blob []float32
	type entry struct {
		Name   string `json:"name"`
		Rows   int    `json:"rows"`
		Cols   int    `json:"cols"`
		Offset int    `json:"offset"` // in float32 values
	}
	var manifest []entry
	addVec := func(name string, v []float32) {
		manifest = append(manifest, entry{name, 1, len(v), len(blob)})
		blob = append(blob, v...)
	}
	addMat := func(name string, w *Matrix) {
		manifest = append(manifest, entry{name, w.Rows, w.Cols, len(blob)})
		row := make([]float32, w.Cols)
		for r := range w.Rows {
			if err := w.DequantizeRow(row, r); err != nil {
				t.Fatal(err)
			}
			blob = append(blob, row...)
		}
	}
	addMat("token_embd", &m.Embed)
	for i := range m.Layers {
		L := &m.Layers[i]
		p := "blk." + strconv.Itoa(i) + "."
		addVec(p+"attn_norm", L.AttnNorm)
		addMat(p+"attn_q", &L.Q)
		addMat(p+"attn_k", &L.K)
		addMat(p+"attn_v", &L.V)
		addMat(p+"attn_output", &L.Out)
		addVec(p+"ffn_norm", L.FFNNorm)
		addMat(p+"ffn_gate", &L.Gate)
		addMat(p+"ffn_up", &L.Up)
		addMat(p+"ffn_down", &L.Down)
	}
	addVec("output_norm", m.Norm)
	addMat("output", &m.Output)

	// The reference's hidden states: [position][layer][dim], then logits.
	ref, err := m.NewReference(len(ids))
	if err != nil {
		t.Fatal(err)
	}
	var hidden, logits []float32
	ref.Capture = func(_, _ int, h []float32) { hidden = append(hidden, h...) }
	for _, id := range ids {
		l, err := ref.Eval(id)
		if err != nil {
			t.Fatal(err)
		}
		logits = append(logits, l...)
	}
	write := func(name string, v any) {
		data, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeF32 := func(name string, v []float32) {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.json", map[string]any{"config": m.Config, "tokens": ids, "tensors": manifest,
		"rope_freqs": m.FreqFactors, "tied": m.Tied})
	writeF32("weights.f32", blob)
	writeF32("hidden.f32", hidden)
	writeF32("logits.f32", logits)
	t.Logf("wrote %d tensors (%d values), %d tokens to %s", len(manifest), len(blob), len(ids), dir)
}
