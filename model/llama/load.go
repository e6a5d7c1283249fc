package llama

import (
	"errors"
	"fmt"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/ledger"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

// LoadOptions say how Load prepares a model.
type LoadOptions struct {
	// Placement is where the weights live while the model runs;
	// "": DefaultPlacement.
	Placement Placement
	// NoTokenizer skips the tokenizer, for callers that make up token ids
	// (the engine bench).
	NoTokenizer bool
	// Device is where the model's contexts will run ("" or "cpu", "cuda").
	// On the CPU with huge-page placement, a matrix whose kernels all read
	// one weight layout is placed in that layout alone (CPULayouts), so
	// the model holds one copy of it; such a model serves CPU contexts
	// only.
	Device string
}

// Loaded is a model ready for NewContext: its weights placed, its
// tokenizer, and the file they came from.
type Loaded struct {
	Model     *Model
	Tokenizer *tokenizer.Tokenizer // nil with LoadOptions.NoTokenizer
	// File's metadata stay readable; its tensor data are released when
	// Placed.FileReleased says so.
	File   *gguf.File
	Placed *Placed
}

// Load opens the GGUF file at path, reads the model of its architecture and
// its tokenizer, and places the weights as opts says. A fallback from huge
// pages to the file map is no error: Placed.Notice says why, for the user.
// Close the Loaded after the last use of the model.
func Load(path string, opts LoadOptions) (*Loaded, error) {
	place := opts.Placement
	if place == "" {
		place = DefaultPlacement
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err // names path
	}
	m, err := readModel(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var tok *tokenizer.Tokenizer
	if !opts.NoTokenizer {
		if tok, err = tokenizer.FromGGUF(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: tokenizer: %w", path, err)
		}
	}
	// Last, once the tokenizer has its metadata: huge placement unmaps f.
	var lays map[*Matrix]*ledger.WeightLayout
	if (opts.Device == "" || opts.Device == DeviceCPU) && place == PlaceHuge {
		if lays, err = m.CPULayouts(); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	placed, err := m.placeFile(f, place, lays)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Loaded{Model: m, Tokenizer: tok, File: f, Placed: placed}, nil
}

// Close frees the placed weights and closes the file. Safe twice.
func (l *Loaded) Close() error {
	return errors.Join(l.Placed.Free(), l.File.Close())
}
