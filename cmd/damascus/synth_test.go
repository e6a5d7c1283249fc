package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/damascus-llm/damascus/gguf/gguftest"
	"github.com/damascus-llm/damascus/internal/testdata"
)

func TestSynthUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := runSynth([]string{"--preset", "tiny"}, &out, &errOut); !errors.Is(err, errUsage) {
		t.Errorf("no -o: %v, want usage error", err)
	}
	if err := runSynth([]string{"--preset", "llama9", "-o", "x.gguf"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), `unknown preset "llama9"`) {
		t.Errorf("bad preset: %v", err)
	}
	if err := runSynth([]string{"--type", "Q9", "-o", "x.gguf"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), `unknown file type "Q9"`) {
		t.Errorf("bad type: %v", err)
	}
}

func TestSynthThenQuantize(t *testing.T) {
	testdata.Llama3TokenizerJSON.Require(t)
	testdata.Llama32Template.Require(t)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "tiny.gguf"), filepath.Join(dir, "tiny-q8.gguf")
	var out, errOut bytes.Buffer
	if err := runSynth([]string{"--preset", "tiny", "--type", "Q4_0", "--seed", "3", "--quiet", "-o", src}, &out, &errOut); err != nil {
		t.Fatalf("synth: %v\n%s", err, errOut.String())
	}
	if err := runQuantize([]string{src, dst, "--type", "Q8_0", "--quiet"}, &out, &errOut); err != nil {
		t.Fatalf("quantize: %v\n%s", err, errOut.String())
	}
	f := gguftest.Open(t, dst)
	if ft, _ := f.Uint32("general.file_type"); ft != 7 {
		t.Errorf("general.file_type = %d, want 7 (Q8_0)", ft)
	}
	ti, ok := f.Tensor("blk.1.ffn_down.weight")
	if !ok || ti.Type.String() != "Q8_0" {
		t.Errorf("blk.1.ffn_down.weight: %v", ti)
	}
}

// stories260K's 64-wide rows do not fit K-quant blocks: llama.cpp's
// fallbacks apply (Q4_K → Q5_0, the output head → Q8_0, 172-wide ffn_down → F16).
func TestQuantizeDryRunFallbacks(t *testing.T) {
	path := testdata.Stories260KGGUF.Require(t)
	var out, errOut bytes.Buffer
	if err := runQuantize([]string{"--dry-run", path, "--type", "Q4_K_M"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	for _, want := range []string{
		"output.weight                    F32    -> Q8_0",
		"token_embd.weight                F32    -> Q5_0",
		"blk.0.attn_q.weight              F32    -> Q5_0",
		"blk.0.ffn_down.weight            F32    -> F16",
		"blk.0.attn_norm.weight           F32    -> F32",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
}
