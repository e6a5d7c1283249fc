package protocol

import (
	"time"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

// Unavailable marks a fact a machine does not expose.
const Unavailable = "unavailable"

// Machine is the facts about the machine and build that every record
// carries; harness/sysinfo gathers them.
type Machine struct {
	Date      time.Time `json:"date"`
	Hostname  string    `json:"hostname"`
	CPU       CPU       `json:"cpu"`
	Memory    Memory    `json:"memory"`
	HugePages HugePages `json:"huge_pages"`
	OS        OS        `json:"os"`
	Go        Go        `json:"go"`
	Sensors   Sensors   `json:"sensors"`
	GPU       GPU       `json:"gpu"`
	Repo      Repo      `json:"repo"`
}

// CPU describes the processor.
type CPU struct {
	Model         string            `json:"model"`
	Vendor        string            `json:"vendor"`
	Family        int               `json:"family"`
	ModelID       int               `json:"model_id"`
	Stepping      int               `json:"stepping"`
	PhysicalCores int               `json:"physical_cores"` // 0 when unknown
	LogicalCPUs   int               `json:"logical_cpus"`
	Features      []cpufeat.Feature `json:"features"`
	AMXPermission string            `json:"amx_permission"` // "granted" or the reason it is not
	Caches        []Cache           `json:"caches"`
	CacheSource   string            `json:"cache_source"` // "sysfs", "cpuid" or "unavailable"
	Flags         []string          `json:"flags,omitempty"`
}

// Cache is one cache level as seen by CPU 0.
type Cache struct {
	Level      int    `json:"level"`
	Type       string `json:"type"` // "data", "instruction", "unified"
	SizeBytes  int64  `json:"size_bytes"`
	SharedWith string `json:"shared_cpu_list,omitempty"` // sysfs only
}

// Memory is the system memory at gathering time.
type Memory struct {
	TotalBytes     uint64 `json:"total_bytes"`
	AvailableBytes uint64 `json:"available_bytes"`
	Source         string `json:"source"`
}

// HugePages holds the huge-page settings that change kernel and weight timings.
type HugePages struct {
	THPEnabled    string `json:"thp_enabled"` // the selected mode, e.g. "madvise"
	THPDefrag     string `json:"thp_defrag"`
	Total         int64  `json:"hugepages_total"` // static (hugetlbfs) pages
	Free          int64  `json:"hugepages_free"`
	PageSizeBytes int64  `json:"hugepage_size_bytes"`
	GlibcTunables string `json:"glibc_tunables"` // GLIBC_TUNABLES, or "unset"
}

// OS identifies the operating system.
type OS struct {
	GOOS          string `json:"goos"`
	GOARCH        string `json:"goarch"`
	Kernel        string `json:"kernel"`         // uname -r
	KernelVersion string `json:"kernel_version"` // uname -v
	Distro        string `json:"distro"`         // PRETTY_NAME from /etc/os-release
}

// Go describes the Go runtime of this process.
type Go struct {
	Version    string `json:"version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"num_cpu"`
}

// Sensors holds frequency and temperature readings, where exposed.
type Sensors struct {
	FrequencyMHz    []float64          `json:"frequency_mhz,omitempty"` // per logical CPU
	FrequencySource string             `json:"frequency_source"`        // where they came from, or "unavailable"
	TemperaturesC   map[string]float64 `json:"temperatures_c,omitempty"`
	Temperatures    string             `json:"temperatures"` // "ok" or "unavailable"
}

// GPU lists NVIDIA GPUs visible through nvidia-smi.
type GPU struct {
	Status  string      `json:"status"` // "found", "none" or "unavailable: <why>"
	Devices []GPUDevice `json:"devices,omitempty"`
	// CUDAVersion is the highest CUDA version the driver supports, as
	// nvidia-smi's header states it ("13.0"); empty where no GPU was found.
	CUDAVersion string `json:"cuda_version,omitempty"`
}

// GPUDevice is one nvidia-smi row.
type GPUDevice struct {
	Name   string `json:"name"`
	Memory string `json:"memory"`
	Driver string `json:"driver"`
}

// Repo is the state of this repository's checkout.
type Repo struct {
	Commit string `json:"commit"` // "unavailable" outside a checkout without build info
	Dirty  bool   `json:"dirty"`
	Source string `json:"source"` // "git", "build info" or "unavailable"
}
