package llamacpp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/internal/ggml"
	"github.com/damascus-llm/damascus/internal/textfile"
)

// BenchConfig is one llama-bench style run on one model: every prompt size
// (ppN) and generation length (tgN) is a test with a fresh context, a warmup
// run that is not timed, then Reps timed repetitions with the KV cache
// cleared before each. Zero values take llama-bench's defaults.
type BenchConfig struct {
	llamabench.Spec
	NBatch    int       `json:"n_batch"`    // default 2048
	NUbatch   int       `json:"n_ubatch"`   // default 512
	NoMmap    bool      `json:"no_mmap"`    // load weights into anonymous memory instead of mapping the file
	NoRepack  bool      `json:"no_repack"`  // disable llama.cpp's load-time weight repacking (extra buffer types)
	FlashAttn FlashAttn `json:"flash_attn"` // default FlashAttnAuto, as llama-bench
	Poll      int       `json:"poll"`       // threadpool polling level 1..100; 0 means 50, as llama-bench; PollOff for none
	// Variant is the ggml CPU variant library ("sapphirerapids", "icelake",
	// ...); "" lets ggml choose. It must be fixed before the libraries load,
	// so set it for a spawned bench (RunBench); in-process it must match.
	Variant string `json:"cpu_variant"`
	// KVType is the KV cache type: "" (llama.cpp's default, f16), "f16",
	// "f32" or "bf16" (llama-bench's -ctk/-ctv).
	KVType string `json:"kv_type,omitempty"`
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
type BenchTest = llamabench.Test

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
	plan := cfg.Spec.Plan(0x6c6c616d61) // llama.cpp's own token stream
	if err := plan.Check(); err != nil {
		return nil, fmt.Errorf("llama.cpp bench: %w", err)
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
		CPUVariant:    ggml.VariantName(l.variantPath),
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

	if res.Tests, err = llamabench.Run(benchEngine{m: m, cfg: cfg}, plan); err != nil {
		return nil, err
	}
	res.AnonHugePagesKB, res.FileHugePagesKB = llamabench.HugePagesKB()
	return res, nil
}

// benchEngine is a loaded model as a llamabench.Engine: each session is a
// context sized for its test with its own ggml threadpool, as llama-bench
// runs them.
type benchEngine struct {
	m   *Model
	cfg BenchConfig
}

func (e benchEngine) NewSession(nCtx int) (llamabench.Session, error) {
	cfg := e.cfg
	c, err := e.m.NewContext(ContextOptions{
		NCtx: nCtx, NBatch: cfg.NBatch, NUbatch: cfg.NUbatch,
		Threads: cfg.Threads, ThreadsBatch: cfg.Threads, FlashAttn: cfg.FlashAttn,
		KVCacheF32: strings.EqualFold(cfg.KVType, "f32"), KVCacheBF16: strings.EqualFold(cfg.KVType, "bf16"),
	})
	if err != nil {
		return nil, err
	}
	if err := c.attachThreadpool(cfg.Threads, cfg.Poll); err != nil {
		c.Close()
		return nil, err
	}
	c.mu.Lock() // held until Close: the session decodes without the Context's locking methods
	s := &benchSession{c: c, mem: c.m.l.llama.getMemory(c.h), poll: cfg.Poll, key: e.snapshotKey()}
	c.m.l.llama.memoryClear(s.mem, false)
	return s, nil
}

func (e benchEngine) Vocab() int32 { return int32(e.m.vocab.NTokens()) }

func (e benchEngine) BOS() int32 {
	if e.m.vocab.AddsBOS() && e.m.vocab.BOS() >= 0 {
		return e.m.vocab.BOS()
	}
	return -1
}

// snapshotKey names the library, the model file and what shapes the
// cache's layout: its type and flash attention (without it the values are
// stored transposed).
func (e benchEngine) snapshotKey() string {
	return fmt.Sprintf("llama.cpp %s; model %s; cache %q; flash attention %v", PinnedCommit, llamabench.ModelIdentity(e.cfg.Model), e.cfg.KVType, e.cfg.FlashAttn)
}

// benchSession decodes at its own position, in chunks of n_batch.
type benchSession struct {
	c    *Context
	mem  uintptr
	pos  int
	poll int
	key  string // SnapshotKey
}

func (s *benchSession) SnapshotKey() string { return s.key }

// SaveSnapshot writes sequence 0's cache with toks (llama_state_seq_save_file).
func (s *benchSession) SaveSnapshot(path string, toks []int32) error {
	if s.pos != len(toks) || len(toks) == 0 {
		return fmt.Errorf("the cache holds %d positions, not the %d tokens to save", s.pos, len(toks))
	}
	l := s.c.m.l.llama
	mark := logMark()
	if l.stateSeqSave(s.c.h, path, 0, &toks[0], uintptr(len(toks))) == 0 {
		return fmt.Errorf("llama_state_seq_save_file failed: %s", logSince(mark, 2))
	}
	return nil
}

// LoadSnapshot reads sequence 0's cache from path
// (llama_state_seq_load_file), which must hold toks.
func (s *benchSession) LoadSnapshot(path string, toks []int32) error {
	if s.pos != 0 || len(toks) == 0 {
		return fmt.Errorf("a snapshot of %d tokens goes into an empty cache, this one holds %d", len(toks), s.pos)
	}
	l := s.c.m.l.llama
	got := make([]int32, len(toks))
	var n uintptr
	mark := logMark()
	if l.stateSeqLoad(s.c.h, path, 0, &got[0], uintptr(len(got)), &n) == 0 {
		l.memoryClear(s.mem, true)
		return fmt.Errorf("llama_state_seq_load_file failed: %s", logSince(mark, 2))
	}
	if !slices.Equal(got[:n], toks) {
		l.memoryClear(s.mem, true)
		return fmt.Errorf("it holds %d other tokens than the depth prompt's %d", n, len(toks))
	}
	s.pos = len(toks)
	return nil
}

// WithThreads runs f with batches (a depth prompt's) on n threads, a
// threadpool of their own attached as the batch pool, single tokens still
// on the session's: llama.cpp picks the pool and thread count per graph by
// its tokens. The pool is kept for later calls and freed with the context.
func (s *benchSession) WithThreads(n int, f func() error) error {
	c := s.c
	l := c.m.l
	if c.batchPool == 0 || c.batchThreads != n {
		if c.batchPool != 0 {
			return fmt.Errorf("a session's batch threadpool has %d threads, not %d", c.batchThreads, n)
		}
		tp, err := l.newThreadpool(n, s.poll)
		if err != nil {
			return err
		}
		c.batchPool, c.batchThreads = tp, n
	}
	t := int32(c.opts.Threads)
	l.llama.setNThreads(c.h, t, int32(n))
	l.llama.attachTP(c.h, c.threadpool, c.batchPool)
	err := f()
	l.llama.setNThreads(c.h, t, t)
	l.llama.attachTP(c.h, c.threadpool, c.threadpool)
	return err
}

func (s *benchSession) Eval(toks []int32) error {
	c := s.c
	for done := 0; done < len(toks); {
		k := min(len(toks)-done, c.nBatch)
		if err := c.decode(toks[done:done+k], s.pos, nil); err != nil {
			return err
		}
		s.pos += k
		done += k
	}
	c.m.l.llama.synchronize(c.h)
	return nil
}

func (s *benchSession) Truncate(n int) error {
	l := s.c.m.l.llama
	if n == 0 {
		l.memoryClear(s.mem, false)
	} else if !l.memorySeqRm(s.mem, 0, int32(n), -1) {
		return fmt.Errorf("llama_memory_seq_rm from position %d failed", n)
	}
	s.pos = n
	return nil
}

func (s *benchSession) Close() error {
	s.c.mu.Unlock()
	return s.c.Close()
}

// attachThreadpool gives the context its own persistent ggml threadpool, as
// llama-bench does; without one ggml starts threads for every graph.
func (c *Context) attachThreadpool(threads, poll int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	tp, err := c.m.l.newThreadpool(threads, poll)
	if err != nil {
		return err
	}
	c.m.l.llama.attachTP(c.h, tp, tp)
	c.threadpool = tp
	return nil
}

// newThreadpool starts a ggml threadpool of threads polling at poll.
func (l *lib) newThreadpool(threads, poll int) (uintptr, error) {
	var p threadpoolParams
	l.ggmlThreadpoolParamsInit(&p, int32(threads))
	p.poll = uint32(max(poll, 0)) // PollOff: no polling
	mark := logMark()
	tp := l.ggmlThreadpoolNew(&p)
	if tp == 0 {
		return 0, fmt.Errorf("ggml_threadpool_new(%d threads) failed: %s", threads, logSince(mark, 2))
	}
	return tp, nil
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
	return textfile.Find("/proc/cpuinfo", func(line string) (string, bool) {
		k, v, ok := strings.Cut(line, ":")
		return strings.TrimSpace(v), ok && strings.TrimSpace(k) == "model name"
	})
}

func thpMode() string {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
