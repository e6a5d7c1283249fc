package llamacpp

import (
	"reflect"
	"testing"

	"github.com/damascus-llm/damascus/internal/dl"
	"github.com/damascus-llm/damascus/internal/ggml"
)

// cOffsets are the field offsets gcc 12 computed (offsetof) for the structs in
// include/llama.h, ggml/include/ggml.h and ggml-cpu.h at llama.cpp commit
// 5b4ebc5 (the source bundled in npm node-llama-cpp@3.21.1), in field order.
// Blank padding fields of the Go mirrors are skipped.
var cOffsets = map[string][]uintptr{
	"modelParams": {0, 8, 16, 20, 24, 28, 32, 40, 48, 56, 64, 72, 73, 74, 75, 76, 77},
	"contextParams": {0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84,
		88, 96, 104, 108, 112, 120, 128, 129, 130, 131, 132, 133, 136, 144, 152},
	"quantizeParams":   {0, 4, 8, 12, 16, 17, 18, 19, 20, 21, 24, 32, 40, 48, 56},
	"batch":            {0, 8, 16, 24, 32, 40, 48},
	"threadpoolParams": {0, 512, 516, 520, 524, 525},
}

func TestStructOffsetsMatchC(t *testing.T) {
	for _, v := range []any{modelParams{}, contextParams{}, quantizeParams{}, batch{}, threadpoolParams{}} {
		name := reflect.TypeOf(v).Name()
		if got, want := dl.FieldOffsets(v), cOffsets[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s offsets\n got %v\nwant %v", name, got, want)
		}
	}
}

// TestDefaultsReadBack reads the default parameter structs from the loaded
// library and checks them against the defaults in that commit's source
// (llama_model_default_params, llama_context_default_params,
// llama_model_quantize_default_params): a layout mismatch would put these
// values in the wrong fields.
func TestDefaultsReadBack(t *testing.T) {
	requireLib(t)
	l, _ := get()
	m := l.llama.modelDefaultParams()
	if m.nGPULayers != -1 || m.splitMode != splitModeLayer || m.loadMode != loadModeAuto || m.lazyMode != 1 ||
		m.vocabOnly || !m.useExtraBufts || m.noAlloc || m.loadMTP {
		t.Errorf("llama_model_default_params read back as %+v", m)
	}
	c := l.llama.contextDefaultParams()
	if c.nCtx != 512 || c.nBatch != 2048 || c.nUbatch != 512 || c.nSeqMax != 1 || c.nOutputsMaxPerSeq != 1 ||
		c.flashAttnType != flashAttnAuto || c.yarnExtFactor != -1 || c.defragThold != -1 ||
		c.typeK != 1 || c.typeV != 1 || c.embeddings || !c.offloadKQV || !c.noPerf || !c.opOffload || !c.swaFull ||
		c.kvUnified || c.samplers != 0 || c.ctxOther != 0 {
		t.Errorf("llama_context_default_params read back as %+v", c)
	}
	var tp threadpoolParams
	tp.cpumask[3] = true
	l.ggmlThreadpoolParamsInit(&tp, 7)
	if tp.nThreads != 7 || tp.prio != 0 || tp.poll != 50 || tp.strictCPU || tp.paused || tp.cpumask[3] {
		t.Errorf("ggml_threadpool_params_init(7) gave n_threads %d prio %d poll %d strict %v paused %v mask[3] %v",
			tp.nThreads, tp.prio, tp.poll, tp.strictCPU, tp.paused, tp.cpumask[3])
	}
	q := l.llama.quantizeDefaultParams()
	if q.nthread != 0 || q.ftype != 7 || q.outputTensorType != ggml.TypeCount || q.tokenEmbeddingType != ggml.TypeCount ||
		q.allowRequantize || !q.quantizeOutputTensor || q.pure || q.imatrix != 0 || q.maxBufSize != 8<<30 {
		t.Errorf("llama_model_quantize_default_params read back as %+v", q)
	}
}
