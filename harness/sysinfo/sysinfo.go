// Package sysinfo gathers the facts about the machine and build that every
// benchmark record carries and `damascus device-info` prints: CPU, features,
// caches, memory, huge pages, OS, Go, sensors, GPUs and the repository state.
//
// A fact that cannot be read is recorded as "unavailable" (or left empty with
// its source saying so), never guessed.
package sysinfo

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/sensors"
	"golang.org/x/sys/unix"

	"github.com/damascus-llm/damascus/internal/cpufeat"
	"github.com/damascus-llm/damascus/protocol"
)

// Unavailable marks a fact this machine does not expose.
const Unavailable = protocol.Unavailable

// The records' machine types are the protocol's (protocol.Machine); this
// package fills them.
type (
	Info      = protocol.Machine
	CPU       = protocol.CPU
	Cache     = protocol.Cache
	Memory    = protocol.Memory
	HugePages = protocol.HugePages
	OS        = protocol.OS
	Go        = protocol.Go
	Sensors   = protocol.Sensors
	GPU       = protocol.GPU
	GPUDevice = protocol.GPUDevice
	Repo      = protocol.Repo
)

// Gather collects every fact. It does not fail: facts that cannot be read
// are marked unavailable. ctx bounds the external commands (git, nvidia-smi).
func Gather(ctx context.Context) Info {
	info := Info{Date: time.Now().UTC()}
	info.Hostname, _ = os.Hostname()
	if info.Hostname == "" {
		info.Hostname = Unavailable
	}
	info.CPU = gatherCPU()
	info.Memory = gatherMemory()
	info.HugePages = gatherHugePages()
	info.OS = gatherOS()
	info.Go = Go{Version: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU()}
	info.Sensors = gatherSensors()
	info.GPU = gatherGPU(ctx)
	info.Repo = gatherRepo(ctx)
	return info
}

func gatherCPU() CPU {
	c := CPU{Model: Unavailable, Vendor: Unavailable, LogicalCPUs: runtime.NumCPU()}
	if id, ok := cpufeat.CPUIdentity(); ok {
		c.Model, c.Vendor, c.Family, c.ModelID, c.Stepping = id.Brand, id.Vendor, id.Family, id.Model, id.Stepping
	}
	if infos, err := cpu.Info(); err == nil && len(infos) > 0 {
		i := infos[0]
		if c.Model == Unavailable || c.Model == "" {
			c.Model = i.ModelName
		}
		if c.Vendor == Unavailable && i.VendorID != "" {
			c.Vendor = i.VendorID
		}
		if c.Family == 0 {
			c.Family, _ = strconv.Atoi(i.Family)
			c.ModelID, _ = strconv.Atoi(i.Model)
			c.Stepping = int(i.Stepping)
		}
		c.Flags = i.Flags
	}
	if n, err := cpu.Counts(false); err == nil {
		c.PhysicalCores = n
	}
	if n, err := cpu.Counts(true); err == nil && n > 0 {
		c.LogicalCPUs = n
	}
	c.Features = cpufeat.List()
	c.AMXPermission = "granted"
	if err := cpufeat.AMX(); err != nil {
		c.AMXPermission = err.Error()
	}
	c.Caches, c.CacheSource = gatherCaches()
	return c
}

// gatherCaches reads CPU 0's caches from sysfs, else from CPUID.
func gatherCaches() ([]Cache, string) {
	const dir = "/sys/devices/system/cpu/cpu0/cache"
	var caches []Cache
	for i := 0; ; i++ {
		base := dir + "/index" + strconv.Itoa(i) + "/"
		level, err := readTrim(base + "level")
		if err != nil {
			break
		}
		c := Cache{Type: strings.ToLower(readOr(base+"type", "unknown")), SharedWith: readOr(base+"shared_cpu_list", "")}
		c.Level, _ = strconv.Atoi(level)
		c.SizeBytes = parseSize(readOr(base+"size", ""))
		caches = append(caches, c)
	}
	if len(caches) > 0 {
		return caches, "sysfs"
	}
	for _, c := range cpufeat.Caches() {
		caches = append(caches, Cache{Level: c.Level, Type: c.Type, SizeBytes: int64(c.SizeBytes)})
	}
	if len(caches) > 0 {
		return caches, "cpuid"
	}
	return nil, Unavailable
}

// parseSize parses sysfs cache sizes such as "48K" or "2048K" or "32M".
func parseSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n * mult
}

func gatherMemory() Memory {
	v, err := mem.VirtualMemory()
	if err != nil {
		return Memory{Source: Unavailable + ": " + err.Error()}
	}
	return Memory{TotalBytes: v.Total, AvailableBytes: v.Available, Source: "gopsutil"}
}

func gatherHugePages() HugePages {
	h := HugePages{
		THPEnabled:    selected(readOr("/sys/kernel/mm/transparent_hugepage/enabled", Unavailable)),
		THPDefrag:     selected(readOr("/sys/kernel/mm/transparent_hugepage/defrag", Unavailable)),
		GlibcTunables: "unset",
	}
	if v, ok := os.LookupEnv("GLIBC_TUNABLES"); ok {
		h.GlibcTunables = v
	}
	meminfo := readMeminfo()
	h.Total = meminfo["HugePages_Total"]
	h.Free = meminfo["HugePages_Free"]
	h.PageSizeBytes = meminfo["Hugepagesize"]
	return h
}

// selected returns the bracketed choice of a sysfs mode file
// ("always [madvise] never" → "madvise"), or s itself.
func selected(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return s
}

// readMeminfo parses /proc/meminfo into bytes ("kB" values) or counts.
func readMeminfo() map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n <<= 10
		}
		out[k] = n
	}
	return out
}

func gatherOS() OS {
	o := OS{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Kernel: Unavailable, KernelVersion: Unavailable, Distro: Unavailable}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		o.Kernel = unix.ByteSliceToString(u.Release[:])
		o.KernelVersion = unix.ByteSliceToString(u.Version[:])
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				o.Distro = strings.Trim(v, `"'`)
			}
		}
	}
	return o
}

func gatherSensors() Sensors {
	s := Sensors{FrequencySource: Unavailable, Temperatures: Unavailable}
	// Current frequency: cpufreq when the kernel drives it, else the kernel's
	// per-CPU estimate in /proc/cpuinfo (what gopsutil reports without cpufreq).
	var freqs []float64
	for i := 0; i < runtime.NumCPU(); i++ {
		khz, err := readTrim("/sys/devices/system/cpu/cpu" + strconv.Itoa(i) + "/cpufreq/scaling_cur_freq")
		if err != nil {
			break
		}
		if v, err := strconv.ParseFloat(khz, 64); err == nil {
			freqs = append(freqs, v/1000)
		}
	}
	if len(freqs) > 0 {
		s.FrequencyMHz, s.FrequencySource = freqs, "cpufreq scaling_cur_freq"
	} else if infos, err := cpu.Info(); err == nil && len(infos) > 0 {
		for _, i := range infos {
			if i.Mhz > 0 {
				s.FrequencyMHz = append(s.FrequencyMHz, i.Mhz)
			}
		}
		if len(s.FrequencyMHz) > 0 {
			s.FrequencySource = "/proc/cpuinfo cpu MHz (gopsutil)"
		}
	}
	if temps, err := sensors.SensorsTemperatures(); err == nil || len(temps) > 0 {
		for _, t := range temps {
			if t.Temperature != 0 {
				if s.TemperaturesC == nil {
					s.TemperaturesC = map[string]float64{}
				}
				s.TemperaturesC[t.SensorKey] = t.Temperature
			}
		}
		if len(s.TemperaturesC) > 0 {
			s.Temperatures = "ok"
		}
	}
	return s
}

func gatherGPU(ctx context.Context) GPU {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return GPU{Status: "none"}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader").Output()
	if err != nil {
		return GPU{Status: Unavailable + ": nvidia-smi: " + err.Error()}
	}
	g := GPU{Status: "none"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			continue
		}
		g.Devices = append(g.Devices, GPUDevice{Name: strings.TrimSpace(f[0]), Memory: strings.TrimSpace(f[1]), Driver: strings.TrimSpace(f[2])})
	}
	if len(g.Devices) > 0 {
		g.Status = "found"
		// The query has no field for the CUDA version; the plain report's
		// header states it.
		g.CUDAVersion = Unavailable
		if hdr, err := exec.CommandContext(ctx, path).Output(); err == nil {
			if v := cudaVersion(string(hdr)); v != "" {
				g.CUDAVersion = v
			}
		}
	}
	return g
}

// cudaVersion reads "CUDA Version: 13.0" from nvidia-smi's header; "" when absent.
func cudaVersion(report string) string {
	_, rest, ok := strings.Cut(report, "CUDA Version:")
	if !ok {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], "|")
}

// gatherRepo names the code that is running: the VCS stamp `go build` embeds
// in a binary first (a binary carried to another machine runs there beside
// whatever checkout that machine has), else git's view of the working
// directory (go run and go test binaries carry no stamp).
func gatherRepo(ctx context.Context) Repo {
	if bi, ok := debug.ReadBuildInfo(); ok {
		r := Repo{Source: "build info"}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				r.Commit = s.Value
			case "vcs.modified":
				r.Dirty = s.Value == "true"
			}
		}
		if r.Commit != "" {
			return r
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if commit, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
		r := Repo{Commit: strings.TrimSpace(string(commit)), Source: "git"}
		if status, err := exec.CommandContext(ctx, "git", "status", "--porcelain").Output(); err == nil {
			r.Dirty = len(strings.TrimSpace(string(status))) > 0
		}
		return r
	}
	return Repo{Commit: Unavailable, Source: Unavailable}
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func readOr(path, fallback string) string {
	s, err := readTrim(path)
	if err != nil {
		return fallback
	}
	return s
}

// presentFeatures returns the names of the present features, sorted.
func presentFeatures(fs []cpufeat.Feature) []string {
	var names []string
	for _, f := range fs {
		if f.Present {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return names
}
