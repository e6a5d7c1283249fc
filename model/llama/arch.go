package llama

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/damascus-llm/damascus/gguf"
)

// architectures maps a GGUF file's general.architecture to the reader of
// its weights. A second architecture whose blocks fit Model registers its
// reader here; one that does not brings its own model type as well.
var architectures = map[string]func(*gguf.File) (*Model, error){
	"llama": FromGGUF,
}

// readModel reads f's weights with the reader of its architecture.
func readModel(f *gguf.File) (*Model, error) {
	arch, err := f.String("general.architecture")
	if err != nil {
		return nil, err
	}
	read, ok := architectures[arch]
	if !ok {
		return nil, fmt.Errorf("architecture %q is not supported (registered: %s)", arch,
			strings.Join(slices.Sorted(maps.Keys(architectures)), ", "))
	}
	return read(f)
}
