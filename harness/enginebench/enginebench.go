// Package enginebench measures the Damascus engine the way llama-bench
// measures llama.cpp: it is the Damascus adapter of the harness/llamabench
// driver (harness/llamacpp.Bench is the llama.cpp one), so the two compare
// test for test. Model loading is timed separately.
package enginebench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/internal/outfile"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/promoted"
	"github.com/damascus-llm/damascus/quant"
	"github.com/damascus-llm/damascus/variants/cuda"
)

// Config is one bench run. Zero values take llama-bench's defaults.
type Config struct {
	llamabench.Spec
	NBatch int `json:"n_batch"` // default llama.DefaultBatch(Device): 512 on the CPU (llama-bench's n_ubatch), 1024 on the GPU
	// Weights is the placement asked for: llama.PlaceHuge (the default,
	// "" included) or llama.PlaceMmap. Result.Placement says what was used.
	Weights string `json:"weights,omitempty"`
	// KVType is the KV cache type, "f32" (the default, "" included), "f16"
	// or "bf16".
	KVType string `json:"kv_type,omitempty"`
	// StaticSplit runs prefill matmuls with the static split of rows
	// (llama.Options.StaticSplit), to compare with the prepared batches.
	StaticSplit bool `json:"static_split,omitempty"`
	// Device is where the graph runs: "cpu" (the default, "" included) or
	// "cuda" (llama.Options.Device).
	Device string `json:"device,omitempty"`
}

// Test is one ppN or tgN test.
type Test = llamabench.Test

// Result is one bench run.
type Result struct {
	Config  Config    `json:"config"`
	Started time.Time `json:"started"`
	LoadNs  int64     `json:"load_ns"`
	Tests   []Test    `json:"tests"`
	// Kernels lists the op:variant each op resolved to.
	Kernels []string `json:"kernels"`
	// AnonHugePagesKB and FileHugePagesKB: memory on huge pages after the
	// last test (smaps_rollup; -1 when unreadable).
	AnonHugePagesKB int64 `json:"anon_huge_pages_kb"`
	FileHugePagesKB int64 `json:"file_huge_pages_kb"`
	// Placement is where the weights were: "huge" or "mmap" (asked, or a
	// fallback from huge that PlacementNotice explains).
	Placement       string `json:"placement"`
	PlacementNotice string `json:"placement_notice,omitempty"`
	// GPU names the device, its driver and the kernels' target when the
	// graph ran there.
	GPU string `json:"gpu,omitempty"`
	// FileReleased: after the copy to huge pages the file map was released
	// page by page and unmapped, so the peak RSS holds one copy of the weights.
	FileReleased bool `json:"file_released,omitempty"`
}

// Run measures cfg in this process.
func Run(cfg Config) (*Result, error) {
	if cfg.NBatch <= 0 {
		cfg.NBatch = llama.DefaultBatch(cfg.Device)
	}
	if cfg.Reps <= 0 {
		cfg.Reps = 5
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if err := cfg.plan().Check(); err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	kv, err := ParseKVType(cfg.KVType)
	if err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	place, err := llama.ParsePlacement(cfg.Weights)
	if err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	cfg.Weights = string(place)
	if err := promoted.Validate(); err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	res := &Result{Config: cfg, Started: time.Now().UTC()}
	start := time.Now()
	// The copy (and the release of the file map) is part of loading.
	ld, err := llama.Load(cfg.Model, llama.LoadOptions{Placement: place, NoTokenizer: true, Device: cfg.Device})
	if err != nil {
		return nil, fmt.Errorf("damascus bench: %w", err)
	}
	defer ld.Close()
	m, f, placed := ld.Model, ld.File, ld.Placed
	res.LoadNs = time.Since(start).Nanoseconds()
	res.Placement, res.PlacementNotice, res.FileReleased = string(placed.Placement), placed.Notice, placed.FileReleased
	bos := int32(-1) // metadata stay readable after the release
	if v, err := f.Uint32("tokenizer.ggml.bos_token_id"); err == nil {
		bos = int32(v)
	}
	eng := engine{m: m, cfg: cfg, kv: kv, bos: bos}
	if res.Tests, err = llamabench.Run(eng, cfg.plan()); err != nil {
		return nil, err
	}
	res.Kernels = promoted.Chosen()
	if cfg.Device == llama.DeviceCUDA {
		if e, err := cuda.OpenEngine(); err == nil {
			res.GPU = fmt.Sprintf("%s; kernels compiled for %s by NVRTC", e.Info(), e.Arch())
		}
	}
	res.AnonHugePagesKB, res.FileHugePagesKB = llamabench.HugePagesKB()
	return res, nil
}

// plan is cfg as the driver runs it, with Damascus' own token stream.
func (cfg Config) plan() llamabench.Plan { return cfg.Spec.Plan(0x64616d61) }

// engine is the Damascus model as a llamabench.Engine.
type engine struct {
	m   *llama.Model
	cfg Config
	kv  quant.Type
	bos int32
}

// NewSession opens a context on the bench's threads; with more depth
// threads, it starts that many workers and parks the extra ones until a
// depth prompt (WithThreads).
func (e engine) NewSession(nCtx int) (llamabench.Session, error) {
	threads := e.cfg.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	c, err := e.m.NewContext(llama.Options{NCtx: nCtx, NBatch: e.cfg.NBatch, Threads: max(threads, e.cfg.DepthThreads), KVType: e.kv, StaticSplit: e.cfg.StaticSplit, Device: e.cfg.Device})
	if err != nil {
		return nil, err
	}
	if c.Threads() != threads {
		if err := c.SetThreads(threads); err != nil {
			c.Close()
			return nil, err
		}
	}
	return session{c, e.snapshotKey(), e.cfg.Model}, nil
}

// snapshotKey names the engine, the model file and the cache type.
func (e engine) snapshotKey() string {
	return fmt.Sprintf("damascus; model %s; cache %s", llamabench.ModelIdentity(e.cfg.Model), e.kv)
}

func (e engine) Vocab() int32 { return int32(e.m.Config.Vocab) }
func (e engine) BOS() int32   { return e.bos }

// session is a Damascus context as a llamabench.Session.
type session struct {
	c     *llama.Context
	key   string // SnapshotKey
	model string // the model file, never overwritten by a snapshot
}

// snapshotMagic starts a depth snapshot: "DMSN", then the tokens (count
// and values, little-endian uint32s) and the cache as llama.Context.WriteKV
// writes it.
const snapshotMagic = 0x4e534d44

func (s session) SnapshotKey() string { return s.key }

func (s session) SaveSnapshot(path string, toks []int32) error {
	if s.c.Pos() != len(toks) {
		return fmt.Errorf("the cache holds %d positions, not the %d tokens to save", s.c.Pos(), len(toks))
	}
	f, err := outfile.Create(path, s.model)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriter(f)
	if err := binary.Write(w, binary.LittleEndian, []uint32{snapshotMagic, uint32(len(toks))}); err != nil {
		return err
	}
	if err := binary.Write(w, binary.LittleEndian, toks); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := s.c.WriteKV(f); err != nil {
		return err
	}
	return f.Commit()
}

func (s session) LoadSnapshot(path string, toks []int32) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var head [2]uint32
	if err := binary.Read(r, binary.LittleEndian, &head); err != nil {
		return fmt.Errorf("reading its header: %w", err)
	}
	if head[0] != snapshotMagic {
		return errors.New("not a Damascus depth snapshot (bad magic)")
	}
	if int(head[1]) != len(toks) {
		return fmt.Errorf("it holds %d tokens, the depth is %d", head[1], len(toks))
	}
	got := make([]int32, len(toks))
	if err := binary.Read(r, binary.LittleEndian, got); err != nil {
		return fmt.Errorf("reading its tokens: %w", err)
	}
	if !slices.Equal(got, toks) {
		return errors.New("it holds other tokens than the depth prompt's")
	}
	if err := s.c.ReadKV(r); err != nil {
		return err
	}
	if s.c.Pos() != len(toks) {
		return fmt.Errorf("its cache holds %d positions, not %d", s.c.Pos(), len(toks))
	}
	return nil
}

func (s session) Eval(toks []int32) error {
	_, err := s.c.Eval(toks, false)
	return err
}

func (s session) Truncate(n int) error { return s.c.Truncate(n) }

// WithThreads runs f on n of the context's workers, then goes back.
func (s session) WithThreads(n int, f func() error) error {
	old := s.c.Threads()
	if err := s.c.SetThreads(n); err != nil {
		return err
	}
	err := f()
	if err2 := s.c.SetThreads(old); err == nil {
		err = err2
	}
	return err
}

func (s session) Close() error {
	s.c.Close()
	return nil
}

// Command is the ledger subcommand that runs Main; the e2e harness spawns
// `<ledger> damascus-bench ...` so each measurement gets a fresh process.
const Command = "damascus-bench"

// Args renders cfg as the flags Main reads.
func (cfg Config) Args() []string {
	a := append(cfg.Spec.Args(), "-b="+strconv.Itoa(cfg.NBatch))
	if cfg.Weights != "" {
		a = append(a, "-weights="+cfg.Weights)
	}
	if cfg.KVType != "" {
		a = append(a, "-kv="+cfg.KVType)
	}
	if cfg.StaticSplit {
		a = append(a, "-static-split")
	}
	if cfg.Device != "" {
		a = append(a, "-device="+cfg.Device)
	}
	return a
}

// Main is `ledger damascus-bench`: flags as llama-bench's, JSON on stdout.
func Main(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	cfg.Spec.RegisterFlags(fs)
	cli.IntVar(fs, &cfg.NBatch, "b", 0, 0, cli.Unbounded, "tokens per prefill step (0: 512 on the CPU, 1024 on the GPU)")
	fs.StringVar(&cfg.Weights, "weights", string(llama.DefaultPlacement), "where the weights live: huge (copied to anonymous huge pages, the file map released; mmap, with a notice, where huge pages are unavailable) or mmap (in place in the file map)")
	fs.StringVar(&cfg.KVType, "kv", "", "KV cache type: f32 (default), f16 or bf16")
	fs.BoolVar(&cfg.StaticSplit, "static-split", false, "prefill matmuls split rows statically, one call per worker (the schedule before prepared batches)")
	fs.StringVar(&cfg.Device, "device", "", "where the graph runs: cpu (default) or cuda (the GPU, f32 cache)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.Model == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: ledger damascus-bench -m MODEL.gguf [-p 512] [-n 128] [-t N] [-r N] [-weights huge|mmap]")
		return flag.ErrHelp
	}
	var prof *outfile.File
	if *cpuProfile != "" {
		f, err := outfile.Create(*cpuProfile, cfg.Model)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Abort()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		prof = f
	}
	res, err := Run(cfg)
	if prof != nil {
		pprof.StopCPUProfile()
		if perr := prof.Commit(); perr != nil && err == nil {
			err = fmt.Errorf("cpu profile: %w", perr)
		}
	}
	if err != nil {
		return err
	}
	if res.PlacementNotice != "" {
		fmt.Fprintln(stderr, res.PlacementNotice)
	}
	return cli.WriteJSON(stdout, res)
}

// ParseKVType reads a KV cache type name: f32 ("" too), f16 or bf16.
func ParseKVType(s string) (quant.Type, error) {
	switch strings.ToLower(s) {
	case "", "f32":
		return quant.F32, nil
	case "f16":
		return quant.F16, nil
	case "bf16":
		return quant.BF16, nil
	}
	return 0, fmt.Errorf("KV cache type %q: want f32, f16 or bf16", s)
}
