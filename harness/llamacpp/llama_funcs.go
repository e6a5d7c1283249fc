package llamacpp

import (
	"unsafe"

	"github.com/damascus-llm/damascus/internal/dl"
)

// llamaFuncs are the libllama entry points the package uses, with C
// signatures from include/llama.h at commit 5b4ebc5. Handles (model, context,
// vocab, memory) are opaque uintptrs.
type llamaFuncs struct {
	backendInit     func()
	logSet          func(cb uintptr, userData unsafe.Pointer)
	version         func() string
	printSystemInfo func() string

	modelDefaultParams    func() modelParams
	contextDefaultParams  func() contextParams
	quantizeDefaultParams func() quantizeParams

	modelLoadFromFile func(path string, p modelParams) uintptr
	modelFree         func(model uintptr)
	modelGetVocab     func(model uintptr) uintptr
	modelNParams      func(model uintptr) uint64
	modelSize         func(model uintptr) uint64
	modelDesc         func(model uintptr, buf *byte, size uintptr) int32
	modelNEmbd        func(model uintptr) int32
	modelNLayer       func(model uintptr) int32
	modelQuantize     func(in, out string, p *quantizeParams) uint32

	initFromModel func(model uintptr, p contextParams) uintptr
	free          func(ctx uintptr)
	nCtx          func(ctx uintptr) uint32
	nBatch        func(ctx uintptr) uint32
	decode        func(ctx uintptr, b batch) int32
	synchronize   func(ctx uintptr)
	getLogitsIth  func(ctx uintptr, i int32) *float32
	getEmbdSeq    func(ctx uintptr, seq int32) *float32
	getEmbdIth    func(ctx uintptr, i int32) *float32
	getMemory     func(ctx uintptr) uintptr
	memoryClear   func(mem uintptr, data bool)
	memorySeqRm   func(mem uintptr, seq, p0, p1 int32) bool
	setNThreads   func(ctx uintptr, nThreads, nThreadsBatch int32)
	attachTP      func(ctx uintptr, tp, tpBatch uintptr)
	stateSeqSave  func(ctx uintptr, path string, seq int32, tokens *int32, nTokens uintptr) uintptr
	stateSeqLoad  func(ctx uintptr, path string, seq int32, tokensOut *int32, capacity uintptr, nOut *uintptr) uintptr

	vocabNTokens   func(vocab uintptr) int32
	vocabType      func(vocab uintptr) int32
	vocabBOS       func(vocab uintptr) int32
	vocabEOS       func(vocab uintptr) int32
	tokenize       func(vocab uintptr, text *byte, textLen int32, tokens *int32, nTokensMax int32, addSpecial, parseSpecial bool) int32
	tokenToPiece   func(vocab uintptr, token int32, buf *byte, length int32, lstrip int32, special bool) int32
	detokenize     func(vocab uintptr, tokens *int32, nTokens int32, text *byte, textLenMax int32, removeSpecial, unparseSpecial bool) int32
	vocabGetAddBOS func(vocab uintptr) bool
}

func (f *llamaFuncs) bind(b *dl.Binder, h uintptr) {
	b.Bind(h, "llama_backend_init", &f.backendInit)
	b.Bind(h, "llama_log_set", &f.logSet)
	b.Bind(h, "llama_version", &f.version)
	b.Bind(h, "llama_print_system_info", &f.printSystemInfo)

	b.Bind(h, "llama_model_default_params", &f.modelDefaultParams)
	b.Bind(h, "llama_context_default_params", &f.contextDefaultParams)
	b.Bind(h, "llama_model_quantize_default_params", &f.quantizeDefaultParams)

	b.Bind(h, "llama_model_load_from_file", &f.modelLoadFromFile)
	b.Bind(h, "llama_model_free", &f.modelFree)
	b.Bind(h, "llama_model_get_vocab", &f.modelGetVocab)
	b.Bind(h, "llama_model_n_params", &f.modelNParams)
	b.Bind(h, "llama_model_size", &f.modelSize)
	b.Bind(h, "llama_model_desc", &f.modelDesc)
	b.Bind(h, "llama_model_n_embd", &f.modelNEmbd)
	b.Bind(h, "llama_model_n_layer", &f.modelNLayer)
	b.Bind(h, "llama_model_quantize", &f.modelQuantize)

	b.Bind(h, "llama_init_from_model", &f.initFromModel)
	b.Bind(h, "llama_free", &f.free)
	b.Bind(h, "llama_n_ctx", &f.nCtx)
	b.Bind(h, "llama_n_batch", &f.nBatch)
	b.Bind(h, "llama_decode", &f.decode)
	b.Bind(h, "llama_synchronize", &f.synchronize)
	b.Bind(h, "llama_get_logits_ith", &f.getLogitsIth)
	b.Bind(h, "llama_get_embeddings_seq", &f.getEmbdSeq)
	b.Bind(h, "llama_get_embeddings_ith", &f.getEmbdIth)
	b.Bind(h, "llama_get_memory", &f.getMemory)
	b.Bind(h, "llama_memory_clear", &f.memoryClear)
	b.Bind(h, "llama_memory_seq_rm", &f.memorySeqRm)
	b.Bind(h, "llama_set_n_threads", &f.setNThreads)
	b.Bind(h, "llama_attach_threadpool", &f.attachTP)
	b.Bind(h, "llama_state_seq_save_file", &f.stateSeqSave)
	b.Bind(h, "llama_state_seq_load_file", &f.stateSeqLoad)

	b.Bind(h, "llama_vocab_n_tokens", &f.vocabNTokens)
	b.Bind(h, "llama_vocab_type", &f.vocabType)
	b.Bind(h, "llama_vocab_bos", &f.vocabBOS)
	b.Bind(h, "llama_vocab_eos", &f.vocabEOS)
	b.Bind(h, "llama_tokenize", &f.tokenize)
	b.Bind(h, "llama_token_to_piece", &f.tokenToPiece)
	b.Bind(h, "llama_detokenize", &f.detokenize)
	b.Bind(h, "llama_vocab_get_add_bos", &f.vocabGetAddBOS)
}

// Version returns llama_version() of the loaded library (e.g. "0.4.0-dev").
func Version() (string, error) {
	l, err := get()
	if err != nil {
		return "", err
	}
	return l.llama.version(), nil
}

// SystemInfo returns llama_print_system_info(): the loaded backends and the
// CPU features they were built for, e.g. "CPU : SSE3 = 1 | ... | AMX_INT8 = 1 | ...".
func SystemInfo() (string, error) {
	l, err := get()
	if err != nil {
		return "", err
	}
	return l.llama.printSystemInfo(), nil
}
