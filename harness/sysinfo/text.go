package sysinfo

import (
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
)

// WriteText renders the facts for people: one "key: value" line each,
// grouped as the protocol records them.
func WriteText(w io.Writer, i Info) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	line := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s:\t%s\n", k, fmt.Sprintf(format, args...)) }

	line("date", "%s", i.Date.Format("2006-01-02 15:04:05 MST"))
	line("host", "%s", i.Hostname)
	c := i.CPU
	line("cpu", "%s (%s, family %d model %d stepping %d)", c.Model, c.Vendor, c.Family, c.ModelID, c.Stepping)
	line("cores", "%s physical, %d logical", countOr(c.PhysicalCores), c.LogicalCPUs)
	line("features", "%s", strings.Join(presentFeatures(c.Features), " "))
	// Absent features of this architecture only; the JSON lists them all.
	line("absent", "%s", strings.Join(absentFeatures(c), " "))
	line("amx permission", "%s", c.AMXPermission)
	line("caches", "%s (%s)", cacheSummary(c.Caches), c.CacheSource)
	m := i.Memory
	if m.TotalBytes > 0 {
		line("memory", "%s total, %s available", gib(m.TotalBytes), gib(m.AvailableBytes))
	} else {
		line("memory", "%s", m.Source)
	}
	h := i.HugePages
	line("huge pages", "THP enabled=%s defrag=%s; hugetlbfs %d total, %d free, %s pages; GLIBC_TUNABLES=%s",
		h.THPEnabled, h.THPDefrag, h.Total, h.Free, sizeOr(h.PageSizeBytes), h.GlibcTunables)
	line("os", "%s/%s, %s, kernel %s", i.OS.GOOS, i.OS.GOARCH, i.OS.Distro, i.OS.Kernel)
	line("go", "%s, GOMAXPROCS %d, NumCPU %d", i.Go.Version, i.Go.GOMAXPROCS, i.Go.NumCPU)
	line("cpu frequency", "%s", freqSummary(i.Sensors))
	line("temperatures", "%s", tempSummary(i.Sensors))
	line("gpu", "%s", gpuSummary(i.GPU))
	dirty := "clean"
	if i.Repo.Dirty {
		dirty = "dirty"
	}
	if i.Repo.Source == Unavailable {
		line("repo", "%s", Unavailable)
	} else {
		line("repo", "%s (%s, from %s)", i.Repo.Commit, dirty, i.Repo.Source)
	}
	return tw.Flush()
}

func absentFeatures(c CPU) []string {
	var names []string
	for _, f := range c.Features {
		if !f.Present && f.Arch == runtime.GOARCH {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return names
}

func countOr(n int) string {
	if n <= 0 {
		return Unavailable
	}
	return fmt.Sprint(n)
}

func cacheSummary(cs []Cache) string {
	if len(cs) == 0 {
		return Unavailable
	}
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		name := fmt.Sprintf("L%d", c.Level)
		switch c.Type {
		case "data":
			name += "d"
		case "instruction":
			name += "i"
		}
		parts = append(parts, name+" "+sizeOr(c.SizeBytes))
	}
	return strings.Join(parts, ", ")
}

func sizeOr(b int64) string {
	switch {
	case b <= 0:
		return Unavailable
	case b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

func freqSummary(s Sensors) string {
	if len(s.FrequencyMHz) == 0 {
		return Unavailable
	}
	lo, hi := s.FrequencyMHz[0], s.FrequencyMHz[0]
	for _, f := range s.FrequencyMHz {
		lo, hi = min(lo, f), max(hi, f)
	}
	if lo == hi {
		return fmt.Sprintf("%.0f MHz on %d CPUs (%s)", lo, len(s.FrequencyMHz), s.FrequencySource)
	}
	return fmt.Sprintf("%.0f–%.0f MHz over %d CPUs (%s)", lo, hi, len(s.FrequencyMHz), s.FrequencySource)
}

func tempSummary(s Sensors) string {
	if len(s.TemperaturesC) == 0 {
		return Unavailable
	}
	keys := make([]string, 0, len(s.TemperaturesC))
	for k := range s.TemperaturesC {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.1f°C", k, s.TemperaturesC[k])
	}
	return strings.Join(parts, ", ")
}

func gpuSummary(g GPU) string {
	if len(g.Devices) == 0 {
		return g.Status
	}
	parts := make([]string, len(g.Devices))
	for i, d := range g.Devices {
		parts[i] = fmt.Sprintf("%s (%s, driver %s)", d.Name, d.Memory, d.Driver)
	}
	if g.CUDAVersion != "" {
		return strings.Join(parts, "; ") + ", CUDA " + g.CUDAVersion
	}
	return strings.Join(parts, "; ")
}
