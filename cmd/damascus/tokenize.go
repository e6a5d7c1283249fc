package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/damascus-llm/damascus/gguf"
	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

func init() {
	commands.Define("tokenize", "print the token ids (and pieces) of a text with a model's tokenizer", "usage: damascus tokenize -m MODEL [--no-bos] [--special] [--ids-only] (TEXT | --file F)", runTokenize)
}

func runTokenize(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	model := fs.String("m", "", "GGUF `model` whose tokenizer to use (required)")
	noBOS := fs.Bool("no-bos", false, "do not add the BOS/EOS tokens the vocabulary asks for")
	special := fs.Bool("special", false, "recognise special-token text such as <|eot_id|> in the input")
	idsOnly := fs.Bool("ids-only", false, "print only the ids, on one line, separated by single spaces")
	file := fs.String("file", "", "read the text from `F` (exact bytes) instead of the argument")
	texts, err := cli.ParseInterspersed(fs, args) // flags before or after TEXT
	if err != nil {
		return err
	}
	if *model == "" || len(texts) > 1 || (len(texts) == 1) == (*file != "") {
		fs.Usage()
		return errUsage
	}
	var text string
	if *file != "" {
		raw, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		text = string(raw)
	} else {
		text = texts[0]
	}

	f, err := gguf.Open(*model)
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *model, err)
	}
	var flags tokenizer.EncodeFlags
	if !*noBOS {
		flags |= tokenizer.AddSpecial
	}
	if *special {
		flags |= tokenizer.ParseSpecial
	}
	ids, err := tok.Encode(text, flags)
	if err != nil {
		return err
	}
	if *idsOnly {
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = strconv.Itoa(int(id))
		}
		_, err := fmt.Fprintln(stdout, strings.Join(strs, " "))
		return err
	}
	for _, id := range ids {
		piece, err := tok.Piece(id, true)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%6d -> %s\n", id, showPiece(piece))
	}
	_, err = fmt.Fprintf(stdout, "%d tokens\n", len(ids))
	return err
}

// showPiece quotes a piece so white space and partial UTF-8 are visible.
func showPiece(p string) string {
	if utf8.ValidString(p) {
		return strconv.Quote(p)
	}
	return strconv.Quote(p) + " (partial UTF-8)"
}
