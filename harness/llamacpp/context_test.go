package llamacpp

import (
	"math"
	"reflect"
	"testing"

	"github.com/damascus-llm/damascus/internal/testdata"
	"github.com/damascus-llm/damascus/model/sample"
)

// argmax is the engine's own greedy pick (the first largest logit).
var argmax = sample.Argmax

func openStories(t *testing.T, opts ContextOptions) (*Model, *Context) {
	t.Helper()
	requireLib(t)
	m, err := OpenModel(testdata.Stories260KGGUF.Require(t), ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	c, err := m.NewContext(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return m, c
}

func TestLogitsStories260K(t *testing.T) {
	m, c := openStories(t, ContextOptions{NCtx: 64, Threads: 2})
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.NVocab != 512 || info.NEmbd != 64 || info.NLayer != 5 {
		t.Errorf("model info %+v; want vocab 512, embd 64, 5 layers", info)
	}
	// "Once upon a time" with BOS: greedy decoding of stories260K from BOS
	// produces exactly these tokens, so each position's argmax is the next one.
	toks := []int32{1, 403, 407, 261, 378}
	all := []int{0, 1, 2, 3, 4}
	logits, err := c.Logits(toks, all)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range logits {
		if len(row) != 512 {
			t.Fatalf("position %d: %d logits, want 512", i, len(row))
		}
		for j, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("position %d: logit %d is %v", i, j, v)
			}
		}
		if i+1 < len(toks) && argmax(row) != int(toks[i+1]) {
			t.Errorf("position %d: argmax %d, want %d", i, argmax(row), toks[i+1])
		}
	}
	again, err := c.Logits(toks, all)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(logits, again) {
		t.Error("two evaluations of the same tokens differ")
	}
	// Asking for fewer positions, in another order, gives the same rows.
	some, err := c.Logits(toks, []int{4, 0})
	if err != nil {
		t.Fatal(err)
	}
	if !close32(some[0], logits[4], 1e-5) || !close32(some[1], logits[0], 1e-5) {
		t.Error("logits for positions [4 0] differ from those of the full request")
	}
	for _, bad := range [][]int{nil, {5}, {-1}} {
		if _, err := c.Logits(toks, bad); err == nil {
			t.Errorf("Logits accepted positions %v", bad)
		}
	}
	if _, err := c.Logits([]int32{1, 600}, []int{1}); err == nil {
		t.Error("Logits accepted token 600")
	}
}

// TestLogitsAcrossBatches checks that splitting the sequence over several
// llama_decode calls (n_batch 8) gives the logits of one call.
func TestLogitsAcrossBatches(t *testing.T) {
	_, one := openStories(t, ContextOptions{NCtx: 64, Threads: 1})
	_, split := openStories(t, ContextOptions{NCtx: 64, NBatch: 8, Threads: 1})
	toks := make([]int32, 20)
	for i := range toks {
		toks[i] = int32(1 + (i*37)%500)
	}
	a, err := one.Logits(toks, []int{3, 19})
	if err != nil {
		t.Fatal(err)
	}
	b, err := split.Logits(toks, []int{3, 19})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if !close32(a[i], b[i], 1e-4) {
			t.Errorf("row %d: one batch vs batches of 8 differ", i)
		}
	}
}

func close32(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i])-float64(b[i])) > tol*(1+math.Abs(float64(a[i]))) {
			return false
		}
	}
	return true
}

// TestLogitsKVCacheF32 checks that an F32 KV cache gives logits close to the
// F16 cache's (stories260K is small enough that they agree well) and keeps
// the greedy tokens.
func TestLogitsKVCacheF32(t *testing.T) {
	_, f16 := openStories(t, ContextOptions{NCtx: 64, Threads: 1})
	_, f32 := openStories(t, ContextOptions{NCtx: 64, Threads: 1, KVCacheF32: true})
	toks := []int32{1, 403, 407, 261, 378}
	a, err := f16.Logits(toks, []int{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f32.Logits(toks, []int{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	same := true
	for i := range a {
		if argmax(b[i]) != int(toks[i+2]) {
			t.Errorf("F32 KV position %d: argmax %d, want %d", i+1, argmax(b[i]), toks[i+2])
		}
		if !close32(a[i], b[i], 0.05) {
			t.Errorf("F32 KV position %d: logits far from the F16 cache's", i+1)
		}
		same = same && reflect.DeepEqual(a[i], b[i])
	}
	if same {
		t.Error("F32 and F16 KV caches gave bit-identical logits: the option had no effect")
	}
}
