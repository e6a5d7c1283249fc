package main

import (
	"fmt"
	"io"
	"time"

	"github.com/damascus-llm/damascus/harness/llamacpp"
	"github.com/damascus-llm/damascus/model/ftype"
)

// The --with-llama.cpp option of `damascus quantize`: the pinned llama.cpp
// quantizes the file itself (llama_model_quantize), so that files made by
// llama.cpp's own quantizer sit beside ours.
func init() {
	quantizeWithLlamaCpp = func(in, out string, ft ftype.FileType, threads int, stdout, _ io.Writer) error {
		start := time.Now()
		if err := llamacpp.QuantizeModel(in, out, ft.Name, threads); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s -> %s (%s) by llama.cpp %s (%s) in %.1fs\n",
			in, out, ft.Name, llamacpp.PinnedTag, llamacpp.PinnedCommit, time.Since(start).Seconds())
		return nil
	}
}
