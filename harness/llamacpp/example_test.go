package llamacpp_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/damascus-llm/damascus/harness/llamabench"
	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/quant"
)

// Every entry point loads the libraries on first use; without them it
// returns an error wrapping ErrNotInstalled.
func ExampleAvailable() {
	if err := llamacpp.Available(); errors.Is(err, llamacpp.ErrNotInstalled) {
		fmt.Println(err) // llama.cpp baseline not installed: run make baseline
	}
}

func ExampleQuantize() {
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(i) / 256
	}
	q, err := llamacpp.Quantize(quant.Q4_K, x, 1, 256) // one row of 256 values
	if err != nil {
		log.Fatal(err)
	}
	back, err := llamacpp.Dequantize(quant.Q4_K, q, 256)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(q), len(back)) // 144 256
}

func ExampleOpenVocab() {
	v, err := llamacpp.OpenVocab("stories260K.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	ids, err := v.Tokenize("Once upon a time", true, false) // [1 403 407 261 378]
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ids)
}

func ExampleContext_Logits() {
	m, err := llamacpp.OpenModel("stories260K.gguf", llamacpp.ModelOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	c, err := m.NewContext(llamacpp.ContextOptions{NCtx: 256, Threads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	logits, err := c.Logits([]int32{1, 403, 407}, []int{0, 2}) // after BOS, and after the last token
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(logits), len(logits[0])) // 2 512
}

// RunBench measures in a child process (`ledger llama-bench`), here with
// huge pages for llama.cpp's buffers and its AMX CPU variant.
func ExampleRunBench() {
	res, err := llamacpp.RunBench(context.Background(), llamacpp.BenchConfig{
		Spec: llamabench.Spec{
			Model:   "llama3.2-3b-q4_k_m.gguf",
			Prompt:  []int{1024},
			Gen:     []int{256},
			Threads: 2,
			Reps:    10,
		},
		Variant: "sapphirerapids",
	}, llamacpp.SpawnOptions{Ledger: "bin/ledger", HugePages: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range res.Tests {
		fmt.Println(t.Name, t.SamplesNs, t.AvgTS)
	}
}
