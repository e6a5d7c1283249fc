package cpufeat

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/damascus-llm/damascus/internal/cli"
)

// HideEnv names the environment variable that hides features from this
// process: a comma-separated list of feature names (DAMASCUS_CPU_HIDE=
// avx512f,amx-tile). A hidden feature reads as absent everywhere — [Has],
// [Missing], [List], [AMX] — so the engine, the ledger and the tests pick
// what a CPU without it would run. It is how one machine exercises the
// AVX2 and generic fallbacks that AMD and older Intel machines take.
//
// Hiding a feature also hides every feature built on it (hiding avx512f
// hides every avx512* feature and AMX, since this project's AMX code uses
// AVX-512 beside the tiles; hiding avx2 hides AVX-512 too), so that no
// combination a real CPU never has is tested. A name that is not a feature
// is an error ([HideError]), never silently ignored.
const HideEnv = "DAMASCUS_CPU_HIDE"

// needs lists what each feature is built on: hiding a prerequisite hides
// the features that need it.
var needs = map[string][]string{
	"avx2": {"avx"}, "fma": {"avx"}, "f16c": {"avx"}, "avx-vnni": {"avx2"},
	"avx512f":  {"avx2", "fma", "f16c"},
	"avx512bw": {"avx512f"}, "avx512vl": {"avx512f"}, "avx512dq": {"avx512f"},
	"avx512cd": {"avx512f"}, "avx512vbmi": {"avx512bw"}, "avx512ifma": {"avx512f"},
	"avx512vnni": {"avx512f"}, "avx512bf16": {"avx512f"}, "avx512fp16": {"avx512bw"},
	"amx-tile": {"avx512f", "avx512bw", "avx512vl"},
	"amx-int8": {"amx-tile"}, "amx-bf16": {"amx-tile"}, "amx-fp16": {"amx-tile"},
	"asimddp": {"asimd"}, "i8mm": {"asimd"}, "asimdhp": {"asimd"}, "sve": {"asimd"},
}

var (
	hideOnce sync.Once
	hidden   map[string]bool // canonical names hidden, prerequisites followed
	hideErr  error
)

func loadHidden() {
	hideOnce.Do(func() { hidden, hideErr = parseHide(os.Getenv(HideEnv)) })
}

// parseHide reads a HideEnv value into the set of hidden names, closed
// under "built on".
func parseHide(s string) (map[string]bool, error) {
	direct := map[string]bool{}
	for _, part := range cli.SplitList(s) {
		f, ok := lookup(part)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not a CPU feature name (known: %s)", HideEnv, part, strings.Join(Names(), ", "))
		}
		direct[f.name] = true
	}
	out := map[string]bool{}
	for _, f := range features {
		if hiddenBy(f.name, direct) {
			out[f.name] = true
		}
	}
	return out, nil
}

func hiddenBy(name string, direct map[string]bool) bool {
	if direct[name] {
		return true
	}
	for _, p := range needs[name] {
		if hiddenBy(p, direct) {
			return true
		}
	}
	return false
}

// isHidden reports whether a canonical name is hidden. A malformed HideEnv
// hides nothing: [HideError] reports it, and programs call that at start.
func isHidden(name string) bool {
	loadHidden()
	return hidden[name]
}

// HideError reports a malformed $DAMASCUS_CPU_HIDE, as an error naming the
// bad entry; nil when it is unset or well formed.
func HideError() error {
	loadHidden()
	return hideErr
}

// Hidden returns the names hidden by $DAMASCUS_CPU_HIDE, prerequisites
// followed, sorted; nil when nothing is hidden.
func Hidden() []string {
	loadHidden()
	var names []string
	for n := range hidden {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
