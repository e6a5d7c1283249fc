package cpufeat

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestNamesAreKnownAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range Names() {
		if seen[n] {
			t.Errorf("duplicate feature name %q", n)
		}
		seen[n] = true
		if !Known(n) || !Known(strings.ToUpper(n)) {
			t.Errorf("Known(%q) = false", n)
		}
	}
	for alias, canon := range aliases {
		if !seen[canon] {
			t.Errorf("alias %q points to unknown name %q", alias, canon)
		}
		if Has(alias) != Has(canon) {
			t.Errorf("Has(%q) != Has(%q)", alias, canon)
		}
	}
	if len(List()) != len(Names()) {
		t.Errorf("List has %d entries, Names %d", len(List()), len(Names()))
	}
}

func TestUnknownFeature(t *testing.T) {
	if Known("avx9000") || Has("avx9000") {
		t.Fatal("avx9000 reported as known or present")
	}
	got := Missing("avx9000")
	if len(got) != 1 || got[0] != "avx9000 (unknown feature)" {
		t.Fatalf("Missing(avx9000) = %q", got)
	}
}

func TestMissingAgreesWithHas(t *testing.T) {
	for _, f := range List() {
		m := Missing(f.Name)
		if f.Present != (len(m) == 0) {
			t.Errorf("%s: present=%t but Missing=%q", f.Name, f.Present, m)
		}
	}
}

// cpuinfoFlag names each x86 feature as /proc/cpuinfo spells it. Linux clears
// a flag when the CPU lacks it or the kernel disabled its state, which is
// what CPU-and-OS detection must match (AMX permission aside).
var cpuinfoFlag = map[string]string{
	"avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c", "bmi2": "bmi2",
	"avx-vnni": "avx_vnni", "avx512f": "avx512f", "avx512bw": "avx512bw",
	"avx512vl": "avx512vl", "avx512dq": "avx512dq", "avx512cd": "avx512cd",
	"avx512vbmi": "avx512vbmi", "avx512ifma": "avx512ifma", "avx512vnni": "avx512_vnni",
	"avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16",
	"amx-tile": "amx_tile", "amx-int8": "amx_int8", "amx-bf16": "amx_bf16", "amx-fp16": "amx_fp16",
}

func readCPUInfo(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo: %v", err)
	}
	defer f.Close()
	fields := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			break // first processor only
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return fields
}

func TestAgreesWithProcCPUInfo(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" || !haveCPUID {
		t.Skip("needs linux/amd64 with the CPUID assembly")
	}
	info := readCPUInfo(t)
	flags := map[string]bool{}
	for _, f := range strings.Fields(info["flags"]) {
		flags[f] = true
	}
	x := CPUX86()
	for _, f := range features {
		flag, ok := cpuinfoFlag[f.name]
		if !ok {
			continue
		}
		if got := f.has(x, ARM64{}); got != flags[flag] {
			t.Errorf("%s: CPUID+XCR0 says %t, /proc/cpuinfo flag %q says %t", f.name, got, flag, flags[flag])
		}
	}
	id, ok := CPUIdentity()
	if !ok {
		t.Fatal("CPUIdentity unavailable with CPUID assembly")
	}
	if id.Vendor != info["vendor_id"] {
		t.Errorf("vendor %q, /proc/cpuinfo %q", id.Vendor, info["vendor_id"])
	}
	if fam, _ := strconv.Atoi(info["cpu family"]); fam != id.Family {
		t.Errorf("family %d, /proc/cpuinfo %d", id.Family, fam)
	}
	if model, _ := strconv.Atoi(info["model"]); model != id.Model {
		t.Errorf("model %d, /proc/cpuinfo %d", id.Model, model)
	}
}

func TestXSysFallbackAgrees(t *testing.T) {
	if !haveCPUID {
		t.Skip("fallback is the only path in this build")
	}
	raw, xs := detectX86(), x86FromXSys()
	// x/sys/cpu folds the OS check into AVX and AVX-512 bits.
	check := func(name string, rawBit, xsBit bool) {
		if rawBit != xsBit {
			t.Errorf("%s: raw CPUID %t, x/sys/cpu %t", name, rawBit, xsBit)
		}
	}
	check("avx2", raw.AVX2 && raw.OSAVX, xs.AVX2)
	check("fma", raw.FMA, xs.FMA)
	check("avx512f", raw.AVX512F && raw.OSAVX512, xs.AVX512F)
	check("avx512vnni", raw.AVX512VNNI, xs.AVX512VNNI)
	check("avx512bf16", raw.AVX512BF16, xs.AVX512BF16)
	check("avx-vnni", raw.AVXVNNI, xs.AVXVNNI)
	check("amx-tile", raw.AMXTile, xs.AMXTile)
	check("amx-int8", raw.AMXInt8, xs.AMXInt8)
	check("amx-bf16", raw.AMXBF16, xs.AMXBF16)
}

func TestCaches(t *testing.T) {
	caches := Caches()
	if caches == nil {
		t.Skip("CPUID cache leaves not available here")
	}
	var l1d bool
	for _, c := range caches {
		if c.SizeBytes <= 0 || c.LineBytes <= 0 || c.Level < 1 || c.Level > 4 {
			t.Errorf("implausible cache %+v", c)
		}
		l1d = l1d || (c.Level == 1 && c.Type == "data")
	}
	if !l1d {
		t.Errorf("no L1 data cache in %+v", caches)
	}
}

func TestAMXReasonIsCachedAndNamed(t *testing.T) {
	err1, err2 := AMX(), AMX()
	if err1 != err2 {
		t.Fatalf("AMX() not cached: %v then %v", err1, err2)
	}
	x := CPUX86()
	switch {
	case x.AMXTile && x.OSAMX && isHidden("amx-tile"):
		if !errors.Is(err1, ErrAMXHidden) {
			t.Fatalf("AMX hidden by $%s but AMX() = %v", HideEnv, err1)
		}
	case !x.AMXTile:
		if !errors.Is(err1, ErrAMXNotInCPU) {
			t.Fatalf("CPU lacks AMX but AMX() = %v", err1)
		}
	case !x.OSAMX:
		if !errors.Is(err1, ErrAMXNotInOS) {
			t.Fatalf("OS lacks tile state but AMX() = %v", err1)
		}
	}
	if err1 == nil && (!Has("amx-tile") || !x.AMXTile) {
		t.Fatal("AMX() granted but amx-tile absent")
	}
	if err1 != nil && Has("amx-int8") {
		t.Fatalf("amx-int8 present although AMX() = %v", err1)
	}
	t.Logf("AMX: %v", err1)
}

func TestArchOfFeatures(t *testing.T) {
	for _, f := range List() {
		if f.Arch != "amd64" && f.Arch != "arm64" {
			t.Errorf("%s: arch %q", f.Name, f.Arch)
		}
		if f.Present && f.Arch != runtime.GOARCH {
			t.Errorf("%s (%s) present on %s", f.Name, f.Arch, runtime.GOARCH)
		}
	}
}
