// Package hugemem allocates anonymous memory backed, where the kernel allows,
// by transparent huge pages. Decode streams every weight once per token, and
// on virtual machines the page-table walks of 4 KiB pages cost as much as
// the arithmetic: where weights live is a first-class performance choice.
package hugemem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// HugePageSize is the transparent huge page size on amd64 and arm64 (4 KiB base pages).
const HugePageSize = 2 << 20

// A Region is an anonymous mapping. Its Bytes stay valid until Free.
type Region struct {
	mem   []byte // the whole mapping
	bytes []byte // the part handed out: len as asked
	huge  bool   // MADV_HUGEPAGE was accepted
}

// Bytes returns the region's memory.
func (r *Region) Bytes() []byte { return r.bytes }

// Advised reports whether the kernel accepted the huge-page advice. Whether it
// actually backed the memory with huge pages is told by HugeBytes.
func (r *Region) Advised() bool { return r.huge }

// THPMode returns the system's transparent huge page mode ("always",
// "madvise", "never"), or "unavailable".
func THPMode() string {
	mode, found, text, err := thpSetting()
	switch {
	case err != nil:
		return "unavailable"
	case found:
		return mode
	}
	return strings.TrimSpace(text)
}

// SelectedTHPMode returns the bracketed (selected) transparent huge page
// mode, or "" when the setting is unreadable or has none.
func SelectedTHPMode() string {
	mode, _, _, _ := thpSetting()
	return mode
}

// thpSetting reads the THP setting: the bracketed mode in it (found says
// whether there is one) and the whole text.
func thpSetting() (mode string, found bool, text string, err error) {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return "", false, "", err
	}
	text = string(b)
	if i := strings.IndexByte(text, '['); i >= 0 {
		if j := strings.IndexByte(text[i:], ']'); j > 0 {
			return text[i+1 : i+j], true, text, nil
		}
	}
	return "", false, text, nil
}

// Unavailable says why this system cannot back memory with transparent huge
// pages (not linux, THP compiled out, or the "never" mode), or returns ""
// when Alloc's advice can take effect. Callers fall back to 4 KiB pages.
func Unavailable() string {
	if !supported {
		return "huge pages are only supported on linux"
	}
	switch mode := THPMode(); mode {
	case "unavailable":
		return "this kernel has no transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled is missing)"
	case "never":
		return "transparent huge pages are disabled (/sys/kernel/mm/transparent_hugepage/enabled: never)"
	}
	return ""
}

// HugeBytes returns how many bytes of the mapping that contains addr are
// backed by anonymous huge pages, read from /proc/self/smaps.
func HugeBytes(r *Region) (int64, error) {
	if r == nil || len(r.mem) == 0 {
		return 0, nil
	}
	return smapsField(addrOf(r.mem), "AnonHugePages:")
}

// smapsField finds the mapping that starts at start in /proc/self/smaps and
// returns the named field in bytes.
func smapsField(start uintptr, field string) (int64, error) {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("hugemem: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	in := false
	for sc.Scan() {
		line := sc.Text()
		if dash := strings.IndexByte(line, '-'); dash > 0 && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			lo, err := strconv.ParseUint(line[:dash], 16, 64)
			in = err == nil && uintptr(lo) == start
			continue
		}
		if in && strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) < 2 {
				break
			}
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("hugemem: smaps %s: %w", field, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("hugemem: mapping at %#x not found in /proc/self/smaps", start)
}
