package llamacpp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/protocol"
)

// BenchConfig is one llama-bench style run on one model: every prompt size
// (ppN) and generation length (tgN) is a test with a fresh context, a warmup
// run that is not timed, then Reps timed repetitions with the KV cache
// cleared before each. Zero values take llama-bench's defaults.
type BenchConfig struct {
	Model    string `json:"model"`
	Prompt   []int  `json:"prompt"`    // ppN sizes: one batch of N tokens, fed in NBatch chunks
	Gen      []int  `json:"gen"`       // tgN lengths: N single-token decodes
	Threads  int    `json:"threads"`   // default runtime.NumCPU()
	NBatch   int    `json:"n_batch"`   // default 2048
	NUbatch  int    `json:"n_ubatch"`  // default 512
	Reps     int    `json:"reps"`      // default 5
	NoWarmup bool   `json:"no_warmup"` // skip the untimed warmup run
	// WarmupPrompt, when > 0, is the tokens of a prefill test's untimed
	// warmup instead of the whole prompt.
	WarmupPrompt int       `json:"warmup_prompt,omitempty"`
	NoMmap       bool      `json:"no_mmap"`    // load weights into anonymous memory instead of mapping the file
	NoRepack     bool      `json:"no_repack"`  // disable llama.cpp's load-time weight repacking (extra buffer types)
	FlashAttn    FlashAttn `json:"flash_attn"` // default FlashAttnAuto, as llama-bench
	Poll         int       `json:"poll"`       // threadpool polling level 1..100; 0 means 50, as llama-bench; PollOff for none
	// Variant is the ggml CPU variant library ("sapphirerapids", "icelake",
	// ...); "" lets ggml choose. It must be fixed before the libraries load,
	// so set it for a spawned bench (RunBench); in-process it must match.
	Variant string `json:"cpu_variant"`
	Seed    uint64 `json:"seed"` // seed of the random prompt tokens; default 1
	// KVType is the KV cache type: "" (llama.cpp's default, f16), "f16",
	// "f32" or "bf16" (llama-bench's -ctk/-ctv).
	KVType string `json:"kv_type,omitempty"`
	// Depth, when > 0, is the tokens of a random prompt in the KV cache
	// before each test (llama-bench's -d): made once per test, untimed, and
	// each repetition starts from it again.
	Depth int `json:"depth,omitempty"`
}

func (c BenchConfig) withDefaults() BenchConfig {
	if c.Threads <= 0 {
		c.Threads = runtime.NumCPU()
	}
	if c.NBatch <= 0 {
		c.NBatch = 2048
	}
	if c.NUbatch <= 0 {
		c.NUbatch = 512
	}
	if c.Reps <= 0 {
		c.Reps = 5
	}
	if c.FlashAttn == FlashAttnDefault {
		c.FlashAttn = FlashAttnAuto
	}
	if c.Poll == 0 {
		c.Poll = 50
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// BenchResult is the record of one bench run: what ran, where, and the raw samples.
type BenchResult struct {
	LlamaCpp      LlamaCppBuild `json:"llama_cpp"`
	SystemInfo    string        `json:"system_info"` // llama_print_system_info(), e.g. "CPU : ... AMX_INT8 = 1 | ..."
	CPUVariant    string        `json:"cpu_variant"` // e.g. "sapphirerapids"
	CPUVariantLib string        `json:"cpu_variant_lib"`
	CPUModel      string        `json:"cpu_model"`
	NumCPU        int           `json:"num_cpu"`
	GlibcTunables string        `json:"glibc_tunables"` // as the bench process saw it
	THPMode       string        `json:"thp_mode"`       // /sys/kernel/mm/transparent_hugepage/enabled
	// AnonHugePagesKB is the process's anonymous memory on huge pages after
	// the last test, from /proc/self/smaps_rollup (-1 when unreadable).
	AnonHugePagesKB int64 `json:"anon_huge_pages_kb"`
	// FileHugePagesKB is file-backed memory (an mmap'd model) on huge pages.
	FileHugePagesKB int64       `json:"file_huge_pages_kb"`
	Model           string      `json:"model"`
	ModelDesc       string      `json:"model_desc"`
	ModelSize       uint64      `json:"model_size"`
	ModelParams     uint64      `json:"model_params"`
	Config          BenchConfig `json:"config"`
	Started         time.Time   `json:"started"`
	Tests           []BenchTest `json:"tests"`
	LoadNs          int64       `json:"load_ns"`
}

// LlamaCppBuild identifies the llama.cpp the numbers come from.
type LlamaCppBuild struct {
	Package string `json:"package"` // npm name@version as installed (package.json beside bins/)
	Tag     string `json:"tag"`
	Commit  string `json:"commit"`
	Version string `json:"version"` // llama_version()
	LibDir  string `json:"lib_dir"`
}

// BenchTest is one ppN or tgN test.
type BenchTest struct {
	Name      string  `json:"name"` // "pp512", "tg128"
	NPrompt   int     `json:"n_prompt"`
	NGen      int     `json:"n_gen"`
	SamplesNs []int64 `json:"samples_ns"` // one per repetition
	// TokensPerSec are the per-repetition rates, tokens / seconds.
	TokensPerSec []float64 `json:"tokens_per_sec"`
	AvgTS        float64   `json:"avg_ts"`
	StdevTS      float64   `json:"stdev_ts"`
}

// Bench runs cfg in this process. Prefer RunBench, which measures in a fresh
// process where GLIBC_TUNABLES and the CPU variant can be chosen.
func Bench(cfg BenchConfig) (*BenchResult, error) {
	cfg = cfg.withDefaults()
	if err := UseCPUVariant(cfg.Variant); err != nil {
		return nil, err
	}
	l, err := get()
	if err != nil {
		return nil, err
	}
	if len(cfg.Prompt) == 0 && len(cfg.Gen) == 0 {
		return nil, fmt.Errorf("llama.cpp bench: no tests (give prompt sizes or generation lengths)")
	}
	for _, n := range append(append([]int(nil), cfg.Prompt...), cfg.Gen...) {
		if n <= 0 {
			return nil, fmt.Errorf("llama.cpp bench: test size %d must be positive", n)
		}
	}
	if cfg.Depth < 0 {
		return nil, fmt.Errorf("llama.cpp bench: depth %d must not be negative", cfg.Depth)
	}
	if cfg.Poll < PollOff || cfg.Poll > 100 {
		return nil, fmt.Errorf("llama.cpp bench: poll %d outside 1..100 (or PollOff)", cfg.Poll)
	}
	res := &BenchResult{
		LlamaCpp: LlamaCppBuild{
			Package: installedPackage(l.dir), Tag: PinnedTag, Commit: PinnedCommit,
			Version: l.llama.version(), LibDir: l.dir,
		},
		SystemInfo:    l.llama.printSystemInfo(),
		CPUVariant:    variantName(l.variantPath),
		CPUVariantLib: l.variantPath,
		CPUModel:      cpuModel(),
		NumCPU:        runtime.NumCPU(),
		GlibcTunables: os.Getenv("GLIBC_TUNABLES"),
		THPMode:       thpMode(),
		Model:         cfg.Model,
		Config:        cfg,
		Started:       time.Now().UTC(),
	}
	start := time.Now()
	m, err := OpenModel(cfg.Model, ModelOptions{NoMmap: cfg.NoMmap, NoRepack: cfg.NoRepack})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	res.LoadNs = time.Since(start).Nanoseconds()
	info, err := m.Info()
	if err != nil {
		return nil, err
	}
	res.ModelDesc, res.ModelSize, res.ModelParams = info.Desc, info.Size, info.NParams

	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6c6c616d61))
	for _, n := range cfg.Prompt {
		t, err := benchOne(m, cfg, n, 0, rng)
		if err != nil {
			return nil, err
		}
		res.Tests = append(res.Tests, t)
	}
	for _, n := range cfg.Gen {
		t, err := benchOne(m, cfg, 0, n, rng)
		if err != nil {
			return nil, err
		}
		res.Tests = append(res.Tests, t)
	}
	res.AnonHugePagesKB, res.FileHugePagesKB = hugePagesKB()
	return res, nil
}

// benchOne runs one ppN (nPrompt > 0) or tgN test as llama-bench does:
// a fresh context sized for the test, its own ggml threadpool, a warmup
// (the whole prompt, or one generated token), then the timed repetitions.
func benchOne(m *Model, cfg BenchConfig, nPrompt, nGen int, rng *rand.Rand) (BenchTest, error) {
	t := BenchTest{NPrompt: nPrompt, NGen: nGen, Name: protocol.TestName(nPrompt, nGen, cfg.Depth)}
	depth := cfg.Depth
	c, err := m.NewContext(ContextOptions{
		NCtx: depth + nPrompt + nGen, NBatch: cfg.NBatch, NUbatch: cfg.NUbatch,
		Threads: cfg.Threads, ThreadsBatch: cfg.Threads, FlashAttn: cfg.FlashAttn,
		KVCacheF32: strings.EqualFold(cfg.KVType, "f32"), KVCacheBF16: strings.EqualFold(cfg.KVType, "bf16"),
	})
	if err != nil {
		return t, fmt.Errorf("%s: %w", t.Name, err)
	}
	defer c.Close()
	if err := c.attachThreadpool(cfg.Threads, cfg.Poll); err != nil {
		return t, fmt.Errorf("%s: %w", t.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	nVocab := int32(m.vocab.NTokens())
	first := func() int32 {
		if m.vocab.AddsBOS() && m.vocab.BOS() >= 0 {
			return m.vocab.BOS()
		}
		return rng.Int32N(nVocab)
	}
	// prompt decodes n random tokens at positions pos0 on (the first a
	// BOS at position 0).
	prompt := func(n, pos0 int) error {
		toks := make([]int32, min(n, c.nBatch))
		for done := 0; done < n; {
			k := min(n-done, c.nBatch)
			for i := range k {
				toks[i] = rng.Int32N(nVocab)
			}
			if done == 0 && pos0 == 0 {
				toks[0] = first()
			}
			if err := c.decode(toks[:k], pos0+done, nil); err != nil {
				return err
			}
			done += k
		}
		c.m.l.llama.synchronize(c.h)
		return nil
	}
	gen := func(n, pos0 int) error {
		tok := []int32{first()}
		for i := range n {
			if err := c.decode(tok, pos0+i, nil); err != nil {
				return err
			}
			c.m.l.llama.synchronize(c.h)
			tok[0] = rng.Int32N(nVocab)
		}
		return nil
	}

	mem := c.m.l.llama.getMemory(c.h)
	c.m.l.llama.memoryClear(mem, false)
	// reset empties the cache down to the depth prompt.
	reset := func() error {
		if depth == 0 {
			c.m.l.llama.memoryClear(mem, false)
			return nil
		}
		if !c.m.l.llama.memorySeqRm(mem, 0, int32(depth), -1) {
			return fmt.Errorf("llama_memory_seq_rm from position %d failed", depth)
		}
		return nil
	}
	if depth > 0 {
		if err := prompt(depth, 0); err != nil {
			return t, fmt.Errorf("%s: depth prompt: %w", t.Name, err)
		}
	}
	if !cfg.NoWarmup {
		var err error
		switch {
		case nPrompt > 0 && cfg.WarmupPrompt > 0:
			err = prompt(min(cfg.WarmupPrompt, nPrompt), depth)
		case nPrompt > 0:
			err = prompt(nPrompt, depth)
		default:
			err = gen(1, depth)
		}
		if err != nil {
			return t, fmt.Errorf("%s warmup: %w", t.Name, err)
		}
	}
	for range cfg.Reps {
		if err := reset(); err != nil {
			return t, fmt.Errorf("%s: %w", t.Name, err)
		}
		start := time.Now()
		var err error
		if nPrompt > 0 {
			err = prompt(nPrompt, depth)
		} else {
			err = gen(nGen, depth)
		}
		ns := time.Since(start).Nanoseconds()
		if err != nil {
			return t, fmt.Errorf("%s: %w", t.Name, err)
		}
		t.SamplesNs = append(t.SamplesNs, ns)
		t.TokensPerSec = append(t.TokensPerSec, float64(nPrompt+nGen)*1e9/float64(ns))
	}
	t.AvgTS, t.StdevTS = meanStdev(t.TokensPerSec)
	return t, nil
}

// attachThreadpool gives the context its own persistent ggml threadpool, as
// llama-bench does; without one ggml starts threads for every graph.
func (c *Context) attachThreadpool(threads, poll int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.m.l
	var p threadpoolParams
	l.ggmlThreadpoolParamsInit(&p, int32(threads))
	p.poll = uint32(max(poll, 0)) // PollOff: no polling
	mark := logMark()
	tp := l.ggmlThreadpoolNew(&p)
	if tp == 0 {
		return fmt.Errorf("ggml_threadpool_new(%d threads) failed: %s", threads, logSince(mark, 2))
	}
	l.llama.attachTP(c.h, tp, tp)
	c.threadpool = tp
	return nil
}

// meanStdev returns the mean and sample standard deviation, as llama-bench reports them.
func meanStdev(x []float64) (mean, stdev float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

// installedPackage reads name@version from the npm package holding the
// libraries (dir is <package>/bins/linux-x64), or returns "" if absent (a
// library directory given by $DAMASCUS_LLAMACPP_DIR need not be one).
func installedPackage(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "..", "..", "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct{ Name, Version string }
	if json.Unmarshal(b, &pkg) != nil || pkg.Name == "" {
		return ""
	}
	return pkg.Name + "@" + pkg.Version
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func thpMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// hugePagesKB reads AnonHugePages and FilePmdMapped from /proc/self/smaps_rollup.
func hugePagesKB() (anon, file int64) {
	anon, file = -1, -1
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "AnonHugePages:":
			anon = v
		case "FilePmdMapped:":
			file = v
		}
	}
	return
}
