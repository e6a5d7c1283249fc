package llamacpp

import "unsafe"

// Go mirrors of the C structs of llama.cpp v0.4.0 (commit 5b4ebc5), field for
// field with the padding C inserts made explicit, so that purego passes and
// returns them by value exactly as the System V ABI lays them out. Pointers are
// unsafe.Pointer or uintptr (C memory or opaque handles). layout_test.go holds
// the offsets gcc computed from that commit's include/llama.h, ggml.h and
// ggml-cpu.h and checks every field against them.

// modelParams is struct llama_model_params (80 bytes).
type modelParams struct {
	devices                  uintptr // ggml_backend_dev_t *
	tensorBuftOverrides      uintptr // const struct llama_model_tensor_buft_override *
	nGPULayers               int32
	splitMode                int32 // enum llama_split_mode
	loadMode                 int32 // enum llama_load_mode
	lazyMode                 int32 // enum llama_lazy_mode
	mainGPU                  int32
	_                        [4]byte
	tensorSplit              uintptr // const float *
	progressCallback         uintptr
	progressCallbackUserData uintptr
	kvOverrides              uintptr // const struct llama_model_kv_override *
	vocabOnly                bool
	checkTensors             bool
	useExtraBufts            bool
	noHost                   bool
	noAlloc                  bool
	loadMTP                  bool
	_                        [2]byte
}

// enum llama_load_mode
const (
	loadModeAuto int32 = -1
	loadModeNone int32 = 0
	loadModeMmap int32 = 1
)

// contextParams is struct llama_context_params (160 bytes).
type contextParams struct {
	nCtx              uint32
	nBatch            uint32
	nUbatch           uint32
	nSeqMax           uint32
	nRsSeq            uint32
	nOutputsMax       uint32
	nOutputsMaxPerSeq uint32
	nThreads          int32
	nThreadsBatch     int32
	ctxType           int32 // enum llama_context_type
	ropeScalingType   int32
	poolingType       int32
	attentionType     int32
	flashAttnType     int32 // enum llama_flash_attn_type
	ropeFreqBase      float32
	ropeFreqScale     float32
	yarnExtFactor     float32
	yarnAttnFactor    float32
	yarnBetaFast      float32
	yarnBetaSlow      float32
	yarnOrigCtx       uint32
	defragThold       float32
	cbEval            uintptr
	cbEvalUserData    uintptr
	typeK             uint32 // enum ggml_type
	typeV             uint32
	abortCallback     uintptr
	abortCallbackData uintptr
	embeddings        bool
	offloadKQV        bool
	noPerf            bool
	opOffload         bool
	swaFull           bool
	kvUnified         bool
	_                 [2]byte
	samplers          uintptr // struct llama_sampler_seq_config *
	nSamplers         uintptr // size_t
	ctxOther          uintptr // struct llama_context *
}

// enum llama_flash_attn_type
const (
	flashAttnAuto     int32 = -1
	flashAttnDisabled int32 = 0
	flashAttnEnabled  int32 = 1
)

// enum llama_split_mode: LLAMA_SPLIT_MODE_LAYER, the default.
const splitModeLayer int32 = 1

// quantizeParams is struct llama_model_quantize_params (64 bytes).
type quantizeParams struct {
	nthread              int32
	ftype                int32  // enum llama_ftype
	outputTensorType     uint32 // enum ggml_type
	tokenEmbeddingType   uint32 // enum ggml_type
	allowRequantize      bool
	quantizeOutputTensor bool
	onlyCopy             bool
	pure                 bool
	keepSplit            bool
	dryRun               bool
	_                    [2]byte
	imatrix              uintptr
	kvOverrides          uintptr
	ttOverrides          uintptr
	pruneLayers          uintptr
	maxBufSize           uintptr // size_t
}

// batch is struct llama_batch (56 bytes). Its arrays live in Go memory that
// the caller keeps alive for the duration of llama_decode.
type batch struct {
	nTokens int32
	_       [4]byte
	token   *int32
	embd    *float32
	pos     *int32
	nSeqID  *int32
	seqID   **int32
	logits  *int8
}

// threadpoolParams is struct ggml_threadpool_params (528 bytes).
type threadpoolParams struct {
	cpumask   [512]bool // GGML_MAX_N_THREADS
	nThreads  int32
	prio      int32 // enum ggml_sched_priority
	poll      uint32
	strictCPU bool
	paused    bool
	_         [2]byte
}

// Sizes the C compiler reported for the headers at commit 5b4ebc5.
const (
	sizeofModelParams    = 80
	sizeofContextParams  = 160
	sizeofQuantizeParams = 64
	sizeofBatch          = 56
	sizeofThreadpool     = 528
)

// Compile-time size checks: a mismatch makes one of these array lengths negative.
var (
	_ [unsafe.Sizeof(modelParams{}) - sizeofModelParams]byte
	_ [sizeofModelParams - unsafe.Sizeof(modelParams{})]byte
	_ [unsafe.Sizeof(contextParams{}) - sizeofContextParams]byte
	_ [sizeofContextParams - unsafe.Sizeof(contextParams{})]byte
	_ [unsafe.Sizeof(quantizeParams{}) - sizeofQuantizeParams]byte
	_ [sizeofQuantizeParams - unsafe.Sizeof(quantizeParams{})]byte
	_ [unsafe.Sizeof(batch{}) - sizeofBatch]byte
	_ [sizeofBatch - unsafe.Sizeof(batch{})]byte
	_ [unsafe.Sizeof(threadpoolParams{}) - sizeofThreadpool]byte
	_ [sizeofThreadpool - unsafe.Sizeof(threadpoolParams{})]byte
)
