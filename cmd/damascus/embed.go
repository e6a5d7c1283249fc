package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

func init() {
	defineEngine("embed", "print a text's embedding (final hidden states, pooled) as a JSON array, as llama-embedding does", "usage: damascus embed -m MODEL [--pooling mean|cls|last|none] [--no-normalize] TEXT", 0, runEmbed)
}

// runEmbed prints one JSON array: the pooled vector, or with --pooling none
// an array of every token's vector.
func runEmbed(fs *flag.FlagSet, ef *engineFlags, args []string, stdout, stderr io.Writer) error {
	pooling := fs.String("pooling", "", "mean, cls, last or none (every token's vector) (default: the model's pooling_type, else mean)")
	raw := fs.Bool("no-normalize", false, "leave the vectors at their length (default: unit Euclidean length, as llama-server)")
	rest, err := cli.ParseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		fs.Usage()
		return errUsage
	}
	p, set, err := poolingFlag(*pooling)
	if err != nil {
		return err
	}
	if ef.device == llama.DeviceCUDA {
		return errors.New("embeddings run on the CPU only so far: leave out --device cuda")
	}
	text := strings.Join(rest, " ")
	if ef.ctxSize, err = tokenCount(*ef, text); err != nil {
		return err
	}
	e, err := ef.open(stderr)
	if err != nil {
		return err
	}
	defer e.close()
	if !set {
		p = e.model.Config.EmbedPooling()
	}
	ids, err := e.tok.Encode(text, tokenizer.AddSpecial|tokenizer.ParseSpecial)
	if err != nil {
		return err
	}
	h, err := e.ctx.HiddenStates(ids)
	if err != nil {
		return err
	}
	dim := e.model.Config.Dim
	v := llama.Pool(nil, h, len(ids), dim, p, !*raw)
	var out any = v
	if p == llama.PoolNone {
		rows := make([][]float32, len(ids))
		for i := range rows {
			rows[i] = v[i*dim : (i+1)*dim]
		}
		out = rows
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	_, err = stdout.Write(append(b, '\n'))
	return err
}

// poolingFlag reads --pooling before the model is loaded; set is false
// when it was left out (the model's EmbedPooling then applies).
func poolingFlag(s string) (p llama.Pooling, set bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	if p, err = llama.ParsePooling(s); err != nil {
		return 0, false, fmt.Errorf("--pooling: %w", err)
	}
	return p, true, nil
}
