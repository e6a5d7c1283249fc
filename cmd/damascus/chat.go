package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama/chat"
	"github.com/damascus-llm/damascus/model/llama/generate"
	"github.com/damascus-llm/damascus/model/tokenizer"
)

func init() {
	commands.Add("chat", "interactive chat with the model's chat template, reusing the KV cache across turns", func(args []string, stdout, stderr io.Writer) error { return runChat(args, os.Stdin, stdout, stderr) })
}

func runChat(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cli.Flags("chat", "usage: damascus chat -m MODEL [--weights huge|mmap] [flags]  (one message per line on stdin; Ctrl-C or EOF ends)", stderr)
	var ef engineFlags
	ef.register(fs, 4096)
	var sf samplerFlags
	sf.register(fs)
	system := fs.String("system", "", "system message")
	format := fs.String("chat-format", "", "chat format (llama3, llama3.1, llama3.2, chatml); default: detected from the model's template")
	n := cli.Int(fs, "n", 1024, 1, cli.Unbounded, "most tokens per reply")
	if err := cli.ParseInterspersedNoArgs(fs, args); err != nil {
		return err
	}
	if sf.llama2c {
		return errors.New("--llama2c is for plain generation, not chat")
	}
	e, err := ef.open(stderr)
	if err != nil {
		return err
	}
	defer e.close()
	tmpl, err := chat.Detect(e.tok.ChatTemplate(), *format)
	if err != nil {
		return err
	}
	smp, stop, err := sf.build(e.tok, e.model.Config.Vocab, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()

	var msgs []chat.Message
	if *system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: *system})
	}
	var cached []int32 // the tokens in the KV cache, in order
	var total generate.Stats
	// Lines are read on their own goroutine so Ctrl-C at the prompt ends
	// the session at once.
	lines := make(chan string)
	var readErr error
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), maxChatLine)
		for sc.Scan() {
			lines <- sc.Text()
		}
		readErr = sc.Err()
		if errors.Is(readErr, bufio.ErrTooLong) {
			readErr = fmt.Errorf("reading stdin: a message line is longer than %d MiB, the most chat takes", maxChatLine>>20)
		}
	}()
	defer func() {
		fmt.Fprintln(stderr)
		fmt.Fprint(stderr, total.Summary())
	}()
	for {
		fmt.Fprint(stderr, "> ")
		var line string
		select {
		case <-ctx.Done():
			return nil
		case l, ok := <-lines:
			if !ok {
				return readErr
			}
			line = strings.TrimSpace(l)
		}
		if line == "" {
			continue
		}
		msgs = append(msgs, chat.Message{Role: "user", Content: line})
		text, err := tmpl.Render(msgs, true)
		if err != nil {
			return err
		}
		ids, err := e.tok.Encode(text, tokenizer.AddSpecial|tokenizer.ParseSpecial)
		if err != nil {
			return err
		}
		// Keep the cached prefix the new rendering shares; evaluate the rest.
		keep := commonPrefix(cached, ids)
		if keep == len(ids) {
			keep-- // at least one token must be evaluated to get logits
		}
		if err := e.ctx.Truncate(keep); err != nil {
			return err
		}
		var reply strings.Builder
		st, err := generate.Run(ctx, e.ctx, e.tok, smp, ids[keep:],
			generate.Options{MaxTokens: *n, StopToken: stop}, io.MultiWriter(stdout, &reply))
		fmt.Fprintln(stdout)
		total.PromptTokens += st.PromptTokens
		total.PromptTime += st.PromptTime
		total.Tokens += st.Tokens
		total.GenTime += st.GenTime
		total.Reason = st.Reason
		if err != nil {
			return err
		}
		// The cache holds the prompt and every sampled token but the last.
		cached = append(ids[:len(ids):len(ids)], st.Generated...)
		cached = cached[:e.ctx.Pos()]
		msgs = append(msgs, chat.Message{Role: "assistant", Content: reply.String()})
		if st.Reason == "cancelled" {
			return nil
		}
	}
}

// maxChatLine bounds one message (one line of stdin); a longer one would
// not fit any context this engine allocates anyway.
const maxChatLine = 1 << 20

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
