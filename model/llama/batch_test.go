package llama

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/model/synth"
	"github.com/damascus-llm/damascus/model/synth/synthtest"
	"github.com/damascus-llm/damascus/quant"
)

// batchModel is a synthetic Q4_K_M model (its products on the Q4_K and
// Q6_K matmul kernels): the tiny preset (groups of 2 query heads per KV
// head), or with gqa3 a wider one with groups of 3 as in the 3B.
func batchModel(t *testing.T, gqa3 bool) *Model {
	t.Helper()
	if !gqa3 {
		_, m, _ := synthModel(t, "tiny", "Q4_K_M")
		return m
	}
	p := synth.Preset{Name: "gqa3", SizeLabel: "test", Embedding: 768, Layers: 2, Heads: 12, KVHeads: 4, HeadDim: 64, FFN: 1024}
	synthModel(t, "tiny", "Q4_K_M") // the vocabulary, or a skip naming what is missing
	path := filepath.Join(t.TempDir(), "gqa3.gguf")
	synthtest.Write(t, p, "Q4_K_M", 11, path)
	_, m := openModel(t, path)
	return m
}

// streamPrompts are prompts of assorted lengths (some longer than a step).
func streamPrompts(vocab int) [][]int32 {
	var ps [][]int32
	for i, n := range []int{3, 17, 41, 1, 9, 30} {
		p := make([]int32, n)
		for j := range p {
			p[j] = int32((j*7919 + i*104729 + 13) % vocab)
		}
		ps = append(ps, p)
	}
	return ps
}

func argmax(l []float32) int32 {
	best := 0
	for i, v := range l {
		if v > l[best] {
			best = i
		}
	}
	return int32(best)
}

// decoded is one stream's greedy tokens and the logits each was drawn from.
type decoded struct {
	tokens []int32
	logits [][]float32
}

// decodeAlone runs one stream on a batch of its own: the whole prompt in
// one step, then a token a step.
func decodeAlone(t *testing.T, m *Model, opts Options, prompt []int32, gen int) decoded {
	t.Helper()
	b, err := m.NewBatch(opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var d decoded
	in := prompt
	for range gen {
		l, err := b.Step([]Span{{Seq: 0, Tokens: in, Logits: true}})
		if err != nil {
			t.Fatal(err)
		}
		d.logits = append(d.logits, append([]float32(nil), l...))
		d.tokens = append(d.tokens, argmax(l))
		in = d.tokens[len(d.tokens)-1:]
	}
	return d
}

// decodeTogether runs the streams on one batch as a server would: stream i
// joins at step 2i in sequence (i+2) mod n; each step takes every decoding
// stream's next token, then prefill chunks of the others (chunk tokens at
// most, within the step's room of NBatch).
func decodeTogether(t *testing.T, m *Model, opts Options, prompts [][]int32, gen, chunk int) []decoded {
	t.Helper()
	ns := len(prompts)
	b, err := m.NewBatch(opts, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := make([]decoded, ns)
	fed := make([]int, ns) // prompt tokens evaluated
	done := 0
	for step := 0; done < ns; step++ {
		var spans []Span
		var who []int
		room := b.NBatch()
		for i := range ns {
			if step >= 2*i && fed[i] == len(prompts[i]) && len(out[i].tokens) > 0 && len(out[i].tokens) < gen {
				spans = append(spans, Span{Seq: (i + 2) % ns, Tokens: out[i].tokens[len(out[i].tokens)-1:], Logits: true})
				who = append(who, i)
				room--
			}
		}
		for i := range ns {
			if step < 2*i || fed[i] == len(prompts[i]) || room == 0 {
				continue
			}
			k := min(chunk, room, len(prompts[i])-fed[i])
			spans = append(spans, Span{Seq: (i + 2) % ns, Tokens: prompts[i][fed[i] : fed[i]+k], Logits: fed[i]+k == len(prompts[i])})
			who = append(who, i)
			fed[i] += k
			room -= k
		}
		if len(spans) == 0 {
			continue
		}
		l, err := b.Step(spans)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		V := m.Config.Vocab
		r := 0
		for si, sp := range spans {
			if !sp.Logits {
				continue
			}
			i := who[si]
			row := l[r*V : (r+1)*V]
			r++
			out[i].logits = append(out[i].logits, append([]float32(nil), row...))
			out[i].tokens = append(out[i].tokens, argmax(row))
			if len(out[i].tokens) == gen {
				done++
			}
		}
	}
	return out
}

// A stream's logits, bit for bit, and so its greedy tokens do not depend on
// what else is in the batch: each stream decoded alone against all of them
// decoded together, joining at different steps, prefilled in chunks beside
// the others' decode rows, in other sequences. Over the F32 and F16 caches,
// on 1 and 2 threads, with groups of 2 and 3 query heads per KV head.
func TestBatchIndependentOfCompanions(t *testing.T) {
	models := map[bool]*Model{}
	for _, c := range []struct {
		gqa3    bool
		kv      quant.Type
		threads int
	}{
		{false, quant.F32, 1}, {false, quant.F32, 2}, {false, quant.F16, 1}, {false, quant.F16, 2},
		{true, quant.F32, 2}, {true, quant.F16, 1}, // the wider model costs more: two of its cases
	} {
		if models[c.gqa3] == nil {
			models[c.gqa3] = batchModel(t, c.gqa3)
		}
		m := models[c.gqa3]
		prompts := streamPrompts(m.Config.Vocab)
		t.Run(fmt.Sprintf("gqa3=%v/%s/threads=%d", c.gqa3, c.kv, c.threads), func(t *testing.T) {
			const gen = 8
			together := decodeTogether(t, m, Options{NCtx: 96, NBatch: 24, Threads: c.threads, KVType: c.kv}, prompts, gen, 7)
			for i, p := range prompts {
				alone := decodeAlone(t, m, Options{NCtx: 96, NBatch: 64, Threads: c.threads, KVType: c.kv}, p, gen)
				for g := range gen {
					a, b := alone.logits[g], together[i].logits[g]
					if d := firstDiff(a, b); d >= 0 {
						t.Fatalf("stream %d, token %d: logit %d is %v alone, %v in the batch", i, g, d, a[d], b[d])
					}
				}
				if fmt.Sprint(alone.tokens) != fmt.Sprint(together[i].tokens) {
					t.Errorf("stream %d: %v alone, %v together", i, alone.tokens, together[i].tokens)
				}
			}
		})
	}
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// A Batch computes what a Context does: each stream's logits, fed the same
// tokens, agree with a Context's to float rounding (the two round their
// products differently: matmul against matvec), so a wrong position,
// sequence or cache row would show far beyond the tolerance.
//
// The bound has two parts: every logit within 2 % of the largest, and the
// median step within 1e-4. A wrong position, sequence or cache row moves
// every step; rounding moves a few, and the tiny model's random weights
// carry one across a Q8_K step now and then (1 % of the largest logit at
// the 41-token prompt's last tokens, the interleaved layout's kernels
// with the Context's prompts through the batched attention or through the
// matmul, measured 2026-12-04; its logits move as much between the stored
// and the naive matvec on some tokens).
func TestBatchAgreesWithContext(t *testing.T) {
	m := batchModel(t, false)
	prompts := streamPrompts(m.Config.Vocab)
	const gen = 8
	together := decodeTogether(t, m, Options{NCtx: 96, NBatch: 24, Threads: 2}, prompts, gen, 5)
	c := mustContext(t, m, Options{NCtx: 96, Threads: 2})
	defer c.Close()
	worst := 0.0
	var rels []float64
	for i, p := range prompts {
		if err := c.Truncate(0); err != nil {
			t.Fatal(err)
		}
		in := p
		for g := range gen {
			l, err := c.Eval(in, false)
			if err != nil {
				t.Fatal(err)
			}
			got := together[i].logits[g]
			scale, diff := 0.0, 0.0
			for v := range l {
				scale = max(scale, math.Abs(float64(l[v])))
				diff = max(diff, math.Abs(float64(l[v]-got[v])))
			}
			rel := diff / scale
			worst = max(worst, rel)
			rels = append(rels, rel)
			in = together[i].tokens[g : g+1] // the batch's token: the same inputs
		}
	}
	slices.Sort(rels)
	median := rels[len(rels)/2]
	t.Logf("largest logit difference, relative to the largest logit: %.2e (median step %.2e)", worst, median)
	if worst > 2e-2 || median > 1e-4 {
		t.Errorf("a batch's logits differ from a context's by up to %.2e of the largest logit, the median step by %.2e", worst, median)
	}
}

// Bad steps are refused with an error naming the span, and change nothing.
func TestBatchBadSteps(t *testing.T) {
	m, _ := openStories(t)
	b, err := m.NewBatch(Options{NCtx: 16, NBatch: 8, Threads: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Step([]Span{{Seq: 1, Tokens: []int32{1, 2, 3}, Logits: true}}); err != nil {
		t.Fatal(err)
	}
	V := int32(m.Config.Vocab)
	for _, c := range []struct {
		spans []Span
		want  string
	}{
		{nil, "no spans"},
		{[]Span{{Seq: 2, Tokens: []int32{1}}}, "sequence 2 of 2"},
		{[]Span{{Seq: -1, Tokens: []int32{1}}}, "sequence -1 of 2"},
		{[]Span{{Seq: 0, Tokens: []int32{1}}, {Seq: 0, Tokens: []int32{2}}}, "appears twice"},
		{[]Span{{Seq: 0}}, "no tokens"},
		{[]Span{{Seq: 0, Tokens: []int32{V}}}, "outside the vocabulary"},
		{[]Span{{Seq: 0, Tokens: make([]int32, 5)}, {Seq: 1, Tokens: make([]int32, 4)}}, "the batch holds 8"},
		{[]Span{{Seq: 1, Tokens: make([]int32, 14)}}, "exceed the context length 16"},
	} {
		if _, err := b.Step(c.spans); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Step(%v) = %v, want an error containing %q", c.spans, err, c.want)
		}
	}
	if b.Pos(0) != 0 || b.Pos(1) != 3 {
		t.Errorf("positions %d, %d after refused steps, want 0, 3", b.Pos(0), b.Pos(1))
	}
	if err := b.Truncate(2, 0); err == nil {
		t.Error("Truncate of a sequence out of range accepted")
	}
	if _, err := m.NewBatch(Options{}, 0); err == nil {
		t.Error("a batch of no sequences accepted")
	}
	if _, err := m.NewBatch(Options{NCtx: 16, Device: DeviceCUDA}, 2); err == nil || !strings.Contains(err.Error(), "CPU only") {
		t.Errorf("a batch on the GPU: %v, want a refusal naming the CPU", err)
	}
}
