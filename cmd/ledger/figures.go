package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/damascus-llm/damascus/model/llama"
)

// figureFlags are the flags of a command that loads one model, measures it
// and may write its figures as JSON (batched, loadtest): -m, -o and --note.
type figureFlags struct {
	model, out, note string
}

// register declares -m, -o (with outUsage) and --note (with noteUsage).
func (f *figureFlags) register(fs *flag.FlagSet, outUsage, noteUsage string) {
	fs.StringVar(&f.model, "m", "", "model `file` (GGUF)")
	fs.StringVar(&f.out, "o", "", outUsage)
	fs.StringVar(&f.note, "note", "", noteUsage)
}

// parseAndLoad parses args for a command whose -m flag (model) is required
// and that takes no positional arguments, then loads the model.
func (f *figureFlags) parseAndLoad(fs *flag.FlagSet, args []string) (*llama.Loaded, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 || f.model == "" {
		fs.Usage()
		return nil, errUsage
	}
	return llama.Load(f.model, llama.LoadOptions{})
}

// writeFigures writes a command's figures to the -o file as indented JSON,
// adding the date, the model's base name and the note to them; without -o
// it writes nothing. what names the command in the error.
func (f *figureFlags) writeFigures(what string, figures map[string]any) error {
	if f.out == "" {
		return nil
	}
	figures["date"] = time.Now().UTC().Format(time.RFC3339)
	figures["model"] = filepath.Base(f.model)
	figures["note"] = f.note
	b, err := json.MarshalIndent(figures, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("%s figures: %w", what, err)
	}
	return nil
}
