package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/protocol"
)

// The external llama-bench contender: a llama-bench binary (a CUDA build on
// the GPU machine, say) spawned once per round with -o jsonl, its samples
// fed to the same machinery as the pinned package's C-API bench.

// rssPoll is how often a llama-bench process's VmHWM is read: it cannot
// report its own, and the kernel's rusage of a child counts the ledger's
// memory at fork (see MeasuredCommand).
const rssPoll = 10 * time.Millisecond

// llamaBenchRSSNote says how llama-bench's peak RSS was measured.
var llamaBenchRSSNote = fmt.Sprintf("VmHWM of the llama-bench process, read from /proc every %v while it ran", rssPoll)

// llamaBenchLine is one line of `llama-bench -o jsonl`: the fields read here
// (llama-bench's test::get_fields, then samples_ns and samples_ts).
type llamaBenchLine struct {
	BuildCommit string          `json:"build_commit"`
	BuildNumber int             `json:"build_number"`
	CPUInfo     string          `json:"cpu_info"`
	GPUInfo     string          `json:"gpu_info"`
	Backends    string          `json:"backends"`
	NBatch      int             `json:"n_batch"`
	NUBatch     int             `json:"n_ubatch"`
	NThreads    int             `json:"n_threads"`
	TypeK       string          `json:"type_k"`
	TypeV       string          `json:"type_v"`
	NGPULayers  int             `json:"n_gpu_layers"`
	FlashAttn   json.RawMessage `json:"flash_attn"` // an int in this build, a string in others
	NPrompt     *int            `json:"n_prompt"`
	NGen        *int            `json:"n_gen"`
	NDepth      int             `json:"n_depth"`
	SamplesNs   []int64         `json:"samples_ns"`
	SamplesTs   []float64       `json:"samples_ts"` // tok/s per repetition
}

// test names the line's test as both engines' benches do.
func (l llamaBenchLine) test() string { return protocol.TestName(*l.NPrompt, *l.NGen, l.NDepth) }

// parseLlamaBenchJSONL reads llama-bench's jsonl output: one test a line.
// A line that is not a JSON object with n_prompt, n_gen and samples_ts, a
// test that is both prefill and decode (-pg), or no line at all is an error.
func parseLlamaBenchJSONL(out []byte) ([]llamaBenchLine, error) {
	var lines []llamaBenchLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l llamaBenchLine
		if err := json.Unmarshal(text, &l); err != nil {
			return nil, fmt.Errorf("llama-bench output line %d is not a jsonl record (%w): %q", n, err, clip(string(text), 120))
		}
		switch {
		case l.NPrompt == nil || l.NGen == nil:
			return nil, fmt.Errorf("llama-bench output line %d lacks n_prompt or n_gen: %q", n, clip(string(text), 120))
		case *l.NPrompt > 0 && *l.NGen > 0:
			return nil, fmt.Errorf("llama-bench output line %d is a combined test (pp%d+tg%d), which the protocol never asks for", n, *l.NPrompt, *l.NGen)
		case *l.NPrompt <= 0 && *l.NGen <= 0:
			return nil, fmt.Errorf("llama-bench output line %d has neither prompt nor generated tokens", n)
		case len(l.SamplesTs) == 0:
			return nil, fmt.Errorf("llama-bench output line %d (%s) has no samples_ts", n, l.test())
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading llama-bench output: %w", err)
	}
	if len(lines) == 0 {
		return nil, errors.New("llama-bench printed no results (was it given -o jsonl?)")
	}
	return lines, nil
}

// llamaBenchTests are b's samples by test name, after checking that every
// test b asked for is there with its repetitions.
func llamaBenchTests(lines []llamaBenchLine, b benchSpec) (map[string][]float64, error) {
	got := map[string][]float64{}
	var names []string
	for _, l := range lines {
		got[l.test()] = append(got[l.test()], l.SamplesTs...)
		names = append(names, l.test())
	}
	for _, w := range b.testNames() {
		s, ok := got[w]
		if !ok {
			return nil, fmt.Errorf("llama-bench output lacks test %s (it reported %s)", w, strings.Join(names, ", "))
		}
		if len(s) != b.reps {
			return nil, fmt.Errorf("llama-bench reported %d samples of %s, asked for %d repetitions", len(s), w, b.reps)
		}
	}
	return got, nil
}

// llamaBenchFlags are the flags every llama-bench run of o adds to the
// tests': threads, GPU layers, cache types and the prefill batch.
func llamaBenchFlags(o Options) []string {
	a := []string{"-t", strconv.Itoa(o.Protocol.Threads)}
	if ngl := o.llamaNGL(); ngl >= 0 {
		a = append(a, "-ngl", strconv.Itoa(ngl))
	}
	if kv := o.LlamaKV(); kv != "" {
		a = append(a, "-ctk", kv, "-ctv", kv)
	}
	if n := o.Protocol.Batch; n > 0 {
		a = append(a, "-b", strconv.Itoa(max(n, 2048)), "-ub", strconv.Itoa(n))
	}
	return a
}

// llamaBenchArgs is llama-bench's command line for b on the model at path.
// -p and -n are always given: llama-bench's defaults (512, 128) would add
// tests no one asked for.
func llamaBenchArgs(o Options, path string, b benchSpec) []string {
	a := []string{"-m", path, "-p", intsOrZero(b.prompt), "-n", intsOrZero(b.gen), "-r", strconv.Itoa(b.reps)}
	if b.depth > 0 {
		a = append(a, "-d", strconv.Itoa(b.depth))
	}
	if b.noWarmup {
		a = append(a, "--no-warmup")
	}
	return append(append(a, llamaBenchFlags(o)...), "-o", "jsonl")
}

func intsOrZero(v []int) string {
	if len(v) == 0 {
		return "0"
	}
	return llamabench.JoinInts(v)
}

func llamaBenchContender(ctx context.Context, o Options, path string) *contender {
	return &contender{name: "llama.cpp", llama: true, external: true, rssNote: llamaBenchRSSNote, s: newEngineSamples(),
		notes: "external llama-bench " + o.LlamaBench,
		bench: func(b benchSpec) (*benchOut, *spawned, error) {
			sp, err := spawnPolled(ctx, o.LlamaBench, llamaBenchArgs(o, path, b))
			if err != nil {
				return nil, sp, fmt.Errorf("llama.cpp bench (external llama-bench): %w", err)
			}
			lines, err := parseLlamaBenchJSONL(sp.stdout)
			if err != nil {
				return nil, sp, fmt.Errorf("llama.cpp bench (%s): %w", o.LlamaBench, err)
			}
			tests, err := llamaBenchTests(lines, b)
			if err != nil {
				return nil, sp, fmt.Errorf("llama.cpp bench (%s): %w", o.LlamaBench, err)
			}
			l := lines[0]
			lb := &protocol.LlamaBench{Binary: o.LlamaBench, Source: o.LlamaSource, Flags: llamaBenchFlags(o),
				BuildCommit: l.BuildCommit, BuildNumber: l.BuildNumber, Backends: l.Backends, GPUInfo: l.GPUInfo, CPUInfo: l.CPUInfo,
				NGPULayers: l.NGPULayers, TypeK: l.TypeK, TypeV: l.TypeV, FlashAttn: string(l.FlashAttn), NBatch: l.NBatch, NUBatch: l.NUBatch}
			out := &benchOut{tests: tests, huge: "not measured (external llama-bench)", libDir: filepath.Dir(o.LlamaBench), llamaBench: lb}
			out.device, out.deviceInfo = llamaBenchDevice(l)
			return out, sp, nil
		}}
}

// llamaBenchDevice says where llama-bench's layers ran: on the GPU when its
// backends include one and it offloaded layers (-1 is its automatic fit).
func llamaBenchDevice(l llamaBenchLine) (device, info string) {
	be := strings.ToUpper(l.Backends)
	if l.NGPULayers != 0 && strings.Contains(be, "CUDA") {
		return "cuda", fmt.Sprintf("%s, backends %s, n_gpu_layers %d", cmpOr(l.GPUInfo, "GPU unnamed"), l.Backends, l.NGPULayers)
	}
	return "cpu", fmt.Sprintf("%s, backends %s, n_gpu_layers %d", cmpOr(l.CPUInfo, "CPU unnamed"), l.Backends, l.NGPULayers)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// checkLlamaBench refuses a path that is not an executable file.
func checkLlamaBench(path string) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("--llama-bench %s: no such file (build llama-bench first)", path)
	case err != nil:
		return fmt.Errorf("--llama-bench: %w", err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("--llama-bench %s: not a regular file", path)
	case st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("--llama-bench %s: not executable", path)
	}
	return nil
}

// spawnPolled runs exe with args to completion, reading its VmHWM every
// rssPoll: the peak a process that cannot report its own reached, short of
// growth in its last interval.
func spawnPolled(ctx context.Context, exe string, args []string) (*spawned, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	sp := &spawned{maxRSS: -1}
	start := time.Now()
	// Start returns once the exec succeeded, so what /proc shows from then
	// on is the new program's memory, not the ledger's.
	if err := cmd.Start(); err != nil {
		return sp, fmt.Errorf("starting %s: %w", exe, err)
	}
	var mu sync.Mutex
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(rssPoll)
		defer t.Stop()
		for {
			if v := procVmHWM(cmd.Process.Pid); v > 0 {
				mu.Lock()
				sp.maxRSS = max(sp.maxRSS, v)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	wg.Wait()
	sp.stdout, sp.wall = stdout.Bytes(), time.Since(start)
	if err != nil {
		return sp, fmt.Errorf("%s %s: %w; stderr ends: %s", filepath.Base(exe), strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return sp, nil
}

// procVmHWM is process pid's peak RSS in bytes; -1 when unreadable (gone,
// or no /proc).
func procVmHWM(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	return vmHWM(data)
}

// vmHWM reads VmHWM from a /proc/PID/status text; -1 when absent.
func vmHWM(status []byte) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	return -1
}

// tail is the end of s, at most n bytes, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
