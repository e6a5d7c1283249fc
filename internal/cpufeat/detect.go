package cpufeat

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// XCR0 state components the OS must enable before the registers are usable.
const (
	xcr0SSE       = 1 << 1
	xcr0AVX       = 1 << 2
	xcr0Opmask    = 1 << 5
	xcr0ZMMHi256  = 1 << 6
	xcr0Hi16ZMM   = 1 << 7
	xcr0TileCfg   = 1 << 17
	xcr0TileData  = 1 << 18
	xcr0AVXState  = xcr0SSE | xcr0AVX
	xcr0AVX512All = xcr0AVXState | xcr0Opmask | xcr0ZMMHi256 | xcr0Hi16ZMM
	xcr0AMXState  = xcr0TileCfg | xcr0TileData
)

func bit(v uint32, n uint) bool { return v>>n&1 == 1 }

// CPUID registers, as cpuid returns them.
const (
	eax = iota
	ebx
	ecx
	edx
)

// x86Bit is where CPUID reports one feature: leaf, subleaf, register and
// bit (Intel SDM vol. 2A, CPUID; AMD APM vol. 3).
type x86Bit struct {
	flag      *bool
	leaf, sub uint32
	reg       int
	bit       uint
}

func detectX86() X86 {
	if !haveCPUID {
		return x86FromXSys()
	}
	var x X86
	maxLeaf, _, _, _ := cpuid(0, 0)
	var maxSub7 uint32 // highest subleaf of leaf 7
	if maxLeaf >= 7 {
		maxSub7, _, _, _ = cpuid(7, 0)
	}
	for _, f := range []x86Bit{
		{&x.FMA, 1, 0, ecx, 12},
		{&x.OSXSAVE, 1, 0, ecx, 27},
		{&x.AVX, 1, 0, ecx, 28},
		{&x.F16C, 1, 0, ecx, 29},
		{&x.AVX2, 7, 0, ebx, 5},
		{&x.BMI2, 7, 0, ebx, 8},
		{&x.AVX512F, 7, 0, ebx, 16},
		{&x.AVX512DQ, 7, 0, ebx, 17},
		{&x.AVX512IFMA, 7, 0, ebx, 21},
		{&x.AVX512CD, 7, 0, ebx, 28},
		{&x.AVX512BW, 7, 0, ebx, 30},
		{&x.AVX512VL, 7, 0, ebx, 31},
		{&x.AVX512VBMI, 7, 0, ecx, 1},
		{&x.AVX512VNNI, 7, 0, ecx, 11},
		{&x.AMXBF16, 7, 0, edx, 22},
		{&x.AVX512FP16, 7, 0, edx, 23},
		{&x.AMXTile, 7, 0, edx, 24},
		{&x.AMXInt8, 7, 0, edx, 25},
		{&x.AVXVNNI, 7, 1, eax, 4},
		{&x.AVX512BF16, 7, 1, eax, 5},
		{&x.AMXFP16, 7, 1, eax, 21},
	} {
		if f.leaf > maxLeaf || f.leaf == 7 && f.sub > maxSub7 {
			continue
		}
		var regs [4]uint32
		regs[eax], regs[ebx], regs[ecx], regs[edx] = cpuid(f.leaf, f.sub)
		*f.flag = bit(regs[f.reg], f.bit)
	}
	if x.OSXSAVE {
		xcr0, _ := xgetbv(0)
		x.OSAVX = xcr0&xcr0AVXState == xcr0AVXState
		x.OSAVX512 = xcr0&xcr0AVX512All == xcr0AVX512All
		x.OSAMX = xcr0&xcr0AMXState == xcr0AMXState
	}
	return x
}

// x86FromXSys fills what golang.org/x/sys/cpu knows. Its AVX and AVX-512 bits
// already include the OS check; it does not read the tile state, so AMX stays
// unusable in such builds.
func x86FromXSys() X86 {
	c := cpu.X86
	return X86{
		AVX: c.HasAVX, AVX2: c.HasAVX2, FMA: c.HasFMA, F16C: c.HasF16C, BMI2: c.HasBMI2,
		AVX512F: c.HasAVX512F, AVX512BW: c.HasAVX512BW, AVX512VL: c.HasAVX512VL,
		AVX512DQ: c.HasAVX512DQ, AVX512CD: c.HasAVX512CD, AVX512VBMI: c.HasAVX512VBMI,
		AVX512IFMA: c.HasAVX512IFMA, AVX512VNNI: c.HasAVX512VNNI, AVX512BF16: c.HasAVX512BF16,
		AVXVNNI: c.HasAVXVNNI,
		AMXTile: c.HasAMXTile, AMXInt8: c.HasAMXInt8, AMXBF16: c.HasAMXBF16,
		OSXSAVE: c.HasOSXSAVE, OSAVX: c.HasAVX, OSAVX512: c.HasAVX512,
	}
}

func detectARM64() ARM64 {
	c := cpu.ARM64
	return ARM64{ASIMD: c.HasASIMD, ASIMDDP: c.HasASIMDDP, I8MM: c.HasI8MM, ASIMDHP: c.HasASIMDHP, SVE: c.HasSVE}
}

// Identity is the processor's self-description from CPUID.
type Identity struct {
	Vendor   string `json:"vendor"`          // "GenuineIntel", "AuthenticAMD", ...
	Brand    string `json:"brand,omitempty"` // marketing name, e.g. "Intel(R) Xeon(R) Platinum 8480+"
	Family   int    `json:"family"`          // display family (base + extended)
	Model    int    `json:"model"`           // display model (base + extended)
	Stepping int    `json:"stepping"`
}

// CPUIdentity returns vendor, brand string, family, model and stepping, and
// false when CPUID is not available to this build (non-amd64 or noasm).
func CPUIdentity() (Identity, bool) {
	if !haveCPUID {
		return Identity{}, false
	}
	maxLeaf, b, c, d := cpuid(0, 0)
	id := Identity{Vendor: string(le32(b, d, c))}
	if maxLeaf >= 1 {
		eax, _, _, _ := cpuid(1, 0)
		base := int(eax>>8) & 0xf
		id.Family = base
		id.Model = int(eax>>4) & 0xf
		if base == 0xf {
			id.Family += int(eax>>20) & 0xff
		}
		if base == 0x6 || base == 0xf {
			id.Model |= (int(eax>>16) & 0xf) << 4
		}
		id.Stepping = int(eax) & 0xf
	}
	if maxExt, _, _, _ := cpuid(0x80000000, 0); maxExt >= 0x80000004 {
		var brand []byte
		for leaf := uint32(0x80000002); leaf <= 0x80000004; leaf++ {
			a, b, c, d := cpuid(leaf, 0)
			brand = append(brand, le32(a, b, c, d)...)
		}
		id.Brand = strings.TrimSpace(strings.TrimRight(string(brand), "\x00"))
	}
	return id, true
}

func le32(words ...uint32) []byte {
	out := make([]byte, 0, 4*len(words))
	for _, w := range words {
		out = append(out, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	return out
}

// Cache is one level of the cache hierarchy as CPUID describes it.
type Cache struct {
	Level      int    `json:"level"`
	Type       string `json:"type"` // "data", "instruction", "unified"
	SizeBytes  int    `json:"size_bytes"`
	LineBytes  int    `json:"line_bytes"`
	Ways       int    `json:"ways"`
	SharedWith int    `json:"shared_by_threads"` // logical processors sharing it (upper bound from CPUID)
}

// Caches enumerates the caches from CPUID leaf 4 (Intel) or 0x8000001D
// (AMD, with topology extensions); both use the same layout. It returns nil
// when CPUID is unavailable or the leaf is absent (some hypervisors hide it).
func Caches() []Cache {
	if !haveCPUID {
		return nil
	}
	maxLeaf, b, c, d := cpuid(0, 0)
	vendor := string(le32(b, d, c))
	leaf := uint32(4)
	if vendor == "AuthenticAMD" || vendor == "HygonGenuine" {
		maxExt, _, _, _ := cpuid(0x80000000, 0)
		_, _, ecx, _ := cpuid(0x80000001, 0)
		if maxExt < 0x8000001D || !bit(ecx, 22) { // no TOPOEXT: legacy leaves
			return amdLegacyCaches(maxExt)
		}
		leaf = 0x8000001D
	} else if maxLeaf < 4 {
		return nil
	}
	var caches []Cache
	for sub := uint32(0); sub < 16; sub++ {
		a, b, c, _ := cpuid(leaf, sub)
		typ := a & 0x1f
		if typ == 0 {
			break
		}
		ways := int(b>>22&0x3ff) + 1
		parts := int(b>>12&0x3ff) + 1
		line := int(b&0xfff) + 1
		sets := int(c) + 1
		caches = append(caches, Cache{
			Level:      int(a >> 5 & 7),
			Type:       cacheType(typ),
			SizeBytes:  ways * parts * line * sets,
			LineBytes:  line,
			Ways:       ways,
			SharedWith: int(a>>14&0xfff) + 1,
		})
	}
	return caches
}

// amdLegacyCaches reads AMD's older cache leaves: 0x80000005 (L1) and
// 0x80000006 (L2, L3). They give sizes, lines and associativity codes but not
// sharing, which is left 0.
func amdLegacyCaches(maxExt uint32) []Cache {
	var caches []Cache
	if maxExt >= 0x80000005 {
		_, _, c, d := cpuid(0x80000005, 0)
		if kb := int(c >> 24); kb > 0 {
			caches = append(caches, Cache{Level: 1, Type: "data", SizeBytes: kb << 10, LineBytes: int(c & 0xff), Ways: int(c >> 16 & 0xff)})
		}
		if kb := int(d >> 24); kb > 0 {
			caches = append(caches, Cache{Level: 1, Type: "instruction", SizeBytes: kb << 10, LineBytes: int(d & 0xff), Ways: int(d >> 16 & 0xff)})
		}
	}
	if maxExt >= 0x80000006 {
		_, _, c, d := cpuid(0x80000006, 0)
		if kb := int(c >> 16); kb > 0 {
			caches = append(caches, Cache{Level: 2, Type: "unified", SizeBytes: kb << 10, LineBytes: int(c & 0xff)})
		}
		if units := int(d >> 18); units > 0 { // in 512 KiB units
			caches = append(caches, Cache{Level: 3, Type: "unified", SizeBytes: units << 19, LineBytes: int(d & 0xff)})
		}
	}
	return caches
}

func cacheType(t uint32) string {
	switch t {
	case 1:
		return "data"
	case 2:
		return "instruction"
	case 3:
		return "unified"
	}
	return "unknown"
}
