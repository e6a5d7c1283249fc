package llamacpp

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/ebitengine/purego"
)

// CPUVariantInfo is one ggml CPU backend library of the pinned build.
type CPUVariantInfo struct {
	Name  string // e.g. "sapphirerapids"
	Path  string
	Score int // ggml_backend_score(): 0 if this CPU lacks its instructions; ggml loads the highest
}

// CPUVariants lists the ggml CPU variant libraries installed, with the score
// ggml gives each on this CPU, highest first. Scoring loads each library
// briefly, as ggml_backend_load_all does; a bench runs a variant only when
// its score is positive.
func CPUVariants() ([]CPUVariantInfo, error) {
	dir, err := LibDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "libggml-cpu-*.so"))
	if err != nil {
		return nil, err
	}
	var out []CPUVariantInfo
	for _, p := range paths {
		score, err := variantScore(p)
		if err != nil {
			return nil, err
		}
		out = append(out, CPUVariantInfo{Name: variantName(p), Path: p, Score: score})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func variantScore(path string) (int, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", path, err)
	}
	defer purego.Dlclose(h)
	sym, err := purego.Dlsym(h, "ggml_backend_score")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	var score func() int32
	purego.RegisterFunc(&score, sym)
	return int(score()), nil
}
