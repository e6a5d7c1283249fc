package promoted

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

// Preferences is the content of preferences.json: for each op, the variants
// to use in order of preference, each with the results record that earned
// its place. Ops without a list use their naive variant.
type Preferences struct {
	Note string              `json:"note,omitempty"`
	Ops  map[string][]Choice `json:"ops"`
	// Bundles are kernels promoted together, ahead of the ops' lists: the
	// kernels of one weight layout, whose gain (one copy of the weights,
	// read by decode and prefill alike) is the engine's, not any one
	// kernel's, so their evidence is an engine A/B (`ledger ab`). The
	// first bundle that applies here and whose every kernel runs here
	// gives its ops' variants; a bundle that cannot run whole gives none.
	Bundles []Bundle `json:"bundles,omitempty"`
}

// A Bundle is a set of variants promoted together (see Preferences).
type Bundle struct {
	Name     string            `json:"name"`               // the A/B arm that earned it
	Kernels  map[string]string `json:"kernels"`            // op → variant
	Evidence string            `json:"evidence,omitempty"` // run id of the engine A/B it won
	Over     string            `json:"over,omitempty"`     // what it was measured against
	Date     string            `json:"date,omitempty"`
	CPU      string            `json:"cpu,omitempty"` // as Choice.CPU
	// Absent names CPU features whose presence rules the bundle out: its
	// evidence was measured with them hidden (DAMASCUS_CPU_HIDE), for
	// processors that lack them (an AVX2 bundle, say, on a machine whose
	// AVX-512 kernels were never timed against it).
	Absent []string `json:"absent,omitempty"`
}

// AppliesTo reports whether the bundle holds on the processor cpu names
// (its CPUKey).
func (b Bundle) AppliesTo(cpu string) bool { return cpuApplies(b.CPU, cpu) }

// RuledOut reports whether one of the bundle's Absent features is present
// (has says whether one is).
func (b Bundle) RuledOut(has func(string) bool) bool {
	for _, f := range b.Absent {
		if has(f) {
			return true
		}
	}
	return false
}

// A Choice is one entry of an op's preference list.
type Choice struct {
	Variant  string `json:"variant"`            // variant name within the op
	Evidence string `json:"evidence,omitempty"` // results record id of the head-to-head it won
	Over     string `json:"over,omitempty"`     // the incumbent it beat
	Date     string `json:"date,omitempty"`     // when it was promoted (YYYY-MM-DD)
	// CPU limits the entry to the processors its evidence holds for: one
	// CPUID vendor ("GenuineIntel", "AuthenticAMD") or one family of it
	// ("AuthenticAMD/25": Zen 3 and 4; "AuthenticAMD/26": Zen 5), for a
	// variant whose win does not carry over (software prefetch distances,
	// for one: on a Zen 4 VM prefetching 4 KiB ahead lost decode 11 %,
	// on a Zen 5 VM it gained 37 %). Empty: any processor.
	CPU string `json:"cpu,omitempty"`
}

// AppliesTo reports whether the entry holds on the processor cpu names
// (its CPUKey).
func (c Choice) AppliesTo(cpu string) bool { return cpuApplies(c.CPU, cpu) }

// CPUKey names a processor as preference entries limit themselves to it:
// "vendor/family" (family in decimal, as CPUID displays it), or the vendor
// alone when the family is unknown (0).
func CPUKey(vendor string, family int) string {
	if family <= 0 || vendor == "" {
		return vendor
	}
	return vendor + "/" + strconv.Itoa(family)
}

// CPUVendor is the vendor part of a CPUKey.
func CPUVendor(cpu string) string {
	vendor, _, _ := strings.Cut(cpu, "/")
	return vendor
}

// cpuApplies reports whether an entry limited to entry ("" for none, a
// vendor, or vendor/family) holds on the processor cpu (a CPUKey).
func cpuApplies(entry, cpu string) bool {
	if entry == "" || entry == cpu {
		return true
	}
	return entry == CPUVendor(cpu)
}

// checkCPU refuses a cpu field that is neither a vendor nor vendor/family.
func checkCPU(cpu string) error {
	vendor, family, hasFamily := strings.Cut(cpu, "/")
	if vendor == "" && cpu != "" {
		return fmt.Errorf("cpu %q: want a CPUID vendor, or vendor/family", cpu)
	}
	if hasFamily {
		if n, err := strconv.Atoi(family); err != nil || n <= 0 {
			return fmt.Errorf("cpu %q: the family after the slash must be a positive decimal number", cpu)
		}
	}
	return nil
}

//go:embed preferences.json
var embedded []byte

// Embedded returns the preference lists compiled into this binary.
func Embedded() (Preferences, error) { return ParsePreferences(embedded) }

// ParsePreferences decodes a preferences.json document.
func ParsePreferences(data []byte) (Preferences, error) {
	var p Preferences
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Preferences{}, fmt.Errorf("promoted: preferences: %w", err)
	}
	if p.Ops == nil {
		p.Ops = map[string][]Choice{}
	}
	seenBundle := map[[2]string]bool{}
	for i, b := range p.Bundles {
		if b.Name == "" || len(b.Kernels) == 0 {
			return Preferences{}, fmt.Errorf("promoted: preferences: bundle %d needs a name and kernels", i)
		}
		for op, v := range b.Kernels {
			if op == "" || v == "" {
				return Preferences{}, fmt.Errorf("promoted: preferences: bundle %s has an empty op or variant", b.Name)
			}
		}
		if err := checkCPU(b.CPU); err != nil {
			return Preferences{}, fmt.Errorf("promoted: preferences: bundle %s: %w", b.Name, err)
		}
		for _, f := range b.Absent {
			if !cpufeat.Known(f) {
				return Preferences{}, fmt.Errorf("promoted: preferences: bundle %s: absent feature %q is not one the CPU detection knows", b.Name, f)
			}
		}
		if key := [2]string{b.Name, b.CPU}; seenBundle[key] {
			return Preferences{}, fmt.Errorf("promoted: preferences: bundle %s listed twice (cpu %q)", b.Name, b.CPU)
		} else {
			seenBundle[key] = true
		}
	}
	for op, list := range p.Ops {
		seen := map[Choice]bool{}
		for i, c := range list {
			if c.Variant == "" {
				return Preferences{}, fmt.Errorf("promoted: preferences: %s entry %d has no variant", op, i)
			}
			if err := checkCPU(c.CPU); err != nil {
				return Preferences{}, fmt.Errorf("promoted: preferences: %s entry %d: %w", op, i, err)
			}
			key := Choice{Variant: c.Variant, CPU: c.CPU}
			if seen[key] {
				return Preferences{}, fmt.Errorf("promoted: preferences: %s lists %s twice (cpu %q)", op, c.Variant, c.CPU)
			}
			seen[key] = true
		}
	}
	return p, nil
}

// Marshal encodes p as indented JSON with ops in sorted order (encoding/json
// sorts map keys), ending in a newline, so the committed file diffs cleanly.
func (p Preferences) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// OpNames returns the ops that have a preference list, sorted.
func (p Preferences) OpNames() []string {
	return slices.Sorted(maps.Keys(p.Ops))
}
