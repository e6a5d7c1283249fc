package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama/chat"
	"github.com/damascus-llm/damascus/model/serve"
)

func init() {
	commands.Add("serve", "an OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, /v1/models, /health)", runServe)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := cli.Flags("serve", "usage: damascus serve -m MODEL [--host 127.0.0.1] [--port 8080] [--ctx-size N] [flags]", stderr)
	var ef engineFlags
	ef.register(fs, 4096)
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := cli.Int(fs, "port", 8080, 0, 65535, "port to listen on (0: any free one, printed)")
	parallel := cli.Int(fs, "parallel", 1, 1, cli.Unbounded, "request slots decoding at once (only 1 so far)")
	queue := cli.Int(fs, "max-queue", 16, 0, cli.Unbounded, "requests waiting beyond the running one; more are answered 503")
	maxBody := cli.Int(fs, "max-body", 1<<20, 1, math.MaxInt32, "request body bytes at most; more are answered 413")
	name := fs.String("alias", "", "the model name clients pass (default: the file's base name)")
	format := fs.String("chat-format", "", "chat format to use instead of the model's template (llama3, chatml)")
	if rest, err := cli.ParseInterspersed(fs, args); err != nil {
		return err
	} else if len(rest) > 0 {
		fs.Usage()
		return errUsage
	}
	if *parallel != 1 {
		return fmt.Errorf("--parallel %d: this server decodes one request at a time so far (continuous batching is not built yet)", *parallel)
	}
	e, err := ef.open(stderr)
	if err != nil {
		return err
	}
	defer e.close()
	tmpl, err := chat.Detect(e.tok.ChatTemplate(), *format)
	if err != nil {
		fmt.Fprintf(stderr, "no chat template (%v): /v1/chat/completions will answer 400\n", err)
		tmpl = nil
	}
	if *name == "" {
		*name = strings.TrimSuffix(filepath.Base(ef.model), filepath.Ext(ef.model))
	}
	srv, err := serve.New(serve.Config{Model: *name, Vocab: e.model.Config.Vocab, Context: e.ctx, Tokenizer: e.tok,
		Template: tmpl, MaxQueue: *queue, MaxBody: int64(*maxBody)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "serving %s on http://%s (context %d, queue %d)\n", *name, ln.Addr(), e.ctx.NCtx(), *queue)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// Graceful: stop accepting, let in-flight requests finish for a while,
	// then cancel them (closing their connections ends their generation).
	fmt.Fprintln(stderr, "shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	_ = hs.Close()
	return nil
}
