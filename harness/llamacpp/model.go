package llamacpp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
)

// ModelOptions choose how llama.cpp loads a GGUF file.
type ModelOptions struct {
	// VocabOnly loads only the vocabulary (no tensors).
	VocabOnly bool
	// NoMmap reads the weights into anonymous memory instead of mapping the
	// file (llama.cpp's --no-mmap); page placement differs, so it is a bench axis.
	NoMmap bool
	// NoRepack disables llama.cpp's extra CPU buffer types, which repack
	// weights at load for its own kernels (use_extra_bufts=false).
	NoRepack bool
}

// Model is a GGUF file loaded by llama.cpp (all layers on the CPU).
type Model struct {
	l     *lib
	mu    sync.Mutex
	h     uintptr // struct llama_model *
	vocab *Vocab
	path  string
}

// OpenModel loads path with llama.cpp. Close frees it.
func OpenModel(path string, opts ModelOptions) (*Model, error) {
	l, err := get()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("llama.cpp load: %w", err)
	}
	p := l.llama.modelDefaultParams()
	p.nGPULayers = 0
	p.vocabOnly = opts.VocabOnly
	p.useExtraBufts = !opts.NoRepack
	if opts.NoMmap {
		p.loadMode = loadModeNone
	} else {
		p.loadMode = loadModeMmap
	}
	mark := logMark()
	h := l.llama.modelLoadFromFile(path, p)
	if h == 0 {
		return nil, fmt.Errorf("llama.cpp could not load %s: %s", path, logSince(mark, 3))
	}
	m := &Model{l: l, h: h, path: path}
	m.vocab = &Vocab{l: l, h: l.llama.modelGetVocab(h), model: m}
	m.vocab.n = l.llama.vocabNTokens(m.vocab.h)
	// A forgotten Close must not leak the C allocations forever.
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// Close frees the model. Contexts made from it must be closed first.
func (m *Model) Close() error {
	freeOnce(&m.mu, &m.h, m, m.l.llama.modelFree)
	return nil
}

// freeOnce is the Close of a Go value (owner) that owns the C object *h:
// holding mu, it frees *h unless that is done (zero), zeroes it and drops
// owner's finalizer.
func freeOnce(mu *sync.Mutex, h *uintptr, owner any, free func(h uintptr)) {
	mu.Lock()
	defer mu.Unlock()
	if *h == 0 {
		return
	}
	free(*h)
	*h = 0
	runtime.SetFinalizer(owner, nil)
}

var errClosed = errors.New("llama.cpp model is closed")

// handle returns the live model handle.
func (m *Model) handle() (uintptr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.h == 0 {
		return 0, errClosed
	}
	return m.h, nil
}

// Vocab returns the model's vocabulary (valid until Close).
func (m *Model) Vocab() *Vocab { return m.vocab }

// Path is the file the model was loaded from.
func (m *Model) Path() string { return m.path }

// Info describes a loaded model as llama.cpp sees it.
type Info struct {
	Desc    string // llama_model_desc, e.g. "llama ?B Q4_K - Medium"
	NParams uint64
	Size    uint64 // bytes of all tensors
	NEmbd   int
	NLayer  int
	NVocab  int
}

// Info reports llama.cpp's view of the model.
func (m *Model) Info() (Info, error) {
	h, err := m.handle()
	if err != nil {
		return Info{}, err
	}
	buf := make([]byte, 256)
	n := m.l.llama.modelDesc(h, &buf[0], uintptr(len(buf)))
	if n < 0 {
		n = 0
	}
	if int(n) >= len(buf) {
		n = int32(len(buf) - 1)
	}
	return Info{
		Desc:    string(buf[:n]),
		NParams: m.l.llama.modelNParams(h),
		Size:    m.l.llama.modelSize(h),
		NEmbd:   int(m.l.llama.modelNEmbd(h)),
		NLayer:  int(m.l.llama.modelNLayer(h)),
		NVocab:  m.vocab.NTokens(),
	}, nil
}
