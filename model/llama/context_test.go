package llama

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
)

// Decoding a token allocates nothing in this package: buffers, cache and the
// worker pool are all set up in NewContext. The attention kernel is swapped
// for a non-allocating one because variants/naive.Attention allocates its
// score buffer on every call (a kernel matter, reported).
func TestDecodeDoesNotAllocate(t *testing.T) {
	m, _ := openStories(t)
	c := mustContext(t, m, Options{NCtx: 256, Threads: 2})
	defer c.Close()
	// One score buffer per KV head: workers split the heads, never share one.
	cfg := m.Config
	scores := make([][]float32, cfg.KVHeads)
	for i := range scores {
		scores[i] = make([]float32, 256)
	}
	c.k.attn = func(out, q, k, v []float32, nHeads, nKV, hd, nCtx int, scale float32) {
		off := cap(c.s.q) - cap(q) // q's offset into the query buffer
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

// Prefill allocates nothing either: its row tasks and products dispatch
// method values made in NewContext. The F16 cache keeps attention in this
// package (attendF16 and its per-worker score buffers).
func TestPrefillDoesNotAllocate(t *testing.T) {
	m, _ := openStories(t)
	c := mustContext(t, m, Options{NCtx: 256, Threads: 2, KVType: quant.F16})
	defer c.Close()
	tokens := make([]int32, 3*minPoolRows) // large enough for the pool
	for i := range tokens {
		tokens[i] = int32(1 + i)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := c.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Eval(tokens, true); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per prefill of %d tokens", allocs, len(tokens))
	}
}

// Splitting rows over workers must not change a bit: every row goes through
// the same kernels whichever worker takes it. The prompt spans several
// batches, the last of 20 below minPoolRows (run inline), and decode follows.
// So for SetThreads between them (a bench's depth prompt on many workers,
// its decode on few), up or down; it refuses what the pool cannot give.
func TestEvalSameForAnyThreads(t *testing.T) {
	m, _ := openStories(t)
	prompt := make([]int32, 42)
	for i := range prompt {
		prompt[i] = int32(1 + i*37%(m.Config.Vocab-1))
	}
	next := []int32{7, 99, 311}
	// run returns the logits of every prompt token, then of each decoded
	// one, the prompt on prefill of opts.Threads workers and the decode on
	// decode (0: all of them).
	run := func(opts Options, prefill, decode int) []float32 {
		c := mustContext(t, m, opts)
		defer c.Close()
		setThreads := func(n int) {
			if n == 0 {
				return
			}
			if err := c.SetThreads(n); err != nil {
				t.Fatal(err)
			}
			if c.Threads() != n || c.Options().Threads != opts.Threads {
				t.Fatalf("after SetThreads(%d) of %d: Threads %d, Options().Threads %d", n, opts.Threads, c.Threads(), c.Options().Threads)
			}
		}
		setThreads(prefill)
		lg, err := c.Eval(prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		out := append([]float32(nil), lg...)
		setThreads(decode)
		for _, tok := range next {
			lg, err := c.Eval([]int32{tok}, false)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, lg...)
		}
		for _, n := range []int{0, -1, opts.Threads + 1} {
			before := c.Threads()
			if err := c.SetThreads(n); err == nil || c.Threads() != before {
				t.Errorf("SetThreads(%d) of %d workers: %v, Threads %d", n, opts.Threads, err, c.Threads())
			}
		}
		return out
	}
	for _, kv := range []quant.Type{quant.F32, quant.F16} {
		for _, nb := range []int{16, 20} {
			t.Run(fmt.Sprintf("kv=%s/batch=%d", kv, nb), func(t *testing.T) {
				opts := Options{NCtx: 64, NBatch: nb, Threads: 1, KVType: kv}
				want := run(opts, 0, 0)
				for _, r := range [][3]int{{3, 0, 0}, {4, 4, 1}, {4, 1, 4}, {3, 2, 3}} {
					opts.Threads = r[0]
					got := run(opts, r[1], r[2])
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							V := m.Config.Vocab
							t.Fatalf("%d workers (prefill on %d, decode on %d; 0: all): row %d logit %d is %v, 1 thread %v", r[0], r[1], r[2], i/V, i%V, got[i], want[i])
						}
					}
				}
			})
		}
	}
}

func TestEvalErrors(t *testing.T) {
	m, _ := openStories(t)
	c := mustContext(t, m, Options{NCtx: 8, Threads: 1})
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

// A prepared batch (activations laid out once, rows dealt in chunks to
// whichever worker is free) computes every row with the same kernel as the
// static split and as one worker: the logits agree bit for bit. The tiny
// synthetic Q4_K_M model has Q4_K and Q6_K matrices of 128 to 768 rows, so
// several chunks per matrix and tasks of two layouts; 70 tokens in batches
// of 64 leave a ragged pair.
func TestPreparedBatchSameAsStaticSplit(t *testing.T) {
	// Every batch through the matmul: the 6- and 20-token batches would
	// otherwise take the batched decode kernel (the small-batch crossover,
	// which the static split leaves off; TestSmallBatchCrossover).
	t.Setenv(promoted.SmallBatchEnv, "0")
	_, m, _ := synthModel(t, "tiny", "Q4_K_M")
	prompt := make([]int32, 70)
	for i := range prompt {
		prompt[i] = int32(1 + i*37%(m.Config.Vocab-1))
	}
	run := func(opts Options) []float32 {
		c := mustContext(t, m, opts)
		defer c.Close()
		if opts.Threads > 1 && !opts.StaticSplit && c.k.layers[0].up.prep == nil {
			t.Skip("the matmul kernel picked here has no prepared form")
		}
		lg, err := c.Eval(prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		out := append([]float32(nil), lg...)
		// The layout buffers are made by the first batch; later ones
		// allocate nothing. The garbage collector is held off while
		// counting (a collection empties the kernels' sync.Pools), and the
		// fewest of three counts is taken: with 16 workers on 2 cores a
		// count now and then holds 2-5 allocations (about 1 run in 4 on
		// the loaded machine; a memory profile put them in parking on the
		// pool's wake channel and in a worker's kernel scratch growing when
		// the dealing first hands it a larger chunk). A path that
		// allocates per prefill does so in every count.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		allocs := math.Inf(1)
		for range 3 {
			allocs = min(allocs, testing.AllocsPerRun(3, func() {
				if err := c.Truncate(0); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Eval(prompt, true); err != nil {
					t.Fatal(err)
				}
			}))
		}
		if allocs != 0 {
			t.Errorf("%+v: %.1f allocations per prefill", opts, allocs)
		}
		return out
	}
	want := run(Options{NCtx: 128, NBatch: 64, Threads: 1})
	for _, opts := range []Options{
		{NCtx: 128, NBatch: 64, Threads: 3},
		{NCtx: 128, NBatch: 20, Threads: 16}, // more workers than token pairs and than some matrices' chunks
		{NCtx: 128, NBatch: 64, Threads: 2, StaticSplit: true},
	} {
		got := run(opts)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				V := m.Config.Vocab
				t.Fatalf("%+v: token %d logit %d is %v, one worker's %v", opts, i/V, i%V, got[i], want[i])
			}
		}
	}
}

// A prefill step of at most promoted.SmallBatchRows rows goes through the
// batched decode kernel (issue 19: the crossover by rows), a longer one
// through the matmul. Through the batched kernel every token's products are
// the matvec's whatever the workers, so the logits agree bit for bit over
// thread counts and batch splits below the crossover, and with the matmul's
// (crossover off) to rounding.
func TestSmallBatchCrossover(t *testing.T) {
	_, m, _ := synthModel(t, "tiny", "Q4_K_M")
	prompt := make([]int32, 30)
	for i := range prompt {
		prompt[i] = int32(1 + i*37%(m.Config.Vocab-1))
	}
	run := func(rows string, opts Options) ([]float32, *Context) {
		t.Setenv(promoted.SmallBatchEnv, rows)
		c := mustContext(t, m, opts)
		defer c.Close()
		lg, err := c.Eval(prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), lg...), c
	}
	mm, c := run("0", Options{NCtx: 64, NBatch: 32, Threads: 2})
	if c.k.smallRows != 0 {
		t.Fatalf("%s=0: smallRows %d", promoted.SmallBatchEnv, c.k.smallRows)
	}
	want, c := run("32", Options{NCtx: 64, NBatch: 32, Threads: 1})
	if up := c.k.layers[0].up; up.bprep == nil && up.blayout == nil {
		if c.k.smallRows != 0 {
			t.Fatalf("crossover %d without a prepared batched decode kernel or one over a weight layout", c.k.smallRows)
		}
		t.Skip("the batched decode kernel picked here has no prepared form and reads no layout: the crossover stays off")
	}
	if c.k.smallRows != 32 {
		t.Fatalf("%s=32: smallRows %d", promoted.SmallBatchEnv, c.k.smallRows)
	}
	// Bit for bit where the batched attention's blocks of 16 query rows
	// (8 tokens of the tiny model's head pairs) fall alike: its sums run
	// over the positions a block's last token sees, so a split that moves
	// a token to another block rounds its attention differently (a last
	// bit, now and then: with the interleaved layout's products it showed
	// at 7-token steps, where the products are the same bits;
	// attention_batch=naive then agrees bit for bit too). A 7-token split,
	// which sends tokens through the batched kernels' one-token tails,
	// agrees to float rounding.
	for _, c := range []struct {
		opts  Options
		exact bool
	}{{Options{NCtx: 64, NBatch: 32, Threads: 3}, true}, {Options{NCtx: 64, NBatch: 8, Threads: 2}, true}, {Options{NCtx: 64, NBatch: 7, Threads: 2}, false}} {
		got, _ := run("32", c.opts)
		var scale float64
		for i := range want {
			scale = max(scale, math.Abs(float64(want[i])))
		}
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); (c.exact && math.Float32bits(got[i]) != math.Float32bits(want[i])) || d > 1e-5*scale {
				V := m.Config.Vocab
				t.Fatalf("%+v: token %d logit %d is %v, one worker's %v", c.opts, i/V, i%V, got[i], want[i])
			}
		}
	}
	// The two kernels round differently (the matmul's int32 sums per
	// sub-block, the batched kernel's int16 pairs), and the random weights of
	// the tiny model carry the differences through its layers: the bound is
	// on the largest difference against the largest logit.
	var worst, scale float64
	for i := range want {
		worst = max(worst, math.Abs(float64(want[i]-mm[i])))
		scale = max(scale, math.Abs(float64(mm[i])))
	}
	if worst > 0.02*scale {
		t.Errorf("batched decode kernel and matmul differ by up to %g in a logit (largest %g)", worst, scale)
	}
	t.Logf("batched decode kernel against the matmul: logits within %g (largest %g)", worst, scale)
	t.Setenv(promoted.SmallBatchEnv, "x")
	if c, err := m.NewContext(Options{NCtx: 64}); err == nil {
		c.Close()
		t.Errorf("%s=x: no error", promoted.SmallBatchEnv)
	}
}

// The weight rows per dealt chunk of a prefill matmul
// (promoted.BatchChunkRows, DAMASCUS_BATCH_CHUNK) only change which worker
// computes a row tile, never its bits: the logits agree bit for bit over
// chunk sizes, and a chunk that is not a positive multiple of 16 rows is
// refused by name.
func TestBatchChunk(t *testing.T) {
	_, m, _ := synthModel(t, "tiny", "Q4_K_M")
	t.Setenv(promoted.SmallBatchEnv, "0")
	prompt := make([]int32, 30)
	for i := range prompt {
		prompt[i] = int32(1 + i*37%(m.Config.Vocab-1))
	}
	var want []float32
	for _, rows := range []string{"64", "16", "32", "128"} {
		t.Setenv(promoted.BatchChunkEnv, rows)
		c := mustContext(t, m, Options{NCtx: 64, NBatch: 32, Threads: 2})
		if got := strconv.Itoa(c.k.chunkRows); got != rows {
			t.Fatalf("%s=%s: chunkRows %s", promoted.BatchChunkEnv, rows, got)
		}
		lg, err := c.Eval(prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = append([]float32(nil), lg...)
		}
		for i := range want {
			if math.Float32bits(lg[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s=%s: logit %d is %v, with 64-row chunks %v", promoted.BatchChunkEnv, rows, i, lg[i], want[i])
			}
		}
		c.Close()
	}
	for _, bad := range []string{"x", "0", "24", "-16"} {
		t.Setenv(promoted.BatchChunkEnv, bad)
		c, err := m.NewContext(Options{NCtx: 64})
		if err == nil {
			c.Close()
			t.Errorf("%s=%s: no error", promoted.BatchChunkEnv, bad)
		} else if !strings.Contains(err.Error(), promoted.BatchChunkEnv) {
			t.Errorf("%s=%s: error %q does not name it", promoted.BatchChunkEnv, bad, err)
		}
	}
}

// The chunks a worker takes at once in a decode step
// (promoted.DealRunChunks, DAMASCUS_DEAL_RUN) only change which call
// computes a row, never its bits: with chunks shrunk to 2 KiB of weights,
// so that runs cross from one matrix to the next, the decode's logits
// agree bit for bit over runs of 1, 3 and 8 chunks; a run that is not a
// positive count is refused by name.
func TestDealRun(t *testing.T) {
	_, m, _ := synthModel(t, "tiny", "Q4_K_M")
	defer func(b int) { dealBytes = b }(dealBytes)
	dealBytes = 2 << 10
	var want [][]float32
	for _, run := range []string{"1", "3", "8"} {
		t.Setenv(promoted.DealRunEnv, run)
		c := mustContext(t, m, Options{NCtx: 64, Threads: 2})
		if got := strconv.Itoa(c.k.dealRun); got != run {
			t.Fatalf("%s=%s: dealRun %s", promoted.DealRunEnv, run, got)
		}
		tok := []int32{1, 17, 99}
		for step := range 4 {
			lg, err := c.Eval(tok, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) <= step {
				want = append(want, append([]float32(nil), lg...))
			}
			for i := range want[step] {
				if math.Float32bits(lg[i]) != math.Float32bits(want[step][i]) {
					t.Fatalf("%s=%s, step %d: logit %d is %v, with runs of 1 %v", promoted.DealRunEnv, run, step, i, lg[i], want[step][i])
				}
			}
			tok = []int32{int32(5 + 11*step)}
		}
		c.Close()
	}
	for _, bad := range []string{"x", "0", "-2"} {
		t.Setenv(promoted.DealRunEnv, bad)
		c, err := m.NewContext(Options{NCtx: 64})
		if err == nil {
			c.Close()
			t.Errorf("%s=%s: no error", promoted.DealRunEnv, bad)
		} else if !strings.Contains(err.Error(), promoted.DealRunEnv) {
			t.Errorf("%s=%s: error %q does not name it", promoted.DealRunEnv, bad, err)
		}
	}
}
