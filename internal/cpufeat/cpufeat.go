// Package cpufeat detects, at run time, the CPU features the kernels use, and
// whether the operating system lets a program use them.
//
// A feature counts as present only when the CPU reports it AND the OS saves its
// register state across context switches (XCR0 via XGETBV on x86); for Intel
// AMX it also needs the per-process permission Linux grants through
// arch_prctl(ARCH_REQ_XCOMP_PERM), which [AMX] requests once and caches.
//
// Feature names are lower-case strings, the vocabulary ledger variants use for
// their requirements: "avx2", "avx512f", "avx512vnni", "amx-int8", "asimddp", ...
package cpufeat

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// X86 holds what the CPU reports (CPUID) and what the OS enables (XCR0) on
// amd64. On other architectures it is all false.
type X86 struct {
	// CPUID feature bits, as the CPU reports them.
	AVX, AVX2, FMA, F16C, BMI2            bool
	AVX512F, AVX512BW, AVX512VL, AVX512DQ bool
	AVX512CD, AVX512VBMI, AVX512IFMA      bool
	AVX512VNNI, AVX512BF16, AVX512FP16    bool
	AVXVNNI                               bool
	AMXTile, AMXInt8, AMXBF16, AMXFP16    bool
	OSXSAVE                               bool // XGETBV usable
	OSAVX, OSAVX512, OSAMX                bool // XCR0: YMM; opmask+ZMM; XTILECFG+XTILEDATA
}

// ARM64 holds the arm64 features the kernels use. On other architectures it is
// all false.
type ARM64 struct {
	ASIMD   bool // Advanced SIMD (NEON)
	ASIMDDP bool // SDOT/UDOT dot-product instructions
	I8MM    bool // SMMLA/UMMLA int8 matrix multiply
	ASIMDHP bool // half-precision arithmetic
	SVE     bool
}

// Feature is one named feature and whether it is usable on this machine.
type Feature struct {
	Name    string `json:"name"`
	Arch    string `json:"arch"` // GOARCH the feature belongs to: "amd64" or "arm64"
	Present bool   `json:"present"`
}

var (
	detectOnce sync.Once
	x86        X86
	arm64      ARM64
)

func detected() {
	detectOnce.Do(func() {
		x86 = detectX86()
		arm64 = detectARM64()
	})
}

// CPUX86 returns the raw x86 detection (zero value on other architectures).
func CPUX86() X86 { detected(); return x86 }

// CPUARM64 returns the raw arm64 detection (zero value on other architectures).
func CPUARM64() ARM64 { detected(); return arm64 }

// feature describes how one name is decided. amx marks features that also
// need the AMX tile permission.
type feature struct {
	name string
	has  func(X86, ARM64) bool
	amx  bool
}

// features lists every known name, in the order List reports them.
var features = []feature{
	{name: "avx", has: func(x X86, _ ARM64) bool { return x.AVX && x.OSAVX }},
	{name: "avx2", has: func(x X86, _ ARM64) bool { return x.AVX2 && x.OSAVX }},
	{name: "fma", has: func(x X86, _ ARM64) bool { return x.FMA && x.OSAVX }},
	{name: "f16c", has: func(x X86, _ ARM64) bool { return x.F16C && x.OSAVX }},
	{name: "bmi2", has: func(x X86, _ ARM64) bool { return x.BMI2 }},
	{name: "avx-vnni", has: func(x X86, _ ARM64) bool { return x.AVXVNNI && x.OSAVX }},
	{name: "avx512f", has: func(x X86, _ ARM64) bool { return x.AVX512F && x.OSAVX512 }},
	{name: "avx512bw", has: func(x X86, _ ARM64) bool { return x.AVX512BW && x.OSAVX512 }},
	{name: "avx512vl", has: func(x X86, _ ARM64) bool { return x.AVX512VL && x.OSAVX512 }},
	{name: "avx512dq", has: func(x X86, _ ARM64) bool { return x.AVX512DQ && x.OSAVX512 }},
	{name: "avx512cd", has: func(x X86, _ ARM64) bool { return x.AVX512CD && x.OSAVX512 }},
	{name: "avx512vbmi", has: func(x X86, _ ARM64) bool { return x.AVX512VBMI && x.OSAVX512 }},
	{name: "avx512ifma", has: func(x X86, _ ARM64) bool { return x.AVX512IFMA && x.OSAVX512 }},
	{name: "avx512vnni", has: func(x X86, _ ARM64) bool { return x.AVX512VNNI && x.OSAVX512 }},
	{name: "avx512bf16", has: func(x X86, _ ARM64) bool { return x.AVX512BF16 && x.OSAVX512 }},
	{name: "avx512fp16", has: func(x X86, _ ARM64) bool { return x.AVX512FP16 && x.OSAVX512 }},
	{name: "amx-tile", has: func(x X86, _ ARM64) bool { return x.AMXTile && x.OSAMX }, amx: true},
	{name: "amx-int8", has: func(x X86, _ ARM64) bool { return x.AMXTile && x.AMXInt8 && x.OSAMX }, amx: true},
	{name: "amx-bf16", has: func(x X86, _ ARM64) bool { return x.AMXTile && x.AMXBF16 && x.OSAMX }, amx: true},
	{name: "amx-fp16", has: func(x X86, _ ARM64) bool { return x.AMXTile && x.AMXFP16 && x.OSAMX }, amx: true},
	{name: "asimd", has: func(_ X86, a ARM64) bool { return a.ASIMD }},
	{name: "asimddp", has: func(_ X86, a ARM64) bool { return a.ASIMDDP }},
	{name: "i8mm", has: func(_ X86, a ARM64) bool { return a.I8MM }},
	{name: "asimdhp", has: func(_ X86, a ARM64) bool { return a.ASIMDHP }},
	{name: "sve", has: func(_ X86, a ARM64) bool { return a.SVE }},
}

// aliases maps other common spellings onto the canonical names.
var aliases = map[string]string{
	"neon":     "asimd",
	"dotprod":  "asimddp",
	"avxvnni":  "avx-vnni",
	"amx_tile": "amx-tile",
	"amx_int8": "amx-int8",
	"amx_bf16": "amx-bf16",
	"amx_fp16": "amx-fp16",
	"amxtile":  "amx-tile",
	"amxint8":  "amx-int8",
	"amxbf16":  "amx-bf16",
	"amxfp16":  "amx-fp16",
}

// arm64Features are the names decided from the ARM64 detection.
var arm64Features = map[string]bool{"asimd": true, "asimddp": true, "i8mm": true, "asimdhp": true, "sve": true}

func (f feature) arch() string {
	if arm64Features[f.name] {
		return "arm64"
	}
	return "amd64"
}

func lookup(name string) (feature, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[n]; ok {
		n = a
	}
	for _, f := range features {
		if f.name == n {
			return f, true
		}
	}
	return feature{}, false
}

// Known reports whether name is a feature this package can decide, so a
// registration can reject a misspelt requirement instead of never running.
func Known(name string) bool {
	_, ok := lookup(name)
	return ok
}

// Names returns every canonical feature name, sorted.
func Names() []string {
	names := make([]string, len(features))
	for i, f := range features {
		names[i] = f.name
	}
	sort.Strings(names)
	return names
}

// Has reports whether the named feature is usable by this process. Unknown
// names and names hidden by $DAMASCUS_CPU_HIDE ([HideEnv]) are absent. AMX features are present only once the tile permission is
// granted; Has requests it on first use (see [AMX]).
func Has(name string) bool {
	f, ok := lookup(name)
	if !ok {
		return false
	}
	detected()
	if !f.has(x86, arm64) || isHidden(f.name) {
		return false
	}
	return !f.amx || AMX() == nil
}

// Missing returns the requirements that are not usable here, in the order
// given; unknown names are reported as "name (unknown feature)". An empty
// result means a variant requiring reqs may run.
func Missing(reqs ...string) []string {
	var missing []string
	for _, r := range reqs {
		switch {
		case !Known(r):
			missing = append(missing, r+" (unknown feature)")
		case !Has(r):
			missing = append(missing, r)
		}
	}
	return missing
}

// List returns every known feature with its presence, in a fixed order
// (x86 first, then arm64).
func List() []Feature {
	out := make([]Feature, len(features))
	for i, f := range features {
		out[i] = Feature{Name: f.name, Arch: f.arch(), Present: Has(f.name)}
	}
	return out
}

// Present returns the names of the usable features, in List order.
func Present() []string {
	var names []string
	for _, f := range List() {
		if f.Present {
			names = append(names, f.Name)
		}
	}
	return names
}

// String renders the x86 detection compactly, for logs.
func (x X86) String() string {
	return fmt.Sprintf("avx512f=%t avx512vnni=%t avx512bf16=%t avx512fp16=%t amx(tile=%t int8=%t bf16=%t os=%t)",
		x.AVX512F, x.AVX512VNNI, x.AVX512BF16, x.AVX512FP16, x.AMXTile, x.AMXInt8, x.AMXBF16, x.OSAMX)
}
