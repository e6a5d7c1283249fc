package serve

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

// /v1/embeddings against the engine called directly: the same tokens (BOS
// added, as llama-server does), the same pooled unit vector, in every input
// form, as floats and as base64; and the refusals.
func TestEmbeddings(t *testing.T) {
	ld := loadTiny(t)
	emb, err := NewContextEmbedder(tinyContext(t, ld, 64), ld.Model, llama.PoolMean)
	if err != nil {
		t.Fatal(err)
	}
	ts, s := testServer(t, Config{Embedder: emb})
	texts := []string{"The quick brown fox", "jumps over the lazy dog"}
	direct := tinyContext(t, ld, 64)
	want := make([][]float32, len(texts))
	ids := make([][]int32, len(texts))
	for i, text := range texts {
		if ids[i], err = s.cfg.Tokenizer.Encode(text, tokenizer.AddSpecial|tokenizer.ParseSpecial); err != nil {
			t.Fatal(err)
		}
		h, err := direct.HiddenStates(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		want[i] = llama.Pool(nil, h, len(ids[i]), ld.Model.Config.Dim, llama.PoolMean, true)
	}
	idsJSON, _ := json.Marshal(ids)
	first, _ := json.Marshal(ids[0])
	for _, c := range []struct{ name, body string }{
		{"strings", `{"input":["The quick brown fox","jumps over the lazy dog"],"model":"tiny"}`},
		{"token arrays", `{"input":` + string(idsJSON) + `}`},
		{"one string", `{"input":"The quick brown fox"}`},
		{"one token array", `{"input":` + string(first) + `}`},
		{"base64", `{"input":["The quick brown fox","jumps over the lazy dog"],"encoding_format":"base64"}`},
	} {
		code, v, raw := post(t, ts, "/v1/embeddings", c.body)
		if code != 200 {
			t.Fatalf("%s: %d %s", c.name, code, raw)
		}
		data := v["data"].([]any)
		n := len(texts)
		if strings.HasPrefix(c.name, "one") {
			n = 1
		}
		if len(data) != n || v["object"] != "list" || v["model"] != "tiny" {
			t.Fatalf("%s: %s", c.name, raw)
		}
		tokens := 0
		for i, d := range data {
			d := d.(map[string]any)
			if d["index"].(float64) != float64(i) || d["object"] != "embedding" {
				t.Errorf("%s: item %d: %v", c.name, i, d)
			}
			got := decodeEmbedding(t, d["embedding"])
			if len(got) != len(want[i]) {
				t.Fatalf("%s: item %d has %d values, want %d", c.name, i, len(got), len(want[i]))
			}
			var norm float64
			for k := range got {
				norm += float64(got[k]) * float64(got[k])
				if got[k] != want[i][k] {
					t.Fatalf("%s: item %d value %d: %v, the engine gives %v", c.name, i, k, got[k], want[i][k])
				}
			}
			if math.Abs(norm-1) > 1e-5 {
				t.Errorf("%s: item %d has squared length %v, want 1", c.name, i, norm)
			}
			tokens += len(ids[i])
		}
		if u := v["usage"].(map[string]any); u["prompt_tokens"].(float64) != float64(tokens) || u["total_tokens"].(float64) != float64(tokens) {
			t.Errorf("%s: usage %v, want %d tokens", c.name, u, tokens)
		}
	}
	for _, c := range []struct{ body, want string }{
		{`{}`, "input: missing"},
		{`{"input":[]}`, "empty array"},
		{`{"input":5}`, "want a string"},
		{`{"input":[[]]}`, "input 0 is empty"},
		{`{"input":[1,999999]}`, "999999"},
		{`{"input":"` + strings.Repeat("fox ", 80) + `"}`, "more than the 64"},
		{`{"input":"a","encoding_format":"int8"}`, "encoding_format"},
		{`{"input":"a","dimensions":8}`, "dimensions"},
	} {
		if code, _, raw := post(t, ts, "/v1/embeddings", c.body); code != 400 || !strings.Contains(raw, c.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", c.body, code, raw, c.want)
		}
	}
	plain, _ := testServer(t, Config{})
	if code, _, raw := post(t, plain, "/v1/embeddings", `{"input":"a"}`); code != 501 || !strings.Contains(raw, "--embeddings") {
		t.Errorf("without an embedder: %d %s, want 501 naming --embeddings", code, raw)
	}
	if _, err := NewContextEmbedder(direct, ld.Model, llama.PoolNone); err == nil {
		t.Error("pooling none accepted for /v1/embeddings")
	}
}

// decodeEmbedding reads an item's floats or base64 float32 bytes.
func decodeEmbedding(t *testing.T, e any) []float32 {
	t.Helper()
	switch e := e.(type) {
	case []any:
		out := make([]float32, len(e))
		for i, x := range e {
			out[i] = float32(x.(float64))
		}
		return out
	case string:
		b, err := base64.StdEncoding.DecodeString(e)
		if err != nil || len(b)%4 != 0 {
			t.Fatalf("base64 embedding: %v (%d bytes)", err, len(b))
		}
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out
	}
	t.Fatalf("embedding of type %T", e)
	return nil
}
