// Package protocol is the benchmark protocol as data — what is measured, how
// often, against which pinned rival — the record of the conditions every
// result was taken under, and the rule that decides a promotion.
package protocol

import (
	"errors"
	"fmt"
	"time"
)

// The pinned rival: llama.cpp as shipped in the npm package
// @node-llama-cpp/linux-x64@3.21.1 (baseline/llama.cpp/package-lock.json).
const (
	LlamaCppRevision = "5b4ebc5"
	LlamaCppPackage  = "@node-llama-cpp/linux-x64@3.21.1"
)

// E2E is the end-to-end protocol (the original design's baseline.md).
type E2E struct {
	PromptTokens int `json:"prompt_tokens"` // prefill test: ppN
	GenTokens    int `json:"gen_tokens"`    // decode test: tgN
	Runs         int `json:"runs"`          // recorded rounds per engine and test, a fresh process each
	WarmupRuns   int `json:"warmup_runs"`   // discarded repetitions before them
	// RepsPerRound, when > 1, is how many timed samples of the prefill
	// and decode tests each round's process takes (llama-bench's -r): it
	// makes the Depth prompt once and truncates the cache back to it
	// before each repetition, so a depth leg pays one prefill for several
	// samples. A test then records Runs × RepsPerRound samples per engine,
	// sample j from round j / RepsPerRound and repetition j %
	// RepsPerRound, paired across the engines by j. 0 or 1: one sample per
	// round (the records before the field, unchanged). Cold starts,
	// peak RSS (one sample per process) and sustained decode are
	// unaffected.
	RepsPerRound int `json:"reps_per_round,omitempty"`
	// WarmupPromptTokens, when > 0, shortens the prefill test's warmup to
	// that many tokens (both engines alike); 0: the whole prompt.
	WarmupPromptTokens int `json:"warmup_prompt_tokens,omitempty"`
	Threads            int `json:"threads"` // the same for both engines
	// Depth, when > 0, is the tokens already in the KV cache when each test
	// starts (llama-bench's -d): tests then run at that context depth.
	Depth int `json:"depth,omitempty"`
	// DepthThreads, when > 0, is the threads both engines fill the Depth
	// prompt on, untimed; the timed tests keep Threads. A depth leg's round
	// is mostly that fill (minutes at 2 threads on a 3B at 16k), so a
	// many-core host can take the protocol's rounds in its time limit.
	// Peak RSS then includes the fill's per-worker buffers (Damascus: a
	// widened KV head per worker on a 16-bit cache, 8 bytes × context ×
	// head size each).
	DepthThreads int `json:"depth_threads,omitempty"`
	// DepthSnapshot: each engine fills the Depth prompt once, in its first
	// round's process, and keeps the cache in a snapshot file that
	// its later processes read instead of filling again; the tokens and the
	// cache are the same either way, and the timed tests do not include
	// either. A 3B round at depth 16384 on 2 threads is otherwise minutes of
	// untimed fill (llama.cpp's ≈ 15 on the dev VM).
	DepthSnapshot bool `json:"depth_snapshot,omitempty"`
	// Batch, when > 0, is the tokens one prefill step takes in both engines
	// (Damascus's batch, llama.cpp's n_ubatch, its n_batch at least that);
	// 0: each engine's default (llama.cpp 512; Damascus 512 on the CPU, 1024
	// on the GPU).
	Batch int `json:"batch,omitempty"`
	// SustainedSeconds is how long the sustained-decode test runs;
	// throughput of its first and last SustainedWindow is the throttling proxy.
	SustainedSeconds int `json:"sustained_seconds"`
	SustainedWindow  int `json:"sustained_window_seconds"`
	// Interleaved: engines alternate run by run (order reversed every other
	// run), so drift hits both alike.
	Interleaved bool `json:"interleaved"`
	// RoundProbe: before the first round and after each round the memory
	// probe reads its huge-page buffer again (the run's threads, the
	// fastest of its sweeps), and the decode row states each sample's
	// weight stream against the mean of the probes on either side of its
	// round (a round whose two probes differ by more than RoundProbeDrift
	// is left out: the bandwidth moved during it), as well as against the
	// probe after the rounds. On a
	// machine whose bandwidth moves within minutes (the AMD dev VM's two
	// phases: 35 or 60 GB/s at 2 threads) a probe taken minutes from the
	// samples says little about them. Set when the probe runs and the
	// decode test is at depth 0.
	RoundProbe bool `json:"round_probe,omitempty"`
	// NominalGBps, when > 0, is the stated (not probed) memory bandwidth of
	// the device the engines decode on, GB/s: the decode notes give the
	// weight stream as a fraction of it where no probe applies (a GPU).
	NominalGBps float64 `json:"nominal_gbps,omitempty"`
}

// RoundProbeDrift is how far apart (as a ratio) the probes before and after
// a round may be for its samples to be set against them (E2E.RoundProbe).
const RoundProbeDrift = 1.15

// DefaultE2E is the protocol of record: pp1024 and tg256, 10 runs after one
// warmup, 2 threads (this machine's cores), 60 s sustained decode.
func DefaultE2E() E2E {
	return E2E{PromptTokens: 1024, GenTokens: 256, Runs: 10, WarmupRuns: 1, Threads: 2,
		SustainedSeconds: 60, SustainedWindow: 10, Interleaved: true}
}

// Reps is the timed samples of each test per round's process: RepsPerRound,
// at least 1.
func (e E2E) Reps() int { return max(e.RepsPerRound, 1) }

// PromptTest and GenTest name the tests the way llama-bench does.
func (e E2E) PromptTest() string { return atDepth(fmt.Sprintf("pp%d", e.PromptTokens), e.Depth) }
func (e E2E) GenTest() string    { return atDepth(fmt.Sprintf("tg%d", e.GenTokens), e.Depth) }

// TestName names a test as both engines' benches report it: ppN for a
// prompt of N tokens, else tgN for N generated, with "@dD" when it runs
// at context depth D.
func TestName(prompt, gen, depth int) string {
	if prompt > 0 {
		return atDepth(fmt.Sprintf("pp%d", prompt), depth)
	}
	return atDepth(fmt.Sprintf("tg%d", gen), depth)
}

func atDepth(name string, depth int) string {
	if depth > 0 {
		return fmt.Sprintf("%s@d%d", name, depth)
	}
	return name
}

// Validate rejects a protocol that cannot produce a result.
func (e E2E) Validate() error {
	if e.PromptTokens < 0 || e.GenTokens < 0 || e.PromptTokens+e.GenTokens == 0 {
		return fmt.Errorf("protocol: need prompt or generated tokens (pp %d, tg %d)", e.PromptTokens, e.GenTokens)
	}
	if e.DepthThreads > 0 && e.Depth == 0 {
		return fmt.Errorf("protocol: depth threads %d without a depth", e.DepthThreads)
	}
	if e.DepthSnapshot && e.Depth == 0 {
		return errors.New("protocol: a depth snapshot without a depth")
	}
	// The other fields' least meaningful values.
	for _, f := range []struct {
		name       string
		value, min float64
	}{
		{"runs", float64(e.Runs), 1},
		{"warmup runs", float64(e.WarmupRuns), 0},
		{"repetitions per round", float64(e.RepsPerRound), 0},
		{"depth", float64(e.Depth), 0},
		{"depth threads", float64(e.DepthThreads), 0},
		{"warmup prompt tokens", float64(e.WarmupPromptTokens), 0},
		{"nominal bandwidth (GB/s)", e.NominalGBps, 0},
		{"threads", float64(e.Threads), 1},
	} {
		if f.value < f.min {
			return fmt.Errorf("protocol: %s %g < %g", f.name, f.value, f.min)
		}
	}
	return nil
}

// Kernel is the kernel head-to-head protocol.
type Kernel struct {
	Runs      int           `json:"runs"`       // interleaved samples per variant and shape
	MinSample time.Duration `json:"min_sample"` // each sample repeats the call at least this long
	Warmup    time.Duration `json:"warmup"`     // untimed calls before calibration
	// Threads is 1 (kernels timed single-threaded) or, for matvec ops only,
	// the workers a call's rows are split over in contiguous shares, as a
	// decode step splits them: memory-bound kernels stream differently on
	// one core than on all of them (software prefetch distances, for one).
	Threads int `json:"threads"`
	// ColdWeightBytes: matvec and matmul calls rotate through copies of the
	// weights totalling this much, so weights stream from memory as in decode;
	// so do decode attention's calls through copies of K and V at depths of
	// ledger.ColdHistory positions or more.
	ColdWeightBytes int64 `json:"cold_weight_bytes"`
}

// DefaultKernel: 10 runs, 20 ms samples, 50 ms warmup, one thread.
func DefaultKernel() Kernel {
	return Kernel{Runs: 10, MinSample: 20 * time.Millisecond, Warmup: 50 * time.Millisecond, Threads: 1}
}

// Model identifies the weights an end-to-end result was measured on.
type Model struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	// TensorBytes is the weights' size: what one decode step streams.
	TensorBytes int64 `json:"tensor_bytes"`
	// LayerWeights is the elements of the layers' weight matrices (the
	// two-dimensional blk.* tensors): the multiply-adds one prompt token
	// takes through them. The output head is left out (a prompt's logits
	// are its last token's), and so is attention, which grows with the
	// context: the prefill notes' int8 work.
	LayerWeights int64          `json:"layer_weights,omitempty"`
	Name         string         `json:"name,omitempty"`      // general.name or the preset
	FileType     string         `json:"file_type,omitempty"` // e.g. "Q4_K_M"
	QuantMix     map[string]int `json:"quant_mix"`           // tensor type → tensor count
}

// LlamaCpp says which build of the rival ran.
type LlamaCpp struct {
	Revision   string `json:"revision"`
	Package    string `json:"package"`
	CPUVariant string `json:"cpu_variant"` // the libggml-cpu-*.so it loaded, e.g. "sapphirerapids"
	LibDir     string `json:"lib_dir"`
	// Bench is set when the rival was an external llama-bench binary
	// (a CUDA build, say) rather than the pinned package's libraries.
	Bench *LlamaBench `json:"llama_bench,omitempty"`
}

// LlamaBench is an external llama-bench binary and the build it reported.
type LlamaBench struct {
	Binary string `json:"binary"` // the path it was run from
	SHA256 string `json:"sha256"` // of the binary: its identity when build_commit is "unknown"
	// Source is the operator's account of where the binary came from
	// (e.g. built from the pinned bundle with -DGGML_CUDA=ON); not verified.
	Source string `json:"source,omitempty"`
	// Flags are the llama-bench flags every run added besides the tests'
	// (-ngl, -ctk/-ctv, -t).
	Flags []string `json:"flags,omitempty"`
	// As llama-bench's jsonl reports them.
	BuildCommit string `json:"build_commit"`
	BuildNumber int    `json:"build_number"`
	Backends    string `json:"backends"`
	GPUInfo     string `json:"gpu_info,omitempty"`
	CPUInfo     string `json:"cpu_info,omitempty"`
	NGPULayers  int    `json:"n_gpu_layers"`
	TypeK       string `json:"type_k,omitempty"`
	TypeV       string `json:"type_v,omitempty"`
	FlashAttn   string `json:"flash_attn,omitempty"` // as printed: -1 is auto
	NBatch      int    `json:"n_batch,omitempty"`
	NUBatch     int    `json:"n_ubatch,omitempty"`
}

// Engine describes how one engine held its weights.
type Engine struct {
	Name string `json:"name"` // "damascus" or "llama.cpp"
	// WeightsOnHugePages: "yes", "no", "partly (N MiB)" or "unavailable".
	WeightsOnHugePages string   `json:"weights_on_huge_pages"`
	Kernels            []string `json:"kernels,omitempty"` // op:variant the engine dispatched to
	// KVCache is the engine's KV cache type: "f32", "f16" or "bf16"
	// (empty in records made before it was kept).
	KVCache string `json:"kv_cache,omitempty"`
	// Device is where the engine's graph ran: "cpu" or "cuda" (empty in
	// records made before it was kept: the CPU); DeviceInfo names it.
	Device     string `json:"device,omitempty"`
	DeviceInfo string `json:"device_info,omitempty"`
	Notes      string `json:"notes,omitempty"`
	// Overrides is the DAMASCUS_KERNELS an engine A/B's arm ran with
	// (op=variant,...; empty: the promoted kernels).
	Overrides string `json:"overrides,omitempty"`
	// SmallBatch is the DAMASCUS_SMALL_BATCH an A/B arm ran with (empty:
	// the engine's own crossover).
	SmallBatch string `json:"small_batch,omitempty"`
	// BatchChunk is the DAMASCUS_BATCH_CHUNK an A/B arm ran with (empty:
	// the engine's own).
	BatchChunk string `json:"batch_chunk,omitempty"`
	// DealRun is the DAMASCUS_DEAL_RUN an A/B arm ran with (empty: the
	// engine's own).
	DealRun string `json:"deal_run,omitempty"`
}

// AB is the protocol of an engine A/B (`ledger ab`): Damascus with its
// promoted kernels beside arms that force others (DAMASCUS_KERNELS), each
// round one fresh process per arm in rotated order, each process timing
// every test once after its warmup.
type AB struct {
	Prompts            []int `json:"prompts,omitempty"` // ppN tests
	Gens               []int `json:"gens,omitempty"`    // tgN tests
	Runs               int   `json:"runs"`
	Threads            int   `json:"threads"`
	WarmupPromptTokens int   `json:"warmup_prompt_tokens,omitempty"`
}

// Record is attached to every result: what was measured under which
// conditions. Fields not applicable to a result are left empty; machine
// facts a machine does not expose say Unavailable, never a guess.
type Record struct {
	Date     time.Time `json:"date"`
	Machine  Machine   `json:"machine"`
	Model    *Model    `json:"model,omitempty"`
	LlamaCpp *LlamaCpp `json:"llama_cpp,omitempty"`
	Engines  []Engine  `json:"engines,omitempty"`
	E2E      *E2E      `json:"e2e,omitempty"`
	AB       *AB       `json:"ab,omitempty"`
	Kernel   *Kernel   `json:"kernel,omitempty"`
	// PageCache says whether the model file was in the page cache before a
	// cold start ("cold: dropped", "warm", or "unknown: <why>").
	PageCache string `json:"page_cache,omitempty"`
	// SensorsAfter are temperatures and CPU frequencies read at the end of
	// the run, to compare with Machine.Sensors read at its start.
	SensorsAfter *Sensors `json:"sensors_after,omitempty"`
}
