package llama

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/testmodel"
)

// openTest writes a testmodel and loads it.
func openTest(t *testing.T, o testmodel.Options) *Model {
	t.Helper()
	_, m := openModel(t, testmodel.WriteTemp(t, o))
	return m
}

// openModel opens a GGUF file (closed when the test ends) and reads its model.
func openModel(t testing.TB, path string) (*gguf.File, *Model) {
	t.Helper()
	f := gguftest.Open(t, path)
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

// mustContext opens a context on m or fails the test; the caller closes it.
func mustContext(t testing.TB, m *Model, opts Options) *Context {
	t.Helper()
	c, err := m.NewContext(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// evalLogits evaluates tokens in a fresh context on m (closed before it
// returns) and returns a copy of the logits: of every position when all is
// set, else of the last.
func evalLogits(t testing.TB, m *Model, opts Options, tokens []int32, all bool) []float32 {
	t.Helper()
	c := mustContext(t, m, opts)
	defer c.Close()
	lg, err := c.Eval(tokens, all)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(lg)
}

// One NaN in a weight (issue 22) makes Eval fail with a *NonFiniteError
// naming the position, for the last row and for every row.
func TestEvalRefusesNonFiniteLogits(t *testing.T) {
	for _, all := range []bool{false, true} {
		m := openTest(t, testmodel.Options{NaNIn: "blk.1.ffn_down.weight"})
		c := mustContext(t, m, Options{NCtx: 16, Threads: 2})
		_, err := c.Eval([]int32{1, 5, 6}, all)
		var nf *NonFiniteError
		want := map[bool]int{false: 2, true: 0}[all]
		if !errors.As(err, &nf) || nf.Pos != want ||
			!strings.Contains(err.Error(), fmt.Sprintf("logits at position %d are not finite (NaN): the model's weights may be damaged", want)) {
			t.Errorf("all=%v: Eval = %v, want a NonFiniteError at position %d", all, err, want)
		}
		if c.Pos() != 0 {
			t.Errorf("all=%v: %d positions kept after the failed Eval, want 0", all, c.Pos())
		}
		c.Close()
	}
}

// A NaN in one token's embedding shows at that token's position only, and
// the failed positions are dropped from the cache.
func TestEvalNonFiniteAtItsPosition(t *testing.T) {
	m := openTest(t, testmodel.Options{NaNIn: "token_embd.weight"}) // token 0's first value
	c := mustContext(t, m, Options{NCtx: 16, Threads: 1})
	defer c.Close()
	if _, err := c.Eval([]int32{1, 5}, false); err != nil {
		t.Fatalf("finite tokens: %v", err)
	}
	_, err := c.Eval([]int32{0}, false)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Pos != 2 {
		t.Fatalf("token 0 at position 2: %v", err)
	}
	if c.Pos() != 2 {
		t.Fatalf("cache holds %d positions after the failure, want 2", c.Pos())
	}
	if _, err := c.Eval([]int32{5}, false); err != nil {
		t.Errorf("position 2 again with a finite token: %v", err)
	}
}

func TestNewContextRefusesAbsurdThreads(t *testing.T) {
	m := openTest(t, testmodel.Options{})
	if _, err := m.NewContext(Options{NCtx: 16, Threads: MaxThreads + 1}); err == nil || !strings.Contains(err.Error(), "threads is more than") {
		t.Errorf("%d threads: %v", MaxThreads+1, err)
	}
}

// loadErr writes a testmodel and returns FromGGUF's error, failing the test
// if loading allocated more than 64 MiB (the model itself is ~150 KiB).
func loadErr(t *testing.T, o testmodel.Options) error {
	t.Helper()
	f, err := gguf.Open(testmodel.WriteTemp(t, o))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = FromGGUF(f)
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 64<<20 {
		t.Errorf("loading allocated %d MiB", d>>20)
	}
	return err
}

// Hyperparameters are checked against the tensor directory and sane bounds
// before anything sized by them is allocated: block_count 5,000,000 cost
// 12 s and 4.26 GB before naming a missing tensor, 2^32-1 ran out of memory.
func TestAbsurdHyperparametersRefused(t *testing.T) {
	u := gguf.U32
	for _, c := range []struct {
		set  map[string]gguf.Value
		want string
	}{
		{map[string]gguf.Value{"llama.block_count": u(5_000_000)}, "llama.block_count is 5000000 but the file holds the tensors of 2 blocks (blk.0 to blk.1): the metadata or the file is damaged"},
		{map[string]gguf.Value{"llama.block_count": u(math.MaxUint32)}, "llama.block_count is 4294967295 but the file holds the tensors of 2 blocks"},
		{map[string]gguf.Value{"llama.block_count": u(3)}, "llama.block_count is 3 but the file holds the tensors of 2 blocks"},
		{map[string]gguf.Value{"llama.embedding_length": u(1 << 22), "llama.attention.key_length": u(8)}, "llama.embedding_length is 4194304, more than 1048576"},
		{map[string]gguf.Value{"llama.embedding_length": u(math.MaxUint32)}, "llama.embedding_length 4294967295 is not divisible by llama.attention.head_count 4"},
		{map[string]gguf.Value{"llama.feed_forward_length": u(1 << 20)}, "tensor blk.0.ffn_gate.weight has dims [32 64], want [32 1048576]"},
		{map[string]gguf.Value{"llama.attention.head_count": u(math.MaxUint32), "llama.attention.head_count_kv": u(1), "llama.attention.key_length": u(8)}, "llama.attention.head_count is 4294967295, more than 1048576"},
		{map[string]gguf.Value{"llama.attention.key_length": u(1 << 20), "llama.rope.dimension_count": u(1 << 20)}, "tensor blk.0.attn_q.weight has dims [32 32], want [32 4194304]"},
	} {
		if err := loadErr(t, testmodel.Options{Set: c.set}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v\nwant %q", c.set, err, c.want)
		}
	}
}

// embedding_length not divisible by head_count is said as such, not as a
// rope.dimension_count mismatch.
func TestHeadSizeNotDivisible(t *testing.T) {
	err := loadErr(t, testmodel.Options{Set: map[string]gguf.Value{
		"llama.attention.head_count": gguf.U32(5), "llama.attention.head_count_kv": gguf.U32(5)}})
	want := "llama.embedding_length 32 is not divisible by llama.attention.head_count 5, and no llama.attention.key_length gives the head size"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "dimension_count") {
		t.Errorf("%v\nwant %q", err, want)
	}
}

// A context length from damaged metadata (2^32-1) used as the context size
// is refused before the KV cache is allocated.
func TestHugeContextRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the memory check needs the machine's memory size (linux only)")
	}
	m := openTest(t, testmodel.Options{Set: map[string]gguf.Value{"llama.context_length": gguf.U32(math.MaxUint32)}})
	_, err := m.NewContext(Options{Threads: 1})
	if err == nil || !strings.Contains(err.Error(), "a context of 4294967295 positions needs") || !strings.Contains(err.Error(), "--ctx-size") {
		t.Errorf("NewContext: %v", err)
	}
	c := mustContext(t, m, Options{NCtx: 64, Threads: 1})
	c.Close()
}
