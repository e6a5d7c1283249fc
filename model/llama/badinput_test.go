package llama

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/testmodel"
	"github.com/damascus-llm/damascus/model/gguf"
)

// openTest writes a testmodel and loads it.
func openTest(t *testing.T, o testmodel.Options) *Model {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.gguf")
	if err := testmodel.Write(p, o); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// One NaN in a weight (issue 22) makes Eval fail with a *NonFiniteError
// naming the position, for the last row and for every row.
func TestEvalRefusesNonFiniteLogits(t *testing.T) {
	for _, all := range []bool{false, true} {
		m := openTest(t, testmodel.Options{NaNIn: "blk.1.ffn_down.weight"})
		c, err := m.NewContext(Options{NCtx: 16, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Eval([]int32{1, 5, 6}, all)
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
	c, err := m.NewContext(Options{NCtx: 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Eval([]int32{1, 5}, false); err != nil {
		t.Fatalf("finite tokens: %v", err)
	}
	_, err = c.Eval([]int32{0}, false)
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
