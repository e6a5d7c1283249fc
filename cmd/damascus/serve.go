package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/damascus-llm/damascus/internal/cli"
	"github.com/damascus-llm/damascus/model/llama"
	"github.com/damascus-llm/damascus/model/llama/chat"
	"github.com/damascus-llm/damascus/model/serve"
)

func init() {
	defineEngine("serve", "an OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, /v1/models, /health)", "usage: damascus serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx-size N] [flags]", 4096, runServe)
}

func runServe(fs *flag.FlagSet, ef *engineFlags, args []string, stdout, stderr io.Writer) error {
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := cli.Int(fs, "port", 8080, 0, 65535, "port to listen on (0: any free one, printed)")
	parallel := cli.Int(fs, "parallel", 1, 1, cli.Unbounded, "request slots decoding at once, batched into one forward pass a step (--ctx-size is shared among them)")
	queue := cli.Int(fs, "max-queue", 16, 0, cli.Unbounded, "requests waiting beyond the running ones; more are answered 503")
	maxBody := cli.Int(fs, "max-body", 1<<20, 1, math.MaxInt32, "request body bytes at most; more are answered 413")
	name := fs.String("alias", "", "the model name clients pass (default: the file's base name)")
	apiKey := fs.String("api-key", "", "API keys a request must carry as Authorization: Bearer KEY, comma-separated (GET /health and /v1/models stay open)")
	allowOrigin := fs.String("allow-origin", "", "web origins whose pages may call the server (CORS), comma-separated http(s)://host[:port] items or * for any; default none")
	apiKeyFile := fs.String("api-key-file", "", "a file of API keys, one a line (# comments and blank lines skipped), beside --api-key")
	format := fs.String("chat-format", "", "chat format to use instead of the model's template (llama3, llama3.1, llama3.2, chatml)")
	embeddings := fs.Bool("embeddings", false, "answer POST /v1/embeddings, on a context of its own (another --ctx-size/--parallel positions of cache, float32; CPU only)")
	pooling := fs.String("pooling", "", "how /v1/embeddings pools the final hidden states: mean, cls or last (default: the model's pooling_type, else mean)")
	if err := cli.ParseInterspersedNoArgs(fs, args); err != nil {
		return err
	}
	if *pooling != "" && !*embeddings {
		return errors.New("--pooling is for --embeddings")
	}
	pool, poolSet, err := poolingFlag(*pooling)
	if err != nil {
		return err
	}
	if poolSet && pool == llama.PoolNone {
		return errors.New("--pooling none gives a vector a token, which /v1/embeddings has no place for: use mean, cls or last")
	}
	if *embeddings && ef.device == llama.DeviceCUDA {
		return errors.New("--embeddings runs on the CPU only so far: leave out --device cuda")
	}
	open := ef.open
	if *parallel > 1 {
		open = func(w io.Writer) (*engine, error) { return ef.openBatch(w, *parallel) }
	}
	keys, err := apiKeys(*apiKey, *apiKeyFile)
	if err != nil {
		return err
	}
	origins, err := allowOrigins(*allowOrigin)
	if err != nil {
		return err
	}
	e, err := open(stderr)
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
	cfg := serve.Config{Model: *name, Vocab: e.model.Config.Vocab, Tokenizer: e.tok,
		Template: tmpl, MaxQueue: *queue, MaxBody: int64(*maxBody), APIKeys: keys, AllowOrigins: origins}
	nctx := 0
	if e.batch != nil {
		cfg.Batch, nctx = e.batch, e.batch.NCtx()
	} else {
		cfg.Context, nctx = e.ctx, e.ctx.NCtx()
	}
	embedNote := ""
	if *embeddings {
		if !poolSet {
			pool = e.model.Config.EmbedPooling()
		}
		emb, note, err := openEmbedder(e.model, ef, nctx, pool)
		if err != nil {
			return err
		}
		defer emb.Close()
		cfg.Embedder, embedNote = emb, note
	}
	srv, err := serve.New(cfg)
	if err != nil {
		return err
	}
	l, err := srv.Listen(net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	chatFormat := "none"
	if tmpl != nil {
		chatFormat = tmpl.Name()
		if _, ok := tmpl.(chat.ToolTemplate); ok {
			chatFormat += ", tools"
		}
	}
	auth := ""
	if len(keys) > 0 {
		auth = fmt.Sprintf(", %d API key(s)", len(keys))
	}
	fmt.Fprintf(stderr, "serving %s on http://%s (%d slot(s) of %d positions, queue %d, chat format %s%s%s)\n", *name, l.Addr, *parallel, nctx, *queue, chatFormat, auth, embedNote)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-l.Done:
		return err
	case <-ctx.Done():
	}
	// Graceful: stop accepting, let in-flight requests finish for a while,
	// then cancel them (closing their connections ends their generation).
	fmt.Fprintln(stderr, "shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.HTTP.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	_ = l.HTTP.Close()
	return nil
}

// embedder is serve's Embedder with the context it owns.
type embedder struct {
	*serve.ContextEmbedder
	c *llama.Context
}

func (e embedder) Close() { e.c.Close() }

// openEmbedder makes /v1/embeddings' context on m (nctx positions, the
// engine flags' batch and threads, a float32 cache) pooling by p; note is
// the serving line's mention.
func openEmbedder(m *llama.Model, ef *engineFlags, nctx int, p llama.Pooling) (embedder, string, error) {
	c, err := m.NewContext(llama.Options{NCtx: nctx, NBatch: ef.batch, Threads: ef.threads})
	if err != nil {
		return embedder{}, "", fmt.Errorf("--embeddings: %w", err)
	}
	ce, err := serve.NewContextEmbedder(c, m, p)
	if err != nil {
		c.Close()
		return embedder{}, "", err
	}
	return embedder{ce, c}, fmt.Sprintf(", embeddings pooled by %v", p), nil
}

// apiKeys reads --api-key's list and --api-key-file's lines.
func apiKeys(list, file string) ([]string, error) {
	var keys []string
	for _, k := range strings.Split(list, ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	if file == "" {
		return keys, nil
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--api-key-file: %w", err)
	}
	n := len(keys)
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			keys = append(keys, line)
		}
	}
	if len(keys) == n {
		return nil, fmt.Errorf("--api-key-file %s holds no key", file)
	}
	return keys, nil
}

// allowOrigins reads --allow-origin: "*", or origins as a browser sends
// them (scheme, host and port, no path).
func allowOrigins(list string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(list, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if o != "*" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
				return nil, fmt.Errorf("--allow-origin %q: * or an origin like http://localhost:3000 is wanted", o)
			}
			o = u.Scheme + "://" + u.Host
		}
		out = append(out, o)
	}
	return out, nil
}
