package llama

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/cuda"
)

// logitsDumpEnv names the logitsdump executable (harness/llamacpp/logitsdump)
// that the tests below hold Damascus's logits to: llama.cpp's at every
// position, from its public API, built against whichever llama.cpp libraries
// the machine has — the npm CPU build here, the CUDA build of the pinned
// source on the H200 (scripts/device-e2e.sh, phase gpu).
const logitsDumpEnv = "DAMASCUS_LOGITSDUMP"

// requireLogitsDump returns the logitsdump executable, or skips saying what
// is missing and how to build it.
func requireLogitsDump(t *testing.T) string {
	t.Helper()
	exe := os.Getenv(logitsDumpEnv)
	if exe == "" {
		t.Skipf("llama.cpp logitsdump tests skipped: $%s is not set (build it with harness/llamacpp/logitsdump/build.sh SRC LIBDIR OUT, then set %s=OUT)", logitsDumpEnv, logitsDumpEnv)
	}
	if fi, err := os.Stat(exe); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("$%s=%s is not an executable file (err %v)", logitsDumpEnv, exe, err)
	}
	return exe
}

// dumpHeader is logitsdump's JSON sidecar.
type dumpHeader struct {
	NVocab             int      `json:"n_vocab"`
	Positions          int      `json:"positions"`
	Pos                []int    `json:"pos"`
	Tokens             []int32  `json:"tokens"`
	NLayer             int      `json:"n_layer"`
	GPULayersRequested int      `json:"gpu_layers_requested"`
	Offloaded          *string  `json:"offloaded"`
	SupportsGPUOffload bool     `json:"supports_gpu_offload"`
	Devices            []string `json:"devices"`
	Buffers            []string `json:"buffers"`
	NCtx               int      `json:"n_ctx"`
	NBatch             int      `json:"n_batch"`
	NUbatch            int      `json:"n_ubatch"`
	TypeK              string   `json:"type_k"`
	TypeV              string   `json:"type_v"`
	FlashAttn          string   `json:"flash_attn"`
	Threads            int      `json:"threads"`
	Repack             bool     `json:"repack"`
	SystemInfo         string   `json:"system_info"`
	Lib                string   `json:"libllama"`
	Source             string   `json:"llama_cpp_source"`
}

// offloadedAll reports whether llama.cpp's log said every layer (the
// repeating ones and the output layer) went to the GPU: "offloaded N/N
// layers to GPU" with N = n_layer + 1.
func (h dumpHeader) offloadedAll() bool {
	if h.Offloaded == nil {
		return false
	}
	var a, b int
	if _, err := fmt.Sscanf(*h.Offloaded, "offloaded %d/%d layers to GPU", &a, &b); err != nil {
		return false
	}
	return a == b && b == h.NLayer+1
}

// agreeStep is one Eval of a schedule: tokens placed from position at (-1:
// where the cache ends; otherwise the cache is truncated to at first), with
// every token's logits compared (all) or only the last one's.
type agreeStep struct {
	what   string
	at     int
	tokens []int32
	all    bool
}

// agreeSchedule is TestCUDAAgreesWithCPU's sequence, from the same random
// tokens: a prefill of 24 spanning two batches of 16 (every position), 16
// decode steps, the cache truncated to 10 and 6 decode steps from there, then
// the prompt's first 5 tokens as one batch after decoding (the last logits).
func agreeSchedule(vocab int) []agreeStep {
	rng := rand.New(rand.NewPCG(1, 2))
	tok := func() int32 { return int32(rng.IntN(vocab)) }
	prompt := make([]int32, 24)
	for i := range prompt {
		prompt[i] = tok()
	}
	steps := []agreeStep{{what: "prefill", at: -1, tokens: prompt, all: true}}
	for range 16 {
		steps = append(steps, agreeStep{what: "decode", at: -1, tokens: []int32{tok()}})
	}
	for i := range 6 {
		at := -1
		if i == 0 {
			at = 10
		}
		steps = append(steps, agreeStep{what: "decode after truncation", at: at, tokens: []int32{tok()}})
	}
	return append(steps, agreeStep{what: "prefill after decode", at: -1, tokens: slices.Clone(prompt[:5])})
}

// dumpTokens writes a schedule in logitsdump's -tokens syntax: one group a
// line, "@P:" where the cache is cut back first.
func dumpTokens(steps []agreeStep) string {
	var b strings.Builder
	for _, s := range steps {
		if s.at >= 0 {
			fmt.Fprintf(&b, "@%d:", s.at)
		}
		for i, id := range s.tokens {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(id)))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// agreeRun is one engine's logits over a schedule: the rows compared (every
// token of an all step, the last of the others) with their step and position.
type agreeRun struct {
	rows  [][]float32
	what  []string
	pos   []int
	label string
}

// runSchedule runs a schedule through one of our Contexts.
func runSchedule(t *testing.T, m *Model, opts Options, steps []agreeStep) agreeRun {
	t.Helper()
	c, err := m.NewContext(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	V := m.Config.Vocab
	dev := opts.Device
	if dev == "" {
		dev = DeviceCPU
	}
	r := agreeRun{label: "Damascus " + dev}
	for _, s := range steps {
		if s.at >= 0 {
			if err := c.Truncate(s.at); err != nil {
				t.Fatal(err)
			}
		}
		p0 := c.Pos()
		l, err := c.Eval(s.tokens, s.all)
		if err != nil {
			t.Fatalf("%s: %s at position %d: %v", r.label, s.what, p0, err)
		}
		n := len(l) / V
		for j := range n {
			r.rows = append(r.rows, slices.Clone(l[j*V:(j+1)*V]))
			r.what = append(r.what, s.what)
			r.pos = append(r.pos, p0+len(s.tokens)-n+j)
		}
	}
	return r
}

// runDump runs a schedule through logitsdump (llama.cpp's public API) with
// n_gpu_layers ngl, a context like opts (n_ctx, n_batch = n_ubatch, cache
// type, threads) and flash attention off, extra flags last (they override),
// and returns the same rows as runSchedule, with logitsdump's description of
// what it ran.
func runDump(t *testing.T, exe, path string, opts Options, ngl int, steps []agreeStep, extra ...string) (agreeRun, dumpHeader) {
	t.Helper()
	dir := t.TempDir()
	toks, out := filepath.Join(dir, "tokens.txt"), filepath.Join(dir, "logits.f32")
	if err := os.WriteFile(toks, []byte(dumpTokens(steps)), 0o644); err != nil {
		t.Fatal(err)
	}
	kv := map[quant.Type]string{quant.F32: "f32", quant.F16: "f16", quant.BF16: "bf16"}[opts.KVType]
	if kv == "" {
		t.Fatalf("no llama.cpp cache type for %s", opts.KVType)
	}
	nb := strconv.Itoa(opts.NBatch)
	args := []string{"-m", path, "-o", out, "-tokens-file", toks, "-ngl", strconv.Itoa(ngl),
		"-c", strconv.Itoa(opts.NCtx), "-b", nb, "-ub", nb, "-ctk", kv, "-ctv", kv, "-fa", "off",
		"-t", strconv.Itoa(max(opts.Threads, 1))}
	args = append(args, extra...)
	cmd := exec.Command(exe, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", exe, strings.Join(args, " "), err, stderr.String())
	}
	var h dumpHeader
	js, err := os.ReadFile(out + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &h); err != nil {
		t.Fatalf("logitsdump sidecar %s: %v", out+".json", err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, s := range steps {
		rows += len(s.tokens)
	}
	if h.Positions != rows || len(h.Pos) != rows || h.NVocab <= 0 || len(raw) != 4*rows*h.NVocab {
		t.Fatalf("logitsdump wrote %d bytes, %d rows (%d positions listed) of %d logits; want %d rows", len(raw), h.Positions, len(h.Pos), h.NVocab, rows)
	}
	r := agreeRun{label: strings.Join(append([]string{"llama.cpp -ngl", strconv.Itoa(ngl)}, extra...), " ")}
	k := 0
	for _, s := range steps {
		for j := range s.tokens {
			if s.all || j == len(s.tokens)-1 {
				row := make([]float32, h.NVocab)
				for i := range row {
					row[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*((k+j)*h.NVocab+i):]))
				}
				r.rows = append(r.rows, row)
				r.what = append(r.what, s.what)
				r.pos = append(r.pos, h.Pos[k+j])
			}
		}
		k += len(s.tokens)
	}
	return r, h
}

// runReference runs a schedule through the float64 reference with the
// activations rounded as the kernels' inputs are (truncation moves its
// position back; the cache below it stays).
func runReference(t *testing.T, m *Model, steps []agreeStep) agreeRun {
	t.Helper()
	n := 0
	for _, s := range steps {
		n += len(s.tokens)
	}
	ref, err := m.NewReference(n)
	if err != nil {
		t.Fatal(err)
	}
	ref.RoundActivations = true
	r := agreeRun{label: "the reference"}
	for _, s := range steps {
		if s.at >= 0 {
			ref.pos = s.at
		}
		for j, tk := range s.tokens {
			l, err := ref.Eval(tk)
			if err != nil {
				t.Fatal(err)
			}
			if s.all || j == len(s.tokens)-1 {
				r.rows = append(r.rows, slices.Clone(l))
				r.what = append(r.what, s.what)
				r.pos = append(r.pos, ref.Pos()-1)
			}
		}
	}
	return r
}

// checkAgreement compares ours with theirs (decisive: theirs' top-2 gap
// exceeds 1e-3) on the criteria, cosine ≥ 0.9999 and the same top-1
// on every decisive position, logging the spread per step kind, and fails
// where a position misses them for a reason that is ours.
//
// Two measured scales, both from the same run, decide that:
//
//   - selves are other answers of the same llama.cpp (n_ubatch 1, its plain
//     kernels instead of the repacked ones): where llama.cpp is itself
//     farther than the bar from its default answer, the cosine bar is
//     lowered to its self-agreement, rounded down to 1e-4 (never below
//     0.999). On the 3B-shaped file it is: llama.cpp -ngl 0 with n_ubatch 1,
//     or its plain kernels, against its default answer: cosine 0.9998133 and
//     0.9998212, two top-1 flips (AMD EPYC, F32 cache, 2026-12-02).
//   - a position that still misses (or whose top-1 differs) is put to the
//     float64 reference, activations rounded as the kernels' inputs (ref,
//     run only then): excused where ours meets the criteria against
//     the reference and is at least as near to it as theirs — the other
//     engine's float order flipped a rounding. Measured: tiny Q8_0 parts from
//     llama.cpp at position 32 (cosine 0.9998571, a top-1 at 35 through the
//     cache) where our CPU engine equals the rounded reference (1.0000000),
//     while llama.cpp's kernel sets, thread counts and n_ubatch agree there
//     bit for bit.
//
// A top-1 difference on a decisive position is never excused by the lowered
// bar, only by the reference.
func checkAgreement(t *testing.T, ours, theirs agreeRun, selves []agreeRun, ref func() agreeRun) {
	t.Helper()
	for _, o := range append([]agreeRun{ours}, selves...) {
		if len(o.rows) != len(theirs.rows) {
			t.Fatalf("%s has %d rows, %s %d", o.label, len(o.rows), theirs.label, len(theirs.rows))
		}
		for i := range o.pos {
			if o.pos[i] != theirs.pos[i] || len(o.rows[i]) != len(theirs.rows[i]) {
				t.Fatalf("row %d: %s at position %d (%d logits), %s at %d (%d)", i, o.label, o.pos[i], len(o.rows[i]), theirs.label, theirs.pos[i], len(theirs.rows[i]))
			}
		}
	}
	var kinds []string
	for _, w := range ours.what {
		if !slices.Contains(kinds, w) {
			kinds = append(kinds, w)
		}
	}
	for _, w := range kinds {
		var a, b [][]float32
		for i := range ours.rows {
			if ours.what[i] == w {
				a, b = append(a, ours.rows[i]), append(b, theirs.rows[i])
			}
		}
		t.Logf("%-24s %s against %s: %d rows, %v", w+":", ours.label, theirs.label, len(a), compareRuns(a, b))
	}
	all := compareRuns(ours.rows, theirs.rows)
	t.Logf("%-24s %s against %s: %v", "all:", ours.label, theirs.label, all)
	bar := 0.9999
	for _, o := range selves {
		s := compareRuns(o.rows, theirs.rows)
		t.Logf("scale: %s against %s: %v", o.label, theirs.label, s)
		bar = min(bar, max(0.999, math.Floor(s.cosine*1e4)/1e4))
	}
	if all.cosine >= 0.9999 && all.misses == 0 {
		return
	}
	t.Logf("issue criteria (cosine ≥ 0.9999, top-1 on every decisive position) NOT met against %s; cosine bar from llama.cpp's own spread: %.4f", theirs.label, bar)
	var r *agreeRun
	lowered, excused, failed := 0, 0, 0
	for i := range ours.rows {
		c := compareLogits(ours.rows[i], theirs.rows[i])
		top1 := c.top1Agree || !c.decisive
		if c.cosine >= 0.9999 && top1 {
			continue
		}
		if c.cosine >= bar && top1 {
			lowered++
			t.Logf("  %s, position %2d: cosine %.7f max-abs %.3g, within llama.cpp's own spread (bar %.4f)", ours.what[i], ours.pos[i], c.cosine, c.maxAbs, bar)
			continue
		}
		if r == nil {
			rr := ref()
			r = &rr
		}
		or, tr := compareLogits(ours.rows[i], r.rows[i]), compareLogits(theirs.rows[i], r.rows[i])
		verdict := "counts against " + ours.label
		if or.cosine >= 0.9999 && (or.top1Agree || !or.decisive) && or.cosine >= tr.cosine {
			excused++
			verdict = "excused: " + ours.label + " meets the criteria against the reference, nearer to it"
		} else {
			failed++
		}
		t.Logf("  %s, position %2d: cosine %.7f max-abs %.3g top-1 agrees %v (decisive %v); against the reference: %s %.7f (top-1 %v), %s %.7f: %s",
			ours.what[i], ours.pos[i], c.cosine, c.maxAbs, c.top1Agree, c.decisive, ours.label, or.cosine, or.top1Agree, theirs.label, tr.cosine, verdict)
	}
	t.Logf("positions missing the issue's criteria: %d within llama.cpp's own spread, %d excused by the reference, %d against %s", lowered, excused, failed, ours.label)
	if failed > 0 {
		t.Errorf("%s against %s: %v; %d positions miss the criteria (cosine bar %.4f) without being nearer the reference", ours.label, theirs.label, all, failed, bar)
	}
}

// agreeModels are TestCUDAAgreesWithCPU's files ($DAMASCUS_CUDA_AGREE picks
// one preset there and here).
var agreeModels = []struct{ preset, typ string }{
	{"tiny", "Q4_K_M"}, {"tiny", "Q8_0"}, {"llama3.2-3b-2l", "Q4_K_M"},
}

// agreeCacheTypes are the KV cache types compared: the GPU engine keeps a
// float32 cache only, so float32 (llama.cpp -ctk f32 -ctv f32).
var agreeCacheTypes = []quant.Type{quant.F32}

// The GPU engine's logits against llama.cpp CUDA's on the same file and
// tokens (issue 18, item 6): TestCUDAAgreesWithCPU's schedule — a prefill
// spanning two batches, decode steps, truncation and decode resumed, a batch
// after decoding — through Damascus on the GPU and through logitsdump built
// against the CUDA build of the pinned llama.cpp with every layer offloaded
// (-ngl 99; the sidecar's "offloaded N/N layers" is checked), the same
// n_ctx (llama.cpp pads it to 256), n_batch = n_ubatch = 16, cache type,
// flash attention off. The criteria, cosine ≥ 0.9999 and the same
// top-1 on every decisive position, per cache type, judged as
// checkAgreement says: llama.cpp CUDA's own spread is its answer with
// n_ubatch 1 (every token through its decode kernels). Logged as context:
// Damascus's CPU engine against the same llama.cpp CUDA run, llama.cpp CUDA
// against the same binary's CPU path (-ngl 0), and Damascus GPU against CPU.
func TestCUDAAgreesWithLlamaCpp(t *testing.T) {
	gpuErr := cuda.Available()
	if os.Getenv(logitsDumpEnv) == "" && gpuErr != nil {
		t.Skipf("GPU agreement with llama.cpp CUDA skipped: no GPU (%v) and $%s is not set (logitsdump built against llama.cpp's CUDA libraries)", gpuErr, logitsDumpEnv)
	}
	exe := requireLogitsDump(t)
	requireGPU(t)
	eachAgreeCase(t, func(t *testing.T, path string, m *Model, steps []agreeStep, opts Options) {
		theirs, h := runDump(t, exe, path, opts, 99, steps)
		t.Logf("llama.cpp: %s; devices %v; n_ctx %d, n_batch %d, n_ubatch %d, cache %s/%s, flash attention %s; %s",
			derefOr(h.Offloaded, "no offload line in its log"), h.Devices, h.NCtx, h.NBatch, h.NUbatch, h.TypeK, h.TypeV, h.FlashAttn, h.Source)
		if !h.offloadedAll() {
			t.Fatalf("logitsdump (%s) did not put every layer on the GPU: offloaded %q, n_layer %d, GPU offload supported %v: is it built against llama.cpp's CUDA libraries?",
				exe, derefOr(h.Offloaded, "none"), h.NLayer, h.SupportsGPUOffload)
		}
		if h.NVocab != m.Config.Vocab {
			t.Fatalf("llama.cpp's vocabulary is %d, ours %d", h.NVocab, m.Config.Vocab)
		}
		gopts := opts
		gopts.Device = DeviceCUDA
		gpu := runSchedule(t, m, gopts, steps)
		ub1, _ := runDump(t, exe, path, opts, 99, steps, "-ub", "1")
		checkAgreement(t, gpu, theirs, []agreeRun{ub1}, func() agreeRun { return runReference(t, m, steps) })
		cpu := runSchedule(t, m, opts, steps)
		lcpu, _ := runDump(t, exe, path, opts, 0, steps)
		t.Logf("context: Damascus cpu against llama.cpp -ngl 99: %v", compareRuns(cpu.rows, theirs.rows))
		t.Logf("context: llama.cpp -ngl 99 against llama.cpp -ngl 0: %v", compareRuns(theirs.rows, lcpu.rows))
		t.Logf("context: Damascus cuda against Damascus cpu: %v", compareRuns(gpu.rows, cpu.rows))
	})
}

// eachAgreeCase runs f for every file of agreeModels (DAMASCUS_CUDA_AGREE
// names one preset) and every cache type of agreeCacheTypes, each a subtest.
func eachAgreeCase(t *testing.T, f func(t *testing.T, path string, m *Model, steps []agreeStep, opts Options)) {
	for _, tc := range agreeModels {
		if only := os.Getenv("DAMASCUS_CUDA_AGREE"); only != "" && only != tc.preset {
			continue
		}
		t.Run(tc.preset+"/"+tc.typ, func(t *testing.T) {
			path, m, _ := synthModel(t, tc.preset, tc.typ)
			steps := agreeSchedule(m.Config.Vocab)
			for _, kv := range agreeCacheTypes {
				t.Run(kv.String(), func(t *testing.T) {
					f(t, path, m, steps, Options{NCtx: 96, NBatch: 16, Threads: 2, KVType: kv})
				})
			}
		})
	}
}

// The same comparison on the CPU: Damascus's CPU engine against logitsdump
// with -ngl 0, so that the machinery (the schedule, the dumper's groups and
// truncation, the rows' order) is proven where there is no GPU; with the npm
// libraries it is the pinned CPU llama.cpp that TestSynthTinyMatchesLlamaCpp
// holds the engine to through purego, at the same bar.
func TestCPUAgreesWithLogitsDump(t *testing.T) {
	exe := requireLogitsDump(t)
	if testing.Short() {
		t.Skip("builds three synthetic models; skipped in -short")
	}
	eachAgreeCase(t, func(t *testing.T, path string, m *Model, steps []agreeStep, opts Options) {
		theirs, h := runDump(t, exe, path, opts, 0, steps)
		t.Logf("llama.cpp: devices %v; n_ctx %d, n_batch %d, n_ubatch %d, cache %s/%s, flash attention %s, repack %v; %s",
			h.Devices, h.NCtx, h.NBatch, h.NUbatch, h.TypeK, h.TypeV, h.FlashAttn, h.Repack, h.Source)
		if h.Offloaded != nil && !strings.HasPrefix(*h.Offloaded, "offloaded 0/") {
			t.Fatalf("logitsdump -ngl 0 offloaded layers: %q", *h.Offloaded)
		}
		ub1, _ := runDump(t, exe, path, opts, 0, steps, "-ub", "1")
		plain, _ := runDump(t, exe, path, opts, 0, steps, "-no-repack")
		checkAgreement(t, runSchedule(t, m, opts, steps), theirs, []agreeRun{ub1, plain}, func() agreeRun { return runReference(t, m, steps) })
	})
}

// logitsdump against the purego binding (harness/llamacpp) on the same
// libraries, file, tokens and context: bit for bit, so that what it writes is
// llama.cpp's answer and nothing of its own. Runs where logitsdump is built
// against the pinned npm libraries the binding loads (make baseline), else
// skips naming both.
func TestLogitsDumpMatchesPurego(t *testing.T) {
	exe := requireLogitsDump(t)
	requireLlamaCpp(t)
	dir, err := llamacpp.LibDir()
	if err != nil {
		t.Fatal(err)
	}
	path, m, _ := synthModel(t, "tiny", "Q4_K_M")
	steps := agreeSchedule(m.Config.Vocab)[:1]
	for _, kv := range []quant.Type{quant.F32, quant.F16} {
		opts := Options{NCtx: 96, NBatch: 16, Threads: 2, KVType: kv}
		d, h := runDump(t, exe, path, opts, 0, steps)
		got, _ := filepath.EvalSymlinks(filepath.Dir(h.Lib))
		if want, _ := filepath.EvalSymlinks(dir); got == "" || got != want {
			t.Skipf("logitsdump runs %q, the purego binding the libraries in %s: not the same llama.cpp, nothing to compare bit for bit", h.Lib, dir)
		}
		co := llamaCppOptions(opts, len(steps[0].tokens))
		co.NCtx = opts.NCtx
		p := runLlamaCpp(t, path, llamacpp.ModelOptions{}, co, steps[0].tokens)
		s := compareRuns(d.rows, p)
		t.Logf("KV %s: logitsdump against the purego binding: %v", kv, s)
		if s.maxAbs != 0 {
			t.Errorf("KV %s: logitsdump differs from the purego binding on the same libraries: %v", kv, s)
		}
	}
}

func derefOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}
