package ledger

import (
	"fmt"
	"sync"

	"github.com/damascus-llm/damascus/internal/cpufeat"
)

// HasFeature reports whether this process may use a feature: a CPU feature
// named as in internal/cpufeat ("avx2", "fma", "avx512f", "avx512bw",
// "avx512vnni", "amx-int8", "asimd" ...), for AMX after asking the OS for
// permission once, or a device feature registered with
// RegisterDeviceFeature ("cuda"). It is a variable so tests can simulate
// machines without a feature.
var HasFeature = hasFeature

// KnownFeature reports whether name is a feature cpufeat or a registered
// device probe can decide, so a misspelt requirement is rejected at
// registration instead of silently making a variant unavailable. It is a
// variable for the same reason as HasFeature.
var KnownFeature = knownFeature

var (
	deviceMu    sync.RWMutex
	deviceProbe = map[string]*deviceFeature{}
)

type deviceFeature struct {
	once  sync.Once
	probe func() bool
	has   bool
}

// RegisterDeviceFeature adds a feature that no CPU instruction decides but
// an accelerator's presence does ("cuda": a CUDA device opens). probe runs
// once, the first time a variant asks for the feature, so a machine that
// never asks never loads a driver; variants needing an absent device are
// listed and skipped like those needing an absent instruction. Register the
// feature in the init function that registers its variants, before them. A
// name cpufeat already knows, or one registered twice, panics.
func RegisterDeviceFeature(name string, probe func() bool) {
	if cpufeat.Known(name) {
		panic(fmt.Sprintf("ledger.RegisterDeviceFeature: %q is a CPU feature", name))
	}
	deviceMu.Lock()
	defer deviceMu.Unlock()
	if _, dup := deviceProbe[name]; dup {
		panic(fmt.Sprintf("ledger.RegisterDeviceFeature: %q registered twice", name))
	}
	deviceProbe[name] = &deviceFeature{probe: probe}
}

func lookupDevice(name string) (*deviceFeature, bool) {
	deviceMu.RLock()
	defer deviceMu.RUnlock()
	f, ok := deviceProbe[name]
	return f, ok
}

func hasFeature(name string) bool {
	if f, ok := lookupDevice(name); ok {
		f.once.Do(func() { f.has = f.probe() })
		return f.has
	}
	return cpufeat.Has(name)
}

func knownFeature(name string) bool {
	if _, ok := lookupDevice(name); ok {
		return true
	}
	return cpufeat.Known(name)
}
