package llamacpp

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
)

// fileTypes are llama.cpp's enum llama_ftype values (include/llama.h at
// commit 5b4ebc5) by the names llama-quantize accepts.
var fileTypes = map[string]int32{
	"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9,
	"Q2_K": 10, "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15,
	"Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18, "Q2_K_S": 21, "IQ3_XS": 22, "IQ3_XXS": 23,
	"IQ4_NL": 25, "IQ3_S": 26, "IQ3_M": 27, "IQ4_XS": 30, "BF16": 32, "TQ1_0": 36, "TQ2_0": 37,
}

// FileTypes lists the names QuantizeModel accepts.
func FileTypes() []string {
	names := make([]string, 0, len(fileTypes))
	for n := range fileTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// QuantizeModel has the pinned llama.cpp quantize the GGUF file in into out
// (llama_model_quantize with its default parameters, no importance matrix),
// as `llama-quantize in out FTYPE threads` would. ftype is a llama-quantize
// name such as "Q4_K_M" or "Q8_0" (case-insensitive); threads <= 0 uses all CPUs.
func QuantizeModel(in, out, ftype string, threads int) error {
	l, err := get()
	if err != nil {
		return err
	}
	ft, ok := fileTypes[strings.ToUpper(ftype)]
	if !ok {
		return fmt.Errorf("llama.cpp quantize: unknown type %q (known: %s)", ftype, strings.Join(FileTypes(), ", "))
	}
	if _, err := os.Stat(in); err != nil {
		return fmt.Errorf("llama.cpp quantize: %w", err)
	}
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	p := l.llama.quantizeDefaultParams()
	p.ftype = ft
	p.nthread = int32(threads)
	mark := logMark()
	if rc := l.llama.modelQuantize(in, out, &p); rc != 0 {
		return fmt.Errorf("llama.cpp quantize %s to %s (%s) failed: %s", in, out, ftype, logSince(mark, 2))
	}
	return nil
}
