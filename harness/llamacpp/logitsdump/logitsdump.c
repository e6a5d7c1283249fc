// logitsdump: llama.cpp's logits at every position of a token list, written
// as raw little-endian float32 [rows][n_vocab], with a one-line JSON sidecar.
// It uses only llama.h's public API at the pinned commit (5b4ebc5), so that
// Damascus's engines (CPU and GPU) can be held to llama.cpp's on the same file
// and tokens wherever llama.cpp is built: the npm CPU libraries here, the CUDA
// build on the lent H200 (issue 18, item 6; model/llama/cuda_llama_test.go).
//
// Build (build.sh does this; SRC is the pinned source, scripts/llamacpp-src.sh;
// LIB is the directory holding libllama*.so and libggml*.so):
//
//   harness/llamacpp/logitsdump/build.sh SRC LIB OUT
//   which runs, in one line: cc -O2 -std=c11 -o OUT logitsdump.c
//     -I SRC/include -I SRC/ggml/include -L LIB -l:libllama.so -l:libggml.so
//     -l:libggml-base.so -Wl,-rpath,LIB -ldl   (the npm names end .v0.4.0.so)
//
// Run:
//
//   logitsdump -m MODEL.gguf -o OUT.f32 [-ngl 99] [-c 96] [-b 16] [-ub 16]
//              [-ctk f32] [-ctv f32] [-fa off] [-t 2] [-no-repack] [-v]
//              (-tokens LIST | -tokens-file FILE)
//
// LIST is one or more groups separated by ';' or newlines, ids inside a group
// by ',' or spaces. Each group is one llama_decode call (split into n_batch
// pieces when longer), logits asked for at every token. A group may start
// with "@P:" — the cache of sequence 0 is cut back to positions < P first
// (llama_memory_seq_rm) and the group is placed from P. So "1,2,3;4;5;@1:6"
// is a prefill of three tokens, two decode steps, then a decode at position 1
// after truncation: six rows of logits, in that order.
//
// The sidecar OUT.f32.json (also printed on stdout) holds n_vocab, the row
// count ("positions"), each row's position and token, the context actually
// made (n_ctx, n_batch, n_ubatch, cache types, flash attention, threads), the
// GPU layers asked for and what llama.cpp's log says it offloaded ("offloaded
// 29/29 layers to GPU"), the backend devices, the model buffers, the system
// info, the libllama it ran ("libllama", its path) and the llama.cpp source
// it was built from (-DLOGITSDUMP_SRC="...").
//
// Errors name the problem (bad flag, unreadable model, bad token id, decode
// failure) on one line, with llama.cpp's last error lines, and exit non-zero.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#ifndef LOGITSDUMP_SRC
#define LOGITSDUMP_SRC "unknown"
#endif

// ---- llama.cpp's log: kept, shown with -v or on failure ----

static bool g_verbose;
static char g_line[4096];
static size_t g_line_len;
#define KEEP 48
static char *g_tail[KEEP]; // the last KEEP log lines, for error messages
static int g_tail_n;
static char *g_offloaded;  // "offloaded N/M layers to GPU", the last one seen
static char *g_buffers[32]; // "... model buffer size = ..." and KV buffer lines
static int g_nbuffers;

static void keep_line(const char *s) {
	free(g_tail[g_tail_n % KEEP]);
	g_tail[g_tail_n % KEEP] = strdup(s);
	g_tail_n++;
	const char *o = strstr(s, "offloaded ");
	if (o && strstr(o, "layers to GPU")) {
		free(g_offloaded);
		g_offloaded = strdup(o);
	}
	if ((strstr(s, "model buffer size") || strstr(s, "KV buffer size")) && g_nbuffers < 32) {
		g_buffers[g_nbuffers++] = strdup(s);
	}
}

static void on_log(enum ggml_log_level level, const char *text, void *user) {
	(void)level;
	(void)user;
	if (g_verbose) {
		fputs(text, stderr);
	}
	for (const char *p = text; *p; p++) {
		if (*p == '\n') {
			g_line[g_line_len] = 0;
			keep_line(g_line);
			g_line_len = 0;
		} else if (g_line_len < sizeof g_line - 1) {
			g_line[g_line_len++] = *p;
		}
	}
}

static void die(const char *fmt, ...) {
	fprintf(stderr, "logitsdump: ");
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (!g_verbose) { // llama.cpp's last warnings and errors, as context
		int from = g_tail_n > KEEP ? g_tail_n - KEEP : 0, shown = 0;
		for (int i = from; i < g_tail_n && shown < 12; i++) {
			const char *s = g_tail[i % KEEP];
			if (strstr(s, "error") || strstr(s, "failed") || strstr(s, "invalid") || strstr(s, "warn")) {
				fprintf(stderr, "  llama.cpp: %s\n", s);
				shown++;
			}
		}
	}
	exit(1);
}

// ---- the token list ----

typedef struct {
	int32_t at; // -1: continue; else cut the cache back to positions < at first
	int32_t n;
	int32_t *ids;
} group;

static group *g_groups;
static int g_ngroups;

static void parse_tokens(const char *s) {
	int cap = 0;
	const char *p = s;
	for (;;) {
		while (*p == ';' || *p == '\n' || *p == '\r' || *p == ' ' || *p == '\t') {
			p++;
		}
		if (!*p) {
			break;
		}
		group g = {.at = -1};
		int gcap = 0;
		if (*p == '@') {
			char *end;
			errno = 0;
			long at = strtol(p + 1, &end, 10);
			if (end == p + 1 || *end != ':' || errno || at < 0 || at > INT32_MAX) {
				die("tokens: bad restart \"%.20s\" (want @POSITION: before a group)", p);
			}
			g.at = (int32_t)at;
			p = end + 1;
		}
		while (*p && *p != ';' && *p != '\n') {
			if (*p == ',' || *p == ' ' || *p == '\t' || *p == '\r') {
				p++;
				continue;
			}
			char *end;
			errno = 0;
			long v = strtol(p, &end, 10);
			if (end == p || errno || v < 0 || v > INT32_MAX) {
				die("tokens: bad token id \"%.20s\" (want non-negative integers)", p);
			}
			if (g.n == gcap) {
				gcap = gcap ? 2 * gcap : 16;
				g.ids = realloc(g.ids, gcap * sizeof *g.ids);
			}
			g.ids[g.n++] = (int32_t)v;
			p = end;
		}
		if (g.n == 0) {
			die("tokens: group %d has no token ids", g_ngroups + 1);
		}
		if (g_ngroups == cap) {
			cap = cap ? 2 * cap : 16;
			g_groups = realloc(g_groups, cap * sizeof *g_groups);
		}
		g_groups[g_ngroups++] = g;
	}
	if (g_ngroups == 0) {
		die("tokens: no token ids given");
	}
}

static char *read_file(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		die("tokens file %s: %s", path, strerror(errno));
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t r;
	while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (n + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	if (ferror(f)) {
		die("tokens file %s: read error", path);
	}
	fclose(f);
	buf[n] = 0;
	return buf;
}

// ---- flags ----

static enum ggml_type cache_type(const char *flag, const char *v) {
	if (!strcmp(v, "f32")) return GGML_TYPE_F32;
	if (!strcmp(v, "f16")) return GGML_TYPE_F16;
	if (!strcmp(v, "bf16")) return GGML_TYPE_BF16;
	if (!strcmp(v, "q8_0")) return GGML_TYPE_Q8_0;
	die("%s %s: want f32, f16, bf16 or q8_0", flag, v);
	return GGML_TYPE_F32;
}

static int int_flag(const char *flag, const char *v, long lo) {
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (end == v || *end || errno || x < lo || x > 1 << 24) {
		die("%s %s: want an integer ≥ %ld", flag, v, lo);
	}
	return (int)x;
}

static void usage(void) {
	fprintf(stderr,
	        "usage: logitsdump -m MODEL.gguf -o OUT.f32 (-tokens LIST | -tokens-file FILE)\n"
	        "                  [-ngl N] [-c N_CTX] [-b N_BATCH] [-ub N_UBATCH] [-ctk f32|f16|bf16|q8_0]\n"
	        "                  [-ctv TYPE] [-fa off|on|auto] [-t THREADS] [-no-repack] [-v]\n"
	        "writes llama.cpp's logits at every token as little-endian float32 [rows][n_vocab]\n"
	        "to OUT.f32 and a one-line JSON description to OUT.f32.json (and stdout).\n"
	        "LIST: groups of ids separated by ';' (one llama_decode each); \"@P:\" before a\n"
	        "group cuts the cache back to positions < P and places the group from P.\n");
	exit(2);
}

// ---- JSON ----

static void json_str(FILE *f, const char *s) {
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
		} else if (c < 0x20) {
			fprintf(f, "\\u%04x", c);
		} else {
			fputc(c, f);
		}
	}
	fputc('"', f);
}

static const char *fa_name(enum llama_flash_attn_type t) {
	return t == LLAMA_FLASH_ATTN_TYPE_ENABLED ? "on" : t == LLAMA_FLASH_ATTN_TYPE_DISABLED ? "off" : "auto";
}

int main(int argc, char **argv) {
	const char *model_path = NULL, *out_path = NULL, *tokens = NULL, *tokens_file = NULL;
	int ngl = 0, n_ctx = 0, n_batch = 512, n_ubatch = 0, threads = 2;
	bool no_repack = false;
	enum ggml_type tk = GGML_TYPE_F16, tv = GGML_TYPE_F16;
	enum llama_flash_attn_type fa = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool has = i + 1 < argc;
#define VAL() (has ? argv[++i] : (die("flag %s needs a value", a), ""))
		if (!strcmp(a, "-m")) model_path = VAL();
		else if (!strcmp(a, "-o")) out_path = VAL();
		else if (!strcmp(a, "-tokens")) tokens = VAL();
		else if (!strcmp(a, "-tokens-file")) tokens_file = VAL();
		else if (!strcmp(a, "-ngl")) ngl = int_flag(a, VAL(), 0);
		else if (!strcmp(a, "-c")) n_ctx = int_flag(a, VAL(), 1);
		else if (!strcmp(a, "-b")) n_batch = int_flag(a, VAL(), 1);
		else if (!strcmp(a, "-ub")) n_ubatch = int_flag(a, VAL(), 1);
		else if (!strcmp(a, "-t")) threads = int_flag(a, VAL(), 1);
		else if (!strcmp(a, "-ctk")) tk = cache_type(a, VAL());
		else if (!strcmp(a, "-ctv")) tv = cache_type(a, VAL());
		else if (!strcmp(a, "-fa")) {
			const char *v = VAL();
			if (!strcmp(v, "off")) fa = LLAMA_FLASH_ATTN_TYPE_DISABLED;
			else if (!strcmp(v, "on")) fa = LLAMA_FLASH_ATTN_TYPE_ENABLED;
			else if (!strcmp(v, "auto")) fa = LLAMA_FLASH_ATTN_TYPE_AUTO;
			else die("-fa %s: want off, on or auto", v);
		} else if (!strcmp(a, "-no-repack")) no_repack = true;
		else if (!strcmp(a, "-v")) g_verbose = true;
		else if (!strcmp(a, "-h") || !strcmp(a, "-help") || !strcmp(a, "--help")) usage();
		else {
			fprintf(stderr, "logitsdump: unknown flag %s\n", a);
			usage();
		}
#undef VAL
	}
	if (!model_path || !out_path || (!tokens == !tokens_file)) {
		fprintf(stderr, "logitsdump: -m, -o and one of -tokens, -tokens-file are required\n");
		usage();
	}
	if (n_ubatch == 0) {
		n_ubatch = n_batch;
	}
	if (n_ubatch > n_batch) {
		die("-ub %d exceeds -b %d", n_ubatch, n_batch);
	}
	parse_tokens(tokens ? tokens : read_file(tokens_file));
	int32_t rows = 0;
	for (int i = 0; i < g_ngroups; i++) {
		rows += g_groups[i].n;
	}

	llama_log_set(on_log, NULL);
	// A build whose backends are loadable modules (GGML_BACKEND_DL, as the
	// npm libraries are) registers none until they are loaded: look next to
	// the library that holds ggml's backend registry. A build with them
	// linked in (the CUDA build) has them registered already.
	if (ggml_backend_dev_count() == 0) {
		Dl_info info;
		char *dir = NULL;
		if (dladdr((void *)ggml_backend_load_all_from_path, &info) && info.dli_fname) {
			char *copy = strdup(info.dli_fname);
			dir = strdup(dirname(copy));
			free(copy);
		}
		ggml_backend_load_all_from_path(dir);
		free(dir);
	}
	llama_backend_init();
	if (ggml_backend_dev_count() == 0) {
		die("no ggml backend device registered (are the libggml-*.so next to libggml-base.so?)");
	}

	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = ngl;
	mp.use_extra_bufts = !no_repack;
	FILE *probe = fopen(model_path, "rb");
	if (!probe) {
		die("model %s: %s", model_path, strerror(errno));
	}
	fclose(probe);
	struct llama_model *model = llama_model_load_from_file(model_path, mp);
	if (!model) {
		die("model %s: llama.cpp could not load it", model_path);
	}
	const struct llama_vocab *vocab = llama_model_get_vocab(model);
	const int32_t n_vocab = llama_vocab_n_tokens(vocab);

	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)(n_ctx ? n_ctx : 512);
	cp.n_batch = (uint32_t)n_batch;
	cp.n_ubatch = (uint32_t)n_ubatch;
	cp.n_seq_max = 1;
	cp.n_threads = threads;
	cp.n_threads_batch = threads;
	cp.flash_attn_type = fa;
	cp.type_k = tk;
	cp.type_v = tv;
	cp.no_perf = true;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (!ctx) {
		die("context (n_ctx %u, n_batch %d, cache %s/%s, flash attention %s): llama.cpp could not make it",
		    cp.n_ctx, n_batch, ggml_type_name(tk), ggml_type_name(tv), fa_name(fa));
	}
	llama_memory_t mem = llama_get_memory(ctx);
	const int32_t ctx_len = (int32_t)llama_n_ctx(ctx);
	n_batch = (int)llama_n_batch(ctx); // llama.cpp caps it at n_ctx

	float *out = malloc((size_t)rows * (size_t)n_vocab * sizeof(float));
	int32_t *row_pos = malloc((size_t)rows * sizeof(int32_t));
	int32_t *row_tok = malloc((size_t)rows * sizeof(int32_t));
	if (!out || !row_pos || !row_tok) {
		die("out of memory for %d rows of %d logits", rows, n_vocab);
	}
	struct llama_batch batch = llama_batch_init(n_batch, 0, 1);
	int32_t pos = 0, row = 0;
	for (int gi = 0; gi < g_ngroups; gi++) {
		group *g = &g_groups[gi];
		if (g->at >= 0) {
			if (g->at > pos) {
				die("group %d: @%d is past the cache's end (position %d)", gi + 1, g->at, pos);
			}
			if (!llama_memory_seq_rm(mem, 0, g->at, -1)) {
				die("group %d: llama_memory_seq_rm(seq 0, from %d) failed", gi + 1, g->at);
			}
			pos = g->at;
		}
		for (int32_t start = 0; start < g->n; start += n_batch) {
			int32_t n = g->n - start < n_batch ? g->n - start : n_batch;
			if (pos + n > ctx_len) {
				die("group %d: positions %d..%d exceed the context of %d", gi + 1, pos, pos + n - 1, ctx_len);
			}
			batch.n_tokens = n;
			for (int32_t j = 0; j < n; j++) {
				int32_t id = g->ids[start + j];
				if (id >= n_vocab) {
					die("group %d: token id %d is outside the vocabulary of %d", gi + 1, id, n_vocab);
				}
				batch.token[j] = id;
				batch.pos[j] = pos + j;
				batch.n_seq_id[j] = 1;
				batch.seq_id[j][0] = 0;
				batch.logits[j] = 1;
			}
			int32_t rc = llama_decode(ctx, batch);
			if (rc != 0) {
				die("llama_decode failed (returned %d) on group %d, positions %d..%d", rc, gi + 1, pos, pos + n - 1);
			}
			for (int32_t j = 0; j < n; j++) {
				const float *l = llama_get_logits_ith(ctx, j);
				if (!l) {
					die("no logits returned for position %d", pos + j);
				}
				memcpy(out + (size_t)row * n_vocab, l, (size_t)n_vocab * sizeof(float));
				row_pos[row] = pos + j;
				row_tok[row] = batch.token[j];
				row++;
			}
			pos += n;
		}
	}
	llama_batch_free(batch);

	// Raw little-endian float32 (every machine this runs on is little-endian).
	const uint16_t one = 1;
	if (*(const uint8_t *)&one != 1) {
		die("this machine is big-endian: the output format is little-endian float32");
	}
	FILE *f = fopen(out_path, "wb");
	if (!f) {
		die("output %s: %s", out_path, strerror(errno));
	}
	if (fwrite(out, sizeof(float), (size_t)rows * n_vocab, f) != (size_t)rows * n_vocab || fclose(f) != 0) {
		die("output %s: write failed", out_path);
	}

	size_t jl = strlen(out_path) + 6;
	char *json_path = malloc(jl);
	snprintf(json_path, jl, "%s.json", out_path);
	char desc[256] = "";
	llama_model_desc(model, desc, sizeof desc);
	char *text = NULL;
	size_t text_len = 0;
	FILE *j = open_memstream(&text, &text_len);
	fprintf(j, "{\"n_vocab\":%d,\"positions\":%d,\"pos\":[", n_vocab, rows);
	for (int32_t i = 0; i < rows; i++) fprintf(j, "%s%d", i ? "," : "", row_pos[i]);
	fprintf(j, "],\"tokens\":[");
	for (int32_t i = 0; i < rows; i++) fprintf(j, "%s%d", i ? "," : "", row_tok[i]);
	fprintf(j, "],\"model\":");
	json_str(j, model_path);
	fprintf(j, ",\"model_desc\":");
	json_str(j, desc);
	fprintf(j, ",\"n_layer\":%d,\"gpu_layers_requested\":%d,\"offloaded\":", llama_model_n_layer(model), ngl);
	if (g_offloaded) json_str(j, g_offloaded);
	else fprintf(j, "null");
	fprintf(j, ",\"supports_gpu_offload\":%s,\"devices\":[", llama_supports_gpu_offload() ? "true" : "false");
	for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
		ggml_backend_dev_t d = ggml_backend_dev_get(i);
		char buf[512];
		snprintf(buf, sizeof buf, "%s (%s)", ggml_backend_dev_name(d), ggml_backend_dev_description(d));
		fprintf(j, "%s", i ? "," : "");
		json_str(j, buf);
	}
	fprintf(j, "],\"buffers\":[");
	for (int i = 0; i < g_nbuffers; i++) {
		fprintf(j, "%s", i ? "," : "");
		json_str(j, g_buffers[i]);
	}
	fprintf(j, "],\"n_ctx\":%d,\"n_batch\":%u,\"n_ubatch\":%u,\"type_k\":\"%s\",\"type_v\":\"%s\",\"flash_attn\":\"%s\"",
	        ctx_len, llama_n_batch(ctx), llama_n_ubatch(ctx), ggml_type_name(tk), ggml_type_name(tv), fa_name(fa));
	fprintf(j, ",\"threads\":%d,\"repack\":%s,\"system_info\":", threads, no_repack ? "false" : "true");
	json_str(j, llama_print_system_info());
	Dl_info lib;
	fprintf(j, ",\"libllama\":");
	json_str(j, dladdr((void *)llama_decode, &lib) && lib.dli_fname ? lib.dli_fname : "");
	fprintf(j, ",\"llama_cpp_source\":");
	json_str(j, LOGITSDUMP_SRC);
	fprintf(j, "}\n");
	fclose(j);
	f = fopen(json_path, "wb");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		die("sidecar %s: write failed", json_path);
	}
	fputs(text, stdout);

	llama_free(ctx);
	llama_model_free(model);
	llama_backend_free();
	return 0;
}
