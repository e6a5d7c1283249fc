package llama

import (
	"math"
	"strings"
	"testing"
)

// Decoding a token allocates nothing in this package: buffers, cache and the
// worker pool are all set up in NewContext. The attention kernel is swapped
// for a non-allocating one because variants/naive.Attention allocates its
// score buffer on every call (a kernel matter, reported).
func TestDecodeDoesNotAllocate(t *testing.T) {
	m, _ := openStories(t)
	c, err := m.NewContext(Options{NCtx: 256, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One score buffer per KV head: workers split the heads, never share one.
	cfg := m.Config
	scores := make([][]float32, cfg.KVHeads)
	for i := range scores {
		scores[i] = make([]float32, 256)
	}
	c.attn = func(out, q, k, v []float32, nHeads, nKV, hd, nCtx int, scale float32) {
		off := cap(c.q) - cap(q) // q's offset into the query buffer
		kvh := off / (nHeads * hd) % cfg.KVHeads
		attendNoAlloc(out, q, k, v, nHeads, nKV, hd, nCtx, scale, scores[kvh][:nCtx])
	}
	tok := []int32{1}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Eval(tok, false); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per decoded token", allocs)
	}
}

func TestEvalErrors(t *testing.T) {
	m, _ := openStories(t)
	c, err := m.NewContext(Options{NCtx: 8, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Eval(make([]int32, 9), false); err == nil || !strings.Contains(err.Error(), "context length 8") {
		t.Errorf("9 tokens in a context of 8: %v", err)
	}
	if _, err := c.Eval([]int32{int32(m.Config.Vocab)}, false); err == nil || !strings.Contains(err.Error(), "vocabulary") {
		t.Errorf("token past the vocabulary: %v", err)
	}
	if _, err := c.Eval([]int32{1, 2, 3}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Truncate(4); err == nil {
		t.Error("truncate beyond the cached positions accepted")
	}
	if err := c.Truncate(1); err != nil || c.Pos() != 1 {
		t.Errorf("truncate to 1: %v, pos %d", err, c.Pos())
	}
	if _, err := m.NewContext(Options{KVType: 8}); err == nil {
		t.Error("a Q8_0 KV cache was accepted")
	}
}

func attendNoAlloc(out, q, k, v []float32, nHeads, nKV, hd, nCtx int, scale float32, s []float32) {
	group := nHeads / nKV
	for h := range nHeads {
		g := h / group
		maxs := float32(-1e30)
		for t := range nCtx {
			var d float32
			for i := range hd {
				d += q[h*hd+i] * k[(t*nKV+g)*hd+i]
			}
			s[t] = d * scale
			maxs = max(maxs, s[t])
		}
		var sum float32
		for t := range nCtx {
			s[t] = float32(math.Exp(float64(s[t] - maxs)))
			sum += s[t]
		}
		for i := range hd {
			var acc float32
			for t := range nCtx {
				acc += s[t] * v[(t*nKV+g)*hd+i]
			}
			out[h*hd+i] = acc / sum
		}
	}
}
