package record

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/damascus-llm/damascus/protocol"
	"github.com/damascus-llm/damascus/protocol/stats"
)

// gpuRun is the records of a GPU comparison on model sha: Damascus on cuda
// beside an external llama-bench on cuda, as `ledger e2e --device cuda
// --llama-bench` records them.
func gpuRun(sha string, llamaDevice string) []Record {
	b := NewBatch(time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC))
	p := protocol.Record{Date: time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC), Model: &protocol.Model{Path: "/tmp/llama3.2-3b.gguf", SHA256: sha, FileType: "Q4_K_M"}}
	p.Machine.CPU.Model = "Intel(R) Xeon(R) Processor"
	p.Machine.GPU = protocol.GPU{Status: "found", CUDAVersion: "13.0",
		Devices: []protocol.GPUDevice{{Name: "NVIDIA H200", Memory: "143771 MiB", Driver: "580.95.05"}}}
	e := protocol.DefaultE2E()
	e.Threads, e.NominalGBps = 16, 4800
	p.E2E = &e
	p.Engines = []protocol.Engine{
		{Name: "damascus", KVCache: "f32", Device: "cuda", DeviceInfo: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, L2 60 MiB), driver API 13.0"},
		{Name: "llama.cpp", KVCache: "f16", Device: llamaDevice, DeviceInfo: "NVIDIA H200, backends CUDA, n_gpu_layers 99"},
	}
	p.LlamaCpp = &protocol.LlamaCpp{Revision: "unknown", Package: "external llama-bench", LibDir: "/tmp/llcu/b/bin",
		Bench: &protocol.LlamaBench{Binary: "/tmp/llcu/b/bin/llama-bench", SHA256: "0123456789abcdef0123", Source: "built from the pinned bundle",
			Flags: []string{"-t", "16", "-ngl", "99"}, BuildCommit: "unknown", Backends: "CUDA", GPUInfo: "NVIDIA H200", NGPULayers: 99,
			TypeK: "f16", TypeV: "f16", FlashAttn: "-1", NBatch: 2048, NUBatch: 512}}
	b.Add(Record{Kind: KindRun, Run: &Run{Command: "ledger e2e --device cuda --llama-bench /tmp/llcu/b/bin/llama-bench", Protocol: p}})
	for _, eng := range []struct {
		name   string
		tg, pp []float64
	}{{"damascus", []float64{437, 440, 430}, []float64{1772, 1770, 1771}}, {"llama.cpp", []float64{417, 413, 420}, []float64{18444, 17973, 18466}}} {
		b.Add(Record{Kind: KindE2E, E2E: &E2E{Engine: eng.name, Test: "pp1024", Unit: "tok/s", Samples: eng.pp, Summary: stats.Summarize(eng.pp)}})
		b.Add(Record{Kind: KindE2E, E2E: &E2E{Engine: eng.name, Test: "tg256", Unit: "tok/s", Samples: eng.tg, Summary: stats.Summarize(eng.tg)}})
	}
	return b.Recs
}

func TestBaselineGPURun(t *testing.T) {
	var doc strings.Builder
	if err := WriteBaseline(&doc, gpuRun("a1b5e41f02a9", "cuda")); err != nil {
		t.Fatal(err)
	}
	out := doc.String()
	for _, want := range []string{
		"- GPU: NVIDIA H200 (143771 MiB), driver 580.95.05, CUDA 13.0",
		"- llama.cpp: external llama-bench `/tmp/llcu/b/bin/llama-bench` (sha256 0123456789ab), build unknown (0), backends CUDA, GPU NVIDIA H200",
		"flags `-t 16 -ngl 99`, n_gpu_layers 99, cache k f16 v f16, flash_attn -1, batch 2048/512",
		"- llama-bench source (as stated): built from the pinned bundle",
		"- damascus: weights on huge pages: ; device cuda (NVIDIA H200 (sm_90",
		"- both engines ran on the GPU (cuda)",
		"decode against a nominal 4800 GB/s",
		"| decode tok/s",
		"1.05×", // 437/417
	} {
		if !strings.Contains(out, want) {
			t.Errorf("baseline.md lacks %q:\n%s", want, out)
		}
	}
	// A GPU Damascus beside a CPU llama.cpp says so.
	doc.Reset()
	if err := WriteBaseline(&doc, gpuRun("a1b5e41f02a9", "cpu")); err != nil {
		t.Fatal(err)
	}
	if out := doc.String(); strings.Contains(out, "both engines ran on the GPU") || !strings.Contains(out, "devices: damascus cuda, llama.cpp cpu (not the same device") {
		t.Errorf("mixed devices not stated:\n%s", out)
	}
}

// TestLatestE2ERunsKeepsDevicesApart: a GPU run on the same model and tests
// does not hide the last CPU run.
func TestLatestE2ERunsKeepsDevicesApart(t *testing.T) {
	cpu := []Record{{RunID: "cpu", Kind: KindRun, Run: &Run{Protocol: protocol.Record{Model: &protocol.Model{SHA256: "3b"}}}}}
	for _, e := range []string{"damascus", "llama.cpp"} {
		for _, test := range []string{"pp1024", "tg256"} {
			cpu = append(cpu, Record{RunID: "cpu", Kind: KindE2E, E2E: &E2E{Engine: e, Test: test}})
		}
	}
	all := append(cpu, gpuRun("3b", "cuda")...)
	runs := LatestE2ERuns(all)
	if len(runs) != 2 || runs[0][0].RunID == "cpu" || runs[1][0].RunID != "cpu" {
		var ids []string
		for _, r := range runs {
			ids = append(ids, r[0].RunID)
		}
		t.Errorf("latest runs %v, want the GPU run then the CPU one", ids)
	}
	if got := Devices(cpu[0].Run); got != "damascus cpu, llama.cpp cpu" {
		t.Errorf("Devices of an old record = %q", got)
	}
}

// TestLatestE2ERunsKeepsMachinesApart: the same model and tests on another
// processor (the dev VM's AMD beside the lent host's Intel) does not hide
// the other machine's last run.
func TestLatestE2ERunsKeepsMachinesApart(t *testing.T) {
	var all []Record
	for _, m := range []struct{ id, vendor, model string }{
		{"intel", "GenuineIntel", "Intel(R) Xeon(R) Processor"}, {"amd-old", "AuthenticAMD", "AMD EPYC"}, {"amd", "AuthenticAMD", "AMD EPYC"},
	} {
		p := protocol.Record{Model: &protocol.Model{SHA256: "1b"}}
		p.Machine.CPU.Vendor, p.Machine.CPU.Model = m.vendor, m.model
		all = append(all, Record{RunID: m.id, Kind: KindRun, Run: &Run{Protocol: p}})
		for _, e := range []string{"damascus", "llama.cpp"} {
			all = append(all, Record{RunID: m.id, Kind: KindE2E, E2E: &E2E{Engine: e, Test: "tg128"}})
		}
	}
	var ids []string
	for _, r := range LatestE2ERuns(all) {
		ids = append(ids, r[0].RunID)
	}
	if strings.Join(ids, ",") != "amd,intel" {
		t.Errorf("latest runs %v, want [amd intel]: the newest per machine", ids)
	}
}

// TestBenchFileGPUConfig: the benchstat file of a GPU run names the GPU and
// the devices, so benchstat never groups it with a CPU run.
func TestBenchFileGPUConfig(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteBench(&buf, gpuRun("3b", "cuda")); err != nil {
		t.Fatal(err)
	}
	r := benchfmt.NewReader(&buf, "bench.txt")
	n := 0
	for r.Scan() {
		if e, bad := r.Result().(*benchfmt.SyntaxError); bad {
			t.Fatal(e)
		}
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue // unit metadata
		}
		n++
		if res.GetConfig("gpu") != "NVIDIA H200" || res.GetConfig("devices") != "damascus cuda, llama.cpp cuda" {
			t.Fatalf("config gpu %q devices %q", res.GetConfig("gpu"), res.GetConfig("devices"))
		}
	}
	if err := r.Err(); err != nil || n != 12 {
		t.Errorf("%d results, %v", n, err)
	}
}
