package sysinfo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

func TestGatherFacts(t *testing.T) {
	info := Gather(context.Background())
	if info.Date.IsZero() || info.Hostname == "" {
		t.Errorf("date %v, hostname %q", info.Date, info.Hostname)
	}
	if info.CPU.Model == "" || info.CPU.LogicalCPUs < 1 {
		t.Errorf("cpu model %q, logical %d", info.CPU.Model, info.CPU.LogicalCPUs)
	}
	if info.CPU.PhysicalCores > info.CPU.LogicalCPUs {
		t.Errorf("%d physical cores exceed %d logical CPUs", info.CPU.PhysicalCores, info.CPU.LogicalCPUs)
	}
	if len(info.CPU.Features) != len(cpufeat.Names()) {
		t.Errorf("%d features recorded, cpufeat knows %d", len(info.CPU.Features), len(cpufeat.Names()))
	}
	if (info.CPU.AMXPermission == "granted") != (cpufeat.AMX() == nil) {
		t.Errorf("amx permission %q disagrees with cpufeat.AMX() = %v", info.CPU.AMXPermission, cpufeat.AMX())
	}
	if info.Go.Version != runtime.Version() || info.Go.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Errorf("go facts %+v", info.Go)
	}
	if runtime.GOOS == "linux" {
		if info.Memory.TotalBytes == 0 || info.Memory.AvailableBytes > info.Memory.TotalBytes {
			t.Errorf("memory %+v", info.Memory)
		}
		if info.OS.Kernel == Unavailable || info.OS.Kernel == "" {
			t.Errorf("kernel %q", info.OS.Kernel)
		}
		if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err == nil {
			if !strings.Contains(string(b), "["+info.HugePages.THPEnabled+"]") {
				t.Errorf("THP mode %q not the selected one in %q", info.HugePages.THPEnabled, b)
			}
		}
	}
	// Readings are either present with a source, or marked unavailable.
	if (len(info.Sensors.FrequencyMHz) == 0) != (info.Sensors.FrequencySource == Unavailable) {
		t.Errorf("frequency readings %v with source %q", info.Sensors.FrequencyMHz, info.Sensors.FrequencySource)
	}
	if (len(info.Sensors.TemperaturesC) == 0) != (info.Sensors.Temperatures == Unavailable) {
		t.Errorf("temperatures %v with status %q", info.Sensors.TemperaturesC, info.Sensors.Temperatures)
	}
	if _, err := exec.LookPath("nvidia-smi"); err != nil && info.GPU.Status != "none" {
		t.Errorf("no nvidia-smi but GPU status %q", info.GPU.Status)
	}
	// A binary stamped with its commit (go test -c -buildvcs=true, as the
	// device suite builds them) names that commit, whatever checkout it runs
	// beside; otherwise, where git answers (the tests normally run inside
	// the checkout), the recorded commit must be its HEAD.
	if stamp := vcsRevision(); stamp != "" {
		if info.Repo.Source != "build info" || info.Repo.Commit != stamp {
			t.Errorf("repo %+v, binary stamped with %s", info.Repo, stamp)
		}
	} else if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		if info.Repo.Source != "git" || info.Repo.Commit != strings.TrimSpace(string(head)) {
			t.Errorf("repo %+v, git HEAD %s", info.Repo, head)
		}
	} else if info.Repo.Source == "git" {
		t.Errorf("git failed (%v) but repo source is git: %+v", err, info.Repo)
	}
}

func TestRenderings(t *testing.T) {
	info := Gather(context.Background())
	var buf bytes.Buffer
	if err := WriteText(&buf, info); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"cpu:", "cores:", "features:", "amx permission:", "caches:", "memory:", "huge pages:", "os:", "go:", "cpu frequency:", "temperatures:", "gpu:", "repo:"} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("text lacks %q:\n%s", key, buf.String())
		}
	}
	js, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var back Info
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.CPU.Model != info.CPU.Model || back.HugePages != info.HugePages || !back.Date.Equal(info.Date) {
		t.Errorf("JSON round trip lost facts")
	}
	t.Logf("\n%s", buf.String())
}

func TestParsers(t *testing.T) {
	if got := selected("always [madvise] never"); got != "madvise" {
		t.Errorf("selected = %q", got)
	}
	if got := selected("unavailable"); got != "unavailable" {
		t.Errorf("selected(no brackets) = %q", got)
	}
	for in, want := range map[string]int64{"48K": 48 << 10, "2M": 2 << 20, "1024": 1024, "junk": 0, "": 0} {
		if got := parseSize(in); got != want {
			t.Errorf("parseSize(%q) = %d, want %d", in, got, want)
		}
	}
}

// vcsRevision is the commit stamped into this binary, if any.
func vcsRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}

func TestCUDAVersion(t *testing.T) {
	hdr := `Tue Dec  1 23:40:02 2026
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
`
	if got := cudaVersion(hdr); got != "13.0" {
		t.Errorf("cudaVersion = %q, want 13.0", got)
	}
	for _, s := range []string{"", "CUDA Version:", "no header"} {
		if got := cudaVersion(s); got != "" {
			t.Errorf("cudaVersion(%q) = %q, want empty", s, got)
		}
	}
}
