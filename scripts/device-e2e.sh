#!/usr/bin/env bash
# Runs the end-to-end protocol on the lent device machine (an Intel Xeon with
# AMX; see /work/.library/device). The binaries are cross-built here
# (CGO_ENABLED=0) into .device/bin and carried with the pinned llama.cpp:
#
#   make device-bins
#   run: carry [".device", "baseline/llama.cpp/node_modules"],
#        command: scripts/device-e2e.sh PHASE
#
# or, for the CPU phases, in one archive with the test data that synth
# needs (the two above exceed the 64 MiB carry together):
#
#   make device-pack
#   run: carry [".device/pack/e2e.tar.xz"], command: scripts/device-e2e.sh PHASE
#
# Every result lands in $OUT/run, archived as $OUT/run.tgz (records in the
# single-file store ledger.jsonl, the e2e JSON files and the logs). Back in
# the repository, unpack it; `ledger import ledger.jsonl` appends those records to results/ledger/, each line into
# its month's file (records already there are left out), then `ledger report`. PHASE picks what to run so that each call
# fits the device's 10-minute limit. The bins are stripped (-s -w) to fit the
# 64 MiB carry with llama.cpp; llama.test runs the llama.cpp oracle tests there.
#
# Phases (each case below says more):
#   e2e       prefill and decode side by side, 3B and 1B (the default)
#   amx       variant sweep, then the 3B pp1024 head-to-head
#   more      profile, batched attention, 1B, 1→16 thread scaling
#   sweep     matmul variants, 10 runs, for `ledger promote`
#   tiles     the AMX tests, BenchmarkTileStep per-step timings, a 10-run
#             matmul sweep; DECODE=1 adds the 1B tg256 head-to-head
#   decode    matvec variants at the 1B shapes, then the 1B tg256
#             head-to-head with the fastest
#   attn      the AMX-BF16 attention's AMX tests, its agreement with
#             llama.cpp, attention and matvec-prefetch sweeps
#   promoted  3B pp1024 with the shipped preferences
#   batch     n_batch sizes
#   profile   the shipped engine's 3B prefill CPU profile, tile step timings,
#             the llama.cpp agreement test
#   profile16 CPU profiles of the 3B pp1024 at 16 threads and at 2 (issue 19)
#   blocking  matmul K blocks in the engine
#   pairs     whether two CPUs slow each other
#   prefill1b-decodeprof  1B pp1024, decode profiles
#   bf16      agreement with a BF16 cache on AMX, then 3B pp1024 with both
#             engines on bf16 caches
#   quants    the 1B in Q5_K_M, Q8_0, Q4_0 at pp512 beside llama.cpp
#   ab1b      an engine A/B on the 1B in TYPE (Q4_0) for a bundle promoted
#             elsewhere (ARMS; Q4_0: session 36's q40r16vnni with a plain batched form)
#   avx2      AVX-512 hidden: the 1B Q4_K_M and Q4_0 beside llama.cpp's
#             haswell and alderlake builds
#   bestkv    Damascus bf16 against llama.cpp f16
#   split     the prepared forms' gate on AMX, the agreement test, then
#             prepared batches against -static-split, alternating
#   pp1b      1B pp1024, the promoted kernels
#   attnws    the float32 prefill attention against its 8x32 twin
#             avx512-ws8x2, 10 runs
#   kernels   gate, then time, the prefill matmul variants
#   scaling   3B prefill, 1→16 threads, Damascus beside llama.cpp
#   cuda      on the H200 kind: nvidia-smi, the tests of internal/cuda and
#             variants/cuda, `ledger gate --family cuda`, the device-resident
#             benchmarks at the 3B shapes, the kernels' registers and SASS
#   gpu       on the H200 kind: llama-bench built with CUDA, the GPU engine's
#             agreement, then `ledger e2e --device cuda --llama-bench` on the
#             3B and 1B (10 interleaved rounds each, recorded)
#   gpu-ab    on the H200 kind: the opt-in GPU kernels' tests, an interleaved
#             A/B of ARMS, then e2e records of E2E_ARMS; one tar back
#   cpu-decode  the matvecs at 2 threads (3B shapes), then decode beside
#             llama.cpp at 2 threads with the fastest (issue 20)
#   short-prompts  pp16 … pp512 beside llama.cpp at 2 threads (issue 19)
#   short-profile  CPU profiles of a short prefill step, matmul and batched
#             decode kernel (issue 19)
#   decode-profile  CPU profiles of a 2-thread decode (issue 20)
#   cpu-depth  decode at a KV depth beside llama.cpp at 2 threads, f16
#             caches, rounds x reps (issue 20)
#   r16       the interleaved Q4_K experiment (issue 20): BenchmarkReadMix,
#             then the 3B decode beside llama.cpp with the r16 matvecs forced
#   l2pf      issue 20's L2-prefetching decode matvecs: the probe's sweeps,
#             then `ledger ab` of -l2pf8k and -l2pf16k in the Intel bundle
#   split-attn  issue 19's float32-class AMX-BF16 attention (amx-bf16-split):
#             its AMX tests, the attention sweep, `ledger ab` at 3B pp1024
#   ti        issue 19's row tiles inside the token groups: their AMX test,
#             then `ledger ab` of -ti4 and -ti8 (128-row chunks) at 3B pp1024
#   batchf8   issue 19 item 4 (short prompts on Intel): the AMX short-step
#             kernel amx-int8-r16s's gate, it and the float-scaled -r16-f8
#             against -r16-m4 in L2, then `ledger ab` of them in the engine
#   r16s-long issue 19 items 1-2: amx-int8-r16s (no digit split, scales in
#             float) as the whole prefill, against the promoted tile program
#   dealrun   issue 20: decode matvec chunks in guided runs (DAMASCUS_DEAL_RUN)
#             beside a chunk a call, `ledger ab` 3B tg64
#   ab        ledger ab: the promoted kernels beside the one-copy layout
#             arms, 10 rounds: the evidence `ledger promote --bundle` reads
#   shipped   the engine as shipped (no override), SHIPPED's tests, RUNS
#             rounds beside llama.cpp: the records after a promotion
#   r16-one   one copy of the Q4_K weights in the interleaved layout (its
#             matvec, batched product and AMX prefill forced): gate, A/B
#             against the promoted kernels, 3B pp1024 and tg128 records
set -uo pipefail
if [ -f .device/pack/e2e.tar.xz ]; then
	tar -xJf .device/pack/e2e.tar.xz || { echo "cannot unpack .device/pack/e2e.tar.xz"; exit 2; }
fi
B=${B:-.device/bin}
export DAMASCUS_TESTDATA=${DAMASCUS_TESTDATA:-$PWD/.device/testdata}
OUT=${OUT:-/tmp/damascus-out}
# The device returns about eight files of $OUT (the first by name), so the
# phases write under $OUT/run and one archive of it, $OUT/run.tgz, is what
# comes back (made on exit, also when a phase is cut short by a timeout).
ARCHIVE="$OUT/run.tgz" OUT="$OUT/run"
mkdir -p "$OUT"
trap 'tar czf "$ARCHIVE" -C "$OUT" . 2>/dev/null' EXIT
trap 'exit 143' TERM INT
STORE="$OUT/ledger.jsonl"
NOTE="lent device machine (Intel Xeon with AMX, 16 cores; other tenants unknown)"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

# ab_bench ROUND ARM KERNELS FILE ARGS...: one `ledger damascus-bench` of
# the 3B at 2 threads (ARGS: its tests, -r 1) with DAMASCUS_KERNELS, each
# test's tok/s appended to FILE as "round=R arm=A test=T tok/s=X".
ab_bench() {
	local r=$1 arm=$2 k=$3 file=$4
	shift 4
	DAMASCUS_KERNELS=$k timeout 90 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf "$@" -r 1 -t 2 > "$OUT/ab.json" 2>/dev/null
	python3 -c 'import json,sys; [print("round=%s arm=%s test=%s tok/s=%s" % (sys.argv[2], sys.argv[3], t["name"], t["tokens_per_sec"][0])) for t in json.load(open(sys.argv[1]))["tests"]]' \
		"$OUT/ab.json" "$r" "$arm" >> "$file" 2>&1
}

# ab_medians FILE: each test's and arm's median tok/s over FILE's rounds.
ab_medians() {
	python3 -c '
import re,statistics as st,collections,sys
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    m=re.match(r"round=\S+ arm=(\S+) test=(\S+) tok/s=([\d.]+)",l)
    if m: d[(m.group(2),m.group(1))].append(float(m.group(3)))
for (t,a),v in sorted(d.items()): print("%-6s %-9s median %.2f tok/s over %d (min %.2f max %.2f)" % (t, a, st.median(v), len(v), min(v), max(v)))' "$1"
}

# pp3b NAME NOTE [FLAGS...]: the prefill protocol of record on the 3B with
# the shipped preferences (3B pp1024, RUNS runs, 2 threads, llama.cpp's AMX
# variant on huge pages), extra e2e flags appended; out in $OUT/e2e-3b-NAME.*
pp3b() {
	local name=$1 note=$2; shift 2
	models llama3.2-3b
	unset DAMASCUS_KERNELS
	log "e2e llama3.2-3b pp1024: $note"
	timeout "${E2E_TIMEOUT:-540}" $B/ledger e2e -m /tmp/llama3.2-3b.gguf --pp 1024 --tg 0 --runs "${RUNS:-10}" --warmup-prompt 64 --no-roofline \
		--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 "$@" \
		--json "$OUT/e2e-3b-$name.json" --store "$STORE" --note "$NOTE; promoted kernels, no override; $note" \
		> "$OUT/e2e-3b-$name.txt" 2>&1
	grep -aE "prefill|recorded" "$OUT/e2e-3b-$name.txt" | tail -3
	grep -a -o "sample round [0-9]* [a-z.]* [a-z0-9]*: \[[0-9.]*" "$OUT/e2e-3b-$name.txt"
}

# fastest FILE OP MODEL: the variant of OP with the least sum of medians
# over MODEL's shapes in the `ledger run` table in FILE.
fastest() {
	grep -aE "^\| $2 .*\($3" "$1" | awk -F'|' '
		function ns(v,  n,u) { n = v + 0; u = v; sub(/^[ 0-9.]+/, "", u); gsub(/ /, "", u)
			return u == "s" ? n*1e9 : u == "ms" ? n*1e6 : (u == "µs" || u == "us") ? n*1e3 : n }
		{ v = $4; gsub(/ /, "", v); t[v] += ns($5) }
		END { best = ""; for (v in t) if (best == "" || t[v] < t[best]) best = v; print best }'
}

models() {
	for p in "$@"; do
		[ -f "/tmp/$p.gguf" ] || $B/damascus synth --preset "$p" --type Q4_K_M -o "/tmp/$p.gguf" 2>&1 | tail -1
	done
}

# ab_phase is the ab phase (below), which ti and l2pf run with their arms.
ab_phase() {
	# The engine A/B of record for a bundle (ledger ab, then `ledger promote
	# --bundle ARM --run ID` here after import): the promoted kernels beside
	# the one-copy layout arms on the host's AMX cores, 2 threads, RUNS (10)
	# rounds of the 3B at PPS (16,512) and TG (64), each arm gated first at
	# the 3B shapes. ARMS (default: one-all, every Q4_K and Q6_K product
	# on the interleaved layouts, matvecs R16 (-pf4k)) is NAME=KERNELS
	# items separated by spaces. ≈ 25 s a process: 10 rounds of two arms
	# take ≈ 500 s, one call.
	NOTE="lent device machine (Intel Xeon with AMX, 16 cores; the H200 idle)"
	models llama3.2-3b
	mv=avx512-vnni-r16${R16--pf4k}
	one="matvec/q4_k=$mv,matvec_batch/q4_k=avx512-vnni-r16-m4,matmul/q4_k=amx-int8-il-r16,matvec/q6_k=$mv,matvec_batch/q6_k=avx512-vnni-r16-m4,matmul/q6_k=amx-int8-il-g8-r16"
	args=()
	for a in ${ARMS-one-all=$one}; do args+=(--arm "$a"); done
	# SB_ARMS: NAME=N items, arms that move the small-batch crossover
	# (with ARMS="" and PPS=16,32,64: the crossover sweep over the
	# promoted kernels, once the Intel bundle is promoted).
	for a in ${SB_ARMS:-}; do args+=(--arm-small-batch "$a"); done
	# BC_ARMS: NAME=N items, arms that set the prefill matmul's dealt chunk
	# (DAMASCUS_BATCH_CHUNK; with ARMS="" TG="" PPS=1024: issue 19's sweep).
	for a in ${BC_ARMS:-}; do args+=(--arm-batch-chunk "$a"); done
	# DR_ARMS: NAME=N items, arms that take decode matvec chunks in runs
	# of up to N (DAMASCUS_DEAL_RUN; with ARMS="" PPS="": the dealrun phase).
	# THREADS (2): both arms' threads (issue 19's 16-thread leg: THREADS=16
	# ARMS="" TG="" PPS=1024 BC_ARMS="c32=32 c16=16", the prepared batch's
	# 64-row chunk leaves 16 workers one chunk each of K and V).
	for a in ${DR_ARMS:-}; do args+=(--arm-deal-run "$a"); done
	log "ledger ab, 3B pp${PPS-16,512} tg${TG-64}, ${RUNS:-10} rounds: ${ARMS-one-all=$one} ${SB_ARMS:-} ${BC_ARMS:-} ${DR_ARMS:-}"
	timeout "${AB_TIMEOUT:-560}" $B/ledger ab -m /tmp/llama3.2-3b.gguf --pp "${PPS-16,512}" --tg "${TG-64}" --runs "${RUNS:-10}" --threads "${THREADS:-2}" \
		--gate-shapes 3B "${args[@]}" --store "$STORE" --note "$NOTE; engine A/B for a bundle" > "$OUT/ab-3b.txt" 2> "$OUT/ab-3b.err"
	cat "$OUT/ab-3b.txt"; grep -a "sample round" "$OUT/ab-3b.err" | tail -3
}

case "${1:-e2e}" in
e2e)
	# Prefill and decode side by side, 2 threads, AMX kernels for Damascus'
	# prefill, llama.cpp's AMX variant on huge pages (its best configuration here).
	log device-info; $B/damascus device-info > "$OUT/device-info.txt" 2>&1
	MODELS=${MODELS:-llama3.2-3b llama3.2-1b}
	log synth; models $MODELS
	export DAMASCUS_KERNELS=${DAMASCUS_KERNELS:-matmul/q4_k=amx-int8,matmul/q6_k=amx-int8}
	for m in $MODELS; do
		log "e2e $m"
		timeout "${E2E_TIMEOUT:-270}" $B/ledger e2e -m "/tmp/$m.gguf" --pp "${PP:-512}" --tg "${TG:-64}" --runs "${RUNS:-5}" \
			--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 1 \
			--json "$OUT/e2e-$m.json" --store "$STORE" --note "$NOTE; DAMASCUS_KERNELS=$DAMASCUS_KERNELS" \
			> "$OUT/e2e-$m.txt" 2>&1
		tail -12 "$OUT/e2e-$m.txt"
	done
	;;
amx)
	# One call's worth of issue 8's evidence: a short gated sweep of the AMX
	# matmul variants at the 3B shapes picks the fastest per weight type, then
	# the protocol's prefill head-to-head (3B, pp1024, 2 threads, RUNS runs)
	# with those kernels against llama.cpp's AMX variant on huge pages.
	log device-info; $B/damascus device-info 2>&1 | head -40
	log synth; models llama3.2-3b
	if [ -z "${SKIP_SWEEP:-}" ]; then
		log sweep
		timeout "${SWEEP_TIMEOUT:-90}" $B/ledger run --op matmul/q4_k,matmul/q6_k --variant "${SWEEP_VARIANTS:-amx-int8,amx-int8-kb2,amx-int8-kb4,avx512-vnni-tiles}" \
			--shapes 3B --runs "${SWEEP_RUNS:-3}" --no-roofline --store "$STORE" --note "$NOTE; variant sweep before e2e" > "$OUT/sweep.txt" 2>&1
		grep -E "^\| matmul" "$OUT/sweep.txt"
	fi
	[ -f "$OUT/sweep.txt" ] && { q4=$(fastest "$OUT/sweep.txt" matmul/q4_k 3B); q6=$(fastest "$OUT/sweep.txt" matmul/q6_k 3B); }
	export DAMASCUS_KERNELS=${DAMASCUS_KERNELS:-matmul/q4_k=${q4:-amx-int8},matmul/q6_k=${q6:-amx-int8},attention_batch=avx512}
	log "e2e llama3.2-3b with $DAMASCUS_KERNELS"
	timeout "${E2E_TIMEOUT:-460}" $B/ledger e2e -m /tmp/llama3.2-3b.gguf --pp "${PP:-1024}" --tg "${TG:-0}" --runs "${RUNS:-10}" --warmup-prompt 64 --no-roofline \
		--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
		--json "$OUT/e2e-3b.json" --store "$STORE" --note "$NOTE; DAMASCUS_KERNELS=$DAMASCUS_KERNELS" \
		> "$OUT/e2e-3b.txt" 2>&1
	grep -E "sample round|prefill|decode" "$OUT/e2e-3b.txt" | tail -30
	;;
more)
	# The second call: the 1B preset under the same protocol, then prefill
	# scaling 1→16 threads on the 3B. KERNELS names the matmul variants the
	# first call's sweep picked.
	export DAMASCUS_KERNELS=${DAMASCUS_KERNELS:-matmul/q4_k=amx-int8,matmul/q6_k=amx-int8,attention_batch=avx512}
	mkdir -p /tmp/scaling
	models llama3.2-1b llama3.2-3b
	# Where a prefill's time goes on AMX (pprof reads the profile anywhere).
	log profile
	DAMASCUS_KERNELS=matmul/q4_k=amx-int8,matmul/q6_k=amx-int8,attention_batch=avx512 timeout 40 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf \
		-p 512 -r 1 -t 2 -no-warmup -cpuprofile "$OUT/pp512-t2.prof" > /tmp/pp512-t2.json 2>&1
	grep -A1 tokens_per_sec /tmp/pp512-t2.json
	log "attention_batch sweep"
	timeout 60 $B/ledger run --op attention_batch --variant per-token,avx512 --shapes 3B --runs 5 --no-roofline \
		--store /tmp/scaling/attn.jsonl --note "$NOTE" > /tmp/attn.txt 2>&1
	grep -E "^\| attention" /tmp/attn.txt; cat /tmp/attn.txt >> "$OUT/scaling.txt"
	log "e2e llama3.2-1b with $DAMASCUS_KERNELS"
	timeout "${E2E_TIMEOUT:-180}" $B/ledger e2e -m /tmp/llama3.2-1b.gguf --pp "${PP:-1024}" --tg 0 --runs "${RUNS:-10}" --warmup-prompt 64 --no-roofline \
		--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
		--json "$OUT/e2e-1b.json" --store "$STORE" --note "$NOTE; DAMASCUS_KERNELS=$DAMASCUS_KERNELS" \
		> "$OUT/e2e-1b.txt" 2>&1
	grep -E "prefill" "$OUT/e2e-1b.txt" | tail -5
	# Scaling records go to a side store (its benchstat files would pass the
	# limit on files brought back), then onto the main one.
	mkdir -p /tmp/scaling
	for t in ${THREADS_LIST:-1 2 4 8 16}; do
		log "scaling t=$t"
		limit=50; [ "$t" = 1 ] && limit=80
		timeout "$limit" $B/ledger e2e -m /tmp/llama3.2-3b.gguf --pp 256 --tg 0 --runs 3 --threads $t --warmup-prompt 32 --no-roofline \
			--cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
			--store /tmp/scaling/ledger.jsonl --note "$NOTE; scaling run; DAMASCUS_KERNELS=$DAMASCUS_KERNELS" > /tmp/scaling-t$t.txt 2>&1
		cat /tmp/scaling-t$t.txt >> "$OUT/scaling.txt"
		grep -vE "sample round|^model|hashing" /tmp/scaling-t$t.txt | tail -8
	done
	cat /tmp/scaling/*.jsonl >> "$STORE"
	;;
profile)
	# Where the shipped engine's 3B prefill time goes (promoted kernels, 2
	# threads, pp512; pprof reads the profile anywhere), the tile kernels'
	# step timings, and the llama.cpp agreement test with AMX attention in
	# the same process as ggml's AMX (the SIGILL that thread.go fixed).
	log device-info; $B/damascus device-info 2>&1 | grep -iE "model name|mhz|amx|cores" | head -8
	models llama3.2-3b
	unset DAMASCUS_KERNELS
	log profile
	timeout 120 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 512 -r 2 -t 2 -cpuprofile "$OUT/pp512-3b-t2.prof" > "$OUT/pp512-3b-t2.json" 2>&1
	grep -A1 tokens_per_sec "$OUT/pp512-3b-t2.json" | head -4
	log tilestep
	$B/amx.test -test.run '^$' -test.bench TileStep -test.count 3 -test.benchtime 0.3s > "$OUT/tilestep.txt" 2>&1
	grep -E "ns/step" "$OUT/tilestep.txt"
	log "llama.cpp agreement with attention_batch=amx-bf16"
	timeout 200 $B/llama.test -test.run 'TestSynthTinyMatchesLlamaCppAndReference/Q4_K_M' -test.count 1 -test.v > "$OUT/agree.txt" 2>&1
	grep -E "ours vs llama.cpp|criteria|FAIL|^ok|^PASS|diverg|SIGILL" "$OUT/agree.txt" | head -12
	;;
profile16)
	# Issue 19's 16-thread leg (2.18x in session 38 against 2.32x at 2
	# threads): where the shipped engine's 3B pp1024 time goes at THREADS
	# (16) and at 2, CPU profiles of one process each (-r 2), read here by
	# `go tool pprof -top` (the profile carries its symbols).
	models llama3.2-3b
	unset DAMASCUS_KERNELS
	for th in ${THREADS:-16} 2; do
		log "profile 3B pp1024 at $th threads"
		timeout 200 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 1024 -r 2 -t "$th" -warmup-prompt 64 \
			-cpuprofile "$OUT/pp1024-3b-t$th.prof" > "$OUT/pp1024-3b-t$th.json" 2>&1
		grep -A2 tokens_per_sec "$OUT/pp1024-3b-t$th.json" | head -3
	done
	;;
blocking)
	# The matmul K blocking in the engine (3B pp512, 2 threads): each
	# KERNEL_SETS entry (q4_k variant/q6_k variant, "default" for the
	# shipped preferences) ROUNDS times, alternating, 3 repetitions each;
	# then the shipped engine on 1 thread. JSONs land in $OUT/blocking.
	models llama3.2-3b
	mkdir -p "$OUT/blocking"
	for round in $(seq 1 "${ROUNDS:-2}"); do
		for ks in ${KERNEL_SETS:-default amx-int8-il/amx-int8-il amx-int8-il-kb4/amx-int8-il-kb4 amx-int8-il-kb2/amx-int8-il-kb2 amx-int8-il-kb16/amx-int8-il-kb16 amx-int8-il-auto/amx-int8-il-auto}; do
			if [ "$ks" = default ]; then unset DAMASCUS_KERNELS; else export DAMASCUS_KERNELS="matmul/q4_k=${ks%/*},matmul/q6_k=${ks#*/}"; fi
			f="$OUT/blocking/$(echo "$ks" | tr / _)-r$round.json"
			timeout 60 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 512 -r 3 -t 2 -warmup-prompt 64 > "$f" 2>&1
			echo "$ks round $round: $(tr -d ' \n' < "$f" | grep -o '"tokens_per_sec":\[[0-9.,]*' | head -1)"
		done
	done
	unset DAMASCUS_KERNELS
	timeout 90 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 512 -r 3 -t 1 -warmup-prompt 64 > "$OUT/blocking/default-t1.json" 2>&1
	echo "default 1 thread: $(tr -d ' \n' < "$OUT/blocking/default-t1.json" | grep -o '"tokens_per_sec":\[[0-9.,]*' | head -1)"
	;;
pairs)
	# Do two CPUs share a tile unit? The reported topology, then one row
	# tile's step time (tileKernelIL, data in L2) alone on a CPU and with a
	# twin process on another CPU at the same time, for several pairs.
	lscpu 2>/dev/null | grep -iE "model name|thread|core|socket|numa|mhz|cache" | head -16
	for c in 0 1 2 8; do echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null) core $(cat /sys/devices/system/cpu/cpu$c/topology/core_id 2>/dev/null)"; done
	tb() { taskset -c "$1" $B/amx.test -test.run '^$' -test.bench 'TileStep/kernel=tileKernelIL/data=l2' -test.count "${COUNT:-4}" -test.benchtime 0.5s 2>&1 | grep -o "[0-9.]* ns/step" | tr '\n' ' '; }
	for round in 1 2; do
		echo "solo 0: $(tb 0)"
		for pair in ${PAIRS:-0,1 0,2 0,8 0,15 3,11}; do
			a=${pair%,*}; b=${pair#*,}
			tb "$b" > /tmp/twin.txt & pid=$!
			echo "pair $pair: cpu$a $(tb "$a") | cpu$b $(wait $pid; cat /tmp/twin.txt)"
		done
	done
	;;
prefill1b-decodeprof)
	# The 1B preset's prefill under the protocol with the shipped engine (5
	# runs), then CPU profiles of the shipped engine's decode (1B tg128, 3B
	# tg64, 2 threads) to see what a token costs besides streaming weights.
	models llama3.2-1b llama3.2-3b
	unset DAMASCUS_KERNELS
	log "e2e llama3.2-1b pp1024, promoted kernels"
	timeout 300 $B/ledger e2e -m /tmp/llama3.2-1b.gguf --pp 1024 --tg 0 --runs "${RUNS:-5}" --warmup-prompt 64 --no-roofline \
		--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
		--json "$OUT/e2e-1b-promoted.json" --store "$STORE" --note "$NOTE; promoted kernels, no override" > "$OUT/e2e-1b-promoted.txt" 2>&1
	grep -aE "prefill|recorded" "$OUT/e2e-1b-promoted.txt" | tail -2
	for m in 1b:128 3b:64; do
		log "decode profile ${m%:*}"
		timeout 90 $B/ledger damascus-bench -m /tmp/llama3.2-${m%:*}.gguf -n ${m#*:} -r 2 -t 2 -cpuprofile "$OUT/tg-${m%:*}.prof" > "$OUT/tg-${m%:*}.json" 2>&1
		tr -d ' \n' < "$OUT/tg-${m%:*}.json" | grep -o '"tokens_per_sec":\[[0-9.,]*' | head -1; echo
	done
	;;
bf16)
	# The BF16 KV cache on AMX: the llama.cpp agreement test (F16, F32 and
	# BF16 caches; BF16 prefill on amx-bf16 here), then the prefill protocol
	# with both engines on a bf16 cache (3B pp1024, RUNS runs).
	log "llama.cpp agreement"
	timeout 120 $B/llama.test -test.run 'TestSynthTinyMatchesLlamaCppAndReference/Q4_K_M' -test.count 1 -test.v > "$OUT/agree.txt" 2>&1
	grep -E "ours vs llama.cpp|criteria|^--- |^ok|^PASS|^FAIL|diverg" "$OUT/agree.txt" | head -12
	pp3b bf16 "both engines on a bf16 KV cache" --kv-type bf16
	;;
split)
	# Prepared batches (activations laid out once, rows dealt in chunks of
	# 64 to whichever worker is free) against the static split (one call per
	# worker on half the rows, each laying out the whole batch): the gate of
	# the prepared forms on AMX, the llama.cpp agreement test, then 3B
	# pp1024 with each schedule, alternating, ROUNDS rounds of one run.
	# SKIP_CHECKS skips the gate and the agreement test; THREADS_LIST gives
	# the thread counts, each with its own ROUNDS.
	if [ -z "${SKIP_CHECKS:-}" ]; then
		log gate; timeout 120 $B/ledger gate --op matmul/q4_k,matmul/q6_k --shapes 3B > "$OUT/gate.txt" 2>&1; tail -2 "$OUT/gate.txt"
		grep -a "^fail" "$OUT/gate.txt" | head -5
		log "llama.cpp agreement"
		timeout 120 $B/llama.test -test.run 'TestSynthTinyMatchesLlamaCppAndReference/Q4_K_M|TestPreparedBatchSameAsStaticSplit' -test.count 1 -test.v > "$OUT/agree.txt" 2>&1
		grep -aE "ours vs llama.cpp|criteria|^--- |^ok|^PASS|^FAIL|diverg" "$OUT/agree.txt" | head -12
	fi
	models llama3.2-3b
	unset DAMASCUS_KERNELS
	for t in ${THREADS_LIST:-2}; do
		for r in $(seq 1 "${ROUNDS:-4}"); do
			for mode in prepared static; do
				flag=; [ $mode = static ] && flag=-static-split
				printf "threads %d round %d %-8s: " $t $r $mode
				$B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 1024 -r 1 -t $t -warmup-prompt 64 $flag 2>/dev/null | tr -d ' \n' | grep -o '"tokens_per_sec":\[[0-9.]*' | cut -d[ -f2
			done
		done
	done 2>&1 | tee "$OUT/split.txt"
	;;
attnws)
	# The float32 prefill attention's pass over V: avx512 against its 8x32
	# register-tiled twin avx512-ws8x2 (level on the AMD dev VM) at the 3B
	# shapes, 10 runs, for `ledger promote`; ATTN_VARIANTS names others
	# (avx512,avx512-ws8x2,avx512-s32,avx512-ws8x2-s32: the two-block scores).
	log "attention sweep"
	timeout "${SWEEP_TIMEOUT:-300}" $B/ledger run --op attention_batch --variant "${ATTN_VARIANTS:-avx512,avx512-ws8x2}" --shapes 3B --runs "${SWEEP_RUNS:-10}" \
		--store "$STORE" --note "$NOTE" > "$OUT/sweep-attnws.txt" 2>&1
	grep -E "^\| attention_batch.*\(3B|recorded" "$OUT/sweep-attnws.txt"
	;;
pp1b)
	# The prefill protocol of record on the 1B preset (pp1024, RUNS runs).
	models llama3.2-1b
	unset DAMASCUS_KERNELS
	log "e2e llama3.2-1b pp1024"
	timeout "${E2E_TIMEOUT:-400}" $B/ledger e2e -m /tmp/llama3.2-1b.gguf --pp 1024 --tg 0 --runs "${RUNS:-10}" --warmup-prompt 64 --no-roofline \
		--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
		--json "$OUT/e2e-1b-promoted.json" --store "$STORE" --note "$NOTE; promoted kernels, no override; each engine's default KV cache" \
		> "$OUT/e2e-1b-promoted.txt" 2>&1
	grep -aE "prefill|recorded" "$OUT/e2e-1b-promoted.txt" | tail -3
	;;
quants)
	# The 1B in the other weight types (QUANTS: Q5_K_M Q8_0 Q4_0) at pp512
	# beside llama.cpp, RUNS (5) rounds each: their GEMMs' Intel records.
	# KERNELS, when set, overrides the promoted kernels for every type.
	for q in ${QUANTS:-Q5_K_M Q8_0 Q4_0}; do
		f=/tmp/llama3.2-1b-$q.gguf
		[ -f "$f" ] || $B/damascus synth --preset llama3.2-1b --type "$q" -o "$f" 2>&1 | tail -1
		log "e2e llama3.2-1b $q pp512"
		DAMASCUS_KERNELS=${KERNELS:-} timeout "${E2E_TIMEOUT:-170}" $B/ledger e2e -m "$f" --pp 512 --tg 0 --runs "${RUNS:-5}" --warmup-prompt 64 --no-roofline \
			--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
			--json "$OUT/e2e-1b-$q.json" --store "$STORE" --note "$NOTE; 1B $q; kernels ${KERNELS:-promoted}" \
			> "$OUT/e2e-1b-$q.txt" 2>&1
		grep -aE "prefill|recorded" "$OUT/e2e-1b-$q.txt" | tail -3
	done
	;;
ab1b)
	# An engine A/B on the 1B in another weight type (TYPE: Q4_0), for
	# bundles promoted elsewhere: ARMS (default: session 36's Zen 5
	# bundle q40r16vnni, the interleaved Q4_0 layout read by AVX-512 VNNI,
	# with the batched form that keeps its blocks in L2 on Intel: the
	# bundle's -nta8k one lost pp16 0.126× there in session 37, its
	# non-temporal lines leaving L2; with TYPE=BF16
	# ARMS="bf16dot=matmul/bf16=avx512-bf16-gemm"), PPS (16,512),
	# TG (64), RUNS (10) rounds, 2 threads; then `ledger promote --bundle
	# ARM --run ID --cpu-family` here after import. TYPE=Q4_K_M runs issue
	# 19's and 20's 1B arms (see results/device/20261206-s38-calls.txt).
	q=${TYPE:-Q4_0}
	f=/tmp/llama3.2-1b-$q.gguf
	[ -f "$f" ] || $B/damascus synth --preset llama3.2-1b --type "$q" -o "$f" 2>&1 | tail -1
	args=()
	for a in ${ARMS-q40r16b=matvec/q4_0=avx512-vnni-r16-nta8k,matvec_batch/q4_0=avx512-vnni-r16,matmul/q4_0=avx512-vnni-gemm-r16}; do args+=(--arm "$a"); done
	# SB_ARMS: NAME=N items, arms that also move the small-batch crossover
	# (issue 19's short prompts on the 1B, as ab_phase's on the 3B).
	for a in ${SB_ARMS:-}; do args+=(--arm-small-batch "$a"); done
	log "ledger ab, 1B $q pp${PPS-16,512} tg${TG-64}, ${RUNS:-10} rounds: ${args[*]}"
	timeout "${AB_TIMEOUT:-560}" $B/ledger ab -m "$f" --pp "${PPS-16,512}" --tg "${TG-64}" --runs "${RUNS:-10}" --threads 2 \
		"${args[@]}" --store "$STORE" --note "$NOTE; engine A/B for a bundle, 1B $q" > "$OUT/ab-1b-$q.txt" 2> "$OUT/ab-1b-$q.err"
	cat "$OUT/ab-1b-$q.txt"; grep -a "sample round" "$OUT/ab-1b-$q.err" | tail -3
	;;
avx2)
	# CPUs without AVX-512 as the host's cores see them with it hidden
	# (Golden Cove: an Alder/Raptor Lake P-core's integer and vector
	# units): Damascus with DAMASCUS_CPU_HIDE=avx512f (the r16 and q40r16
	# bundles of session 35), llama.cpp's haswell and alderlake builds on
	# huge pages (the better of the two), 2 threads, the 1B in QUANTS
	# (Q4_K_M Q4_0) at pp512 and tg128, RUNS (4) rounds each.
	for q in ${QUANTS:-Q4_K_M Q4_0}; do
		f=/tmp/llama3.2-1b-$q.gguf
		[ -f "$f" ] || $B/damascus synth --preset llama3.2-1b --type "$q" -o "$f" 2>&1 | tail -1
		log "e2e llama3.2-1b $q pp512 tg128, AVX-512 hidden"
		DAMASCUS_CPU_HIDE=avx512f timeout "${E2E_TIMEOUT:-280}" $B/ledger e2e -m "$f" --pp 512 --tg 128 --runs "${RUNS:-4}" --warmup-prompt 64 --no-roofline \
			--threads 2 --llama-configs haswell+huge,alderlake+huge --sustained 0 --cold-runs 0 \
			--json "$OUT/e2e-1b-$q-avx2.json" --store "$STORE" --note "$NOTE; CPUs without AVX-512 (DAMASCUS_CPU_HIDE=avx512f); 1B $q" \
			> "$OUT/e2e-1b-$q-avx2.txt" 2>&1
		grep -aE "prefill tok|decode tok|recorded" "$OUT/e2e-1b-$q-avx2.txt" | cut -c1-200 | tail -3
	done
	;;
bestkv)
	# Each engine on its fastest 16-bit KV cache: Damascus bf16 (amx-bf16
	# prefill attention), llama.cpp f16 (its default and its fastest here);
	# 3B pp1024, RUNS runs.
	pp3b bestkv "Damascus on a bf16 KV cache, llama.cpp on f16" --kv-type bf16 --llama-kv-type f16
	;;
promoted)
	# The protocol of record with the engine as shipped: no kernel override,
	# promoted/preferences.json decides (AMX where it exists).
	pp3b promoted "each engine's default KV cache"
	;;
tiles)
	# Issue 8's loop-order work in one call: the AMX tests of the tile
	# kernels (gate, extremes, tile program), one row tile's step timings
	# (BenchmarkTileStep: data in L1 or L2, with and without the epilogue),
	# the 10-run sweep of the matmul variants, then the 1B decode head to
	# head (tg256) on this Intel machine.
	log amx-tests
	$B/amx.test -test.run 'TestAMXInt8$|WeightResident|ExtremesAMX|TilePrograms' -test.count 1 2>&1 | tail -30
	log tilestep
	$B/amx.test -test.run '^$' -test.bench TileStep -test.count 3 -test.benchtime 0.3s > "$OUT/tilestep.txt" 2>&1
	grep -E "ns/step" "$OUT/tilestep.txt"
	log sweep
	timeout "${SWEEP_TIMEOUT:-300}" $B/ledger run --op matmul/q4_k,matmul/q6_k \
		--variant "${SWEEP_VARIANTS:-amx-int8-il,amx-int8-il-early,amx-int8-il-auto,amx-int8}" \
		--shapes 3B --runs "${SWEEP_RUNS:-10}" --store "$STORE" --note "$NOTE" > "$OUT/sweep.txt" 2>&1
	grep -E "^\| matmul.*\(3B|recorded|roofline|peak" "$OUT/sweep.txt"
	if [ -n "${DECODE:-}" ]; then
		models llama3.2-1b
		log "e2e decode llama3.2-1b"
		timeout "${E2E_TIMEOUT:-200}" $B/ledger e2e -m /tmp/llama3.2-1b.gguf --pp 0 --tg 256 --runs "${RUNS:-10}" \
			--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
			--json "$OUT/e2e-1b-decode.json" --store "$STORE" --note "$NOTE; decode on Intel" > "$OUT/e2e-1b-decode.txt" 2>&1
		grep -aE "decode|bandwidth|recorded" "$OUT/e2e-1b-decode.txt" | tail -6
	fi
	;;
attn)
	# The AMX-BF16 prefill attention: its AMX tests (tile programs against
	# their emulation, the variant through the gate), the engine with it
	# against llama.cpp on the tiny synthetic Q4_K_M (cosine, top-1), then
	# the attention_batch variants at the 3B shapes (10 runs), and the
	# matvec prefetch distances at the 1B and 3B shapes (5 runs).
	log amx-tests
	$B/amx.test -test.run 'BF16Converters|AttentionTiles' -test.count 1 -test.v 2>&1 | grep -E "^(---|ok|PASS|FAIL)|NMSE|amx" | grep -v "^=== RUN" | tail -30
	log "llama.cpp agreement with attention_batch=amx-bf16"
	DAMASCUS_KERNELS=attention_batch=amx-bf16 timeout 200 $B/llama.test -test.run 'TestSynthTinyMatchesLlamaCppAndReference/Q4_K_M' -test.count 1 -test.v > "$OUT/agree.txt" 2>&1
	grep -E "ours vs llama.cpp|criteria|FAIL|^ok|^PASS|diverg" "$OUT/agree.txt" | head -12
	log attention sweep
	timeout "${SWEEP_TIMEOUT:-150}" $B/ledger run --op attention_batch --variant avx512,amx-bf16 --shapes 3B --runs "${SWEEP_RUNS:-10}" \
		--store "$STORE" --note "$NOTE" > "$OUT/sweep-attn.txt" 2>&1
	grep -E "^\| attention_batch.*\(|recorded" "$OUT/sweep-attn.txt"
	for m in 1B 3B; do
		log "matvec sweep $m"
		timeout 120 $B/ledger run --op matvec/q4_k,matvec/q6_k --variant avx512,avx512-vnni,avx512-vnni-pf4k,avx512-vnni-pf8k,avx512-vnni-pf16k \
			--shapes $m --runs 5 --store "$STORE" --note "$NOTE; prefetch distances on Intel" > "$OUT/sweep-matvec-$m.txt" 2>&1
		grep -E "^\| matvec.*\($m (attn_q|ffn_down|output)|recorded" "$OUT/sweep-matvec-$m.txt"
	done
	;;
decode)
	# Issue 7 on the Intel cores (Damascus decoded a 1B at ~0.69x llama.cpp
	# here, while ahead on the AMD dev VM): the matvec variants at the 1B
	# shapes (single thread, the kernel protocol), then the 1B tg256 head to
	# head with the fastest Q4_K and Q6_K matvecs of that sweep.
	log sweep
	timeout "${SWEEP_TIMEOUT:-150}" $B/ledger run --op matvec/q4_k,matvec/q6_k \
		--variant "${SWEEP_VARIANTS:-avx512,avx512-vnni,avx512-vnni-prefetch,avx512-vnni-pf1k,avx512-vnni-pf4k,avx512-vnni-pf8k,avx512-vnni-4row,avx512-vnni-x}" \
		--shapes 1B --runs "${SWEEP_RUNS:-5}" --store "$STORE" --note "$NOTE; decode kernels on Intel" > "$OUT/sweep-matvec.txt" 2>&1
	grep -E "^\| matvec.*\(1B|recorded" "$OUT/sweep-matvec.txt"
	q4=$(fastest "$OUT/sweep-matvec.txt" matvec/q4_k 1B); q6=$(fastest "$OUT/sweep-matvec.txt" matvec/q6_k 1B)
	export DAMASCUS_KERNELS=${DAMASCUS_KERNELS:-matvec/q4_k=${q4:-avx512-vnni},matvec/q6_k=${q6:-avx512-vnni}}
	models llama3.2-1b
	log "e2e decode llama3.2-1b with $DAMASCUS_KERNELS"
	timeout "${E2E_TIMEOUT:-300}" $B/ledger e2e -m /tmp/llama3.2-1b.gguf --pp 0 --tg 256 --runs "${RUNS:-6}" --no-roofline \
		--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
		--json "$OUT/e2e-1b-decode.json" --store "$STORE" --note "$NOTE; DAMASCUS_KERNELS=$DAMASCUS_KERNELS" > "$OUT/e2e-1b-decode.txt" 2>&1
	grep -aE "decode tok|recorded" "$OUT/e2e-1b-decode.txt" | tail -2
	;;
sweep)
	# The matmul variants head to head at the 3B shapes under the kernel
	# protocol (10 runs), the evidence `ledger promote` needs; SWEEP_OPS
	# names other ops (e.g. matmul/q5_k with SWEEP_VARIANTS=amx-int8-il,
	# avx512-vnni-sub; matmul/q8_0,matmul/q4_0 with avx512-vnni-gemm,
	# matvec-loop).
	log sweep
	timeout "${SWEEP_TIMEOUT:-540}" $B/ledger run --op "${SWEEP_OPS:-matmul/q4_k,matmul/q6_k}" --variant "${SWEEP_VARIANTS:-amx-int8,amx-int8-lag,amx-int8-kb4,amx-int8-kb4-lag,avx512-vnni-tiles}" \
		--shapes 3B --runs "${SWEEP_RUNS:-10}" --store "$STORE" --note "$NOTE" > "$OUT/sweep.txt" 2>&1
	grep -E "^\| matmul.*\(3B|recorded|roofline|peak" "$OUT/sweep.txt"
	;;
batch)
	# Prefill batch size (n_batch: tokens per step, so the activation pack
	# one step's tile products stream) as a variant: pp1024 on the 3B at
	# each size, 2 threads, alternating sizes round by round.
	models llama3.2-3b
	export DAMASCUS_KERNELS=${DAMASCUS_KERNELS:-matmul/q4_k=amx-int8,matmul/q6_k=amx-int8,attention_batch=avx512}
	for r in 1 2 3; do
		for b in ${BATCHES:-512 256 128 64}; do
			printf "round %d n_batch %4d: " $r $b
			$B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 1024 -r 1 -t 2 -b $b -warmup-prompt 64 2>/dev/null | tr -d ' \n' | grep -o '"tokens_per_sec":\[[0-9.]*' | cut -d[ -f2
		done
	done 2>&1 | tee "$OUT/batch.txt"
	;;
kernels)
	# Gate, then time, the prefill matmul variants where AMX exists.
	log gate; timeout 120 $B/ledger gate --op matmul/q4_k,matmul/q6_k --shapes 3B --store "$STORE" > "$OUT/gate.txt" 2>&1; tail -5 "$OUT/gate.txt"
	log run; timeout 300 $B/ledger run --op matmul/q4_k,matmul/q6_k --shapes 3B --runs 10 --store "$STORE" --note "$NOTE" > "$OUT/run.txt" 2>&1; tail -40 "$OUT/run.txt"
	;;
scaling)
	# Prefill scaling 1→16 threads, Damascus beside llama.cpp, the promoted
	# kernels (DAMASCUS_KERNELS, when set, overrides them).
	models llama3.2-3b
	for t in ${THREADS_LIST:-1 2 4 8 16}; do
		log "scaling t=$t"
		timeout 150 $B/ledger e2e -m /tmp/llama3.2-3b.gguf --pp 256 --tg 0 --runs 3 --threads $t \
			--cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
			--json "$OUT/scaling-t$t.json" --store "$STORE" --note "$NOTE; scaling run" > "$OUT/scaling-t$t.txt" 2>&1
		grep -E "prefill" "$OUT/scaling-t$t.txt"
	done
	;;
cuda)
	# Issue 18, part 1, on the lent H200 (kind nvidia-h200): the CUDA family.
	# carry [".device"]; `make device-bins` builds cuda.test and cudadrv.test.
	# The driver's and NVRTC's tests, the cuda package's tests (the shared
	# kernel tests of every family, exact quantizer bytes, kernel resources),
	# the ledger's gate of every cuda variant against the float64 reference
	# (recorded), the device-resident benchmarks at the 3B shapes (weights
	# uploaded once, launches replayed from a CUDA graph, timed with events),
	# then each kernel file's registers and the matvecs' SASS.
	NOTE="lent device machine (one NVIDIA H200)"
	log nvidia-smi; nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1; head -20 "$OUT/nvidia-smi.txt"
	if [ -z "${DAMASCUS_NVRTC:-}" ] && ! ls /usr/local/cuda/lib64/libnvrtc.so* >/dev/null 2>&1; then
		DAMASCUS_NVRTC=$(find / -xdev -name 'libnvrtc.so*' 2>/dev/null | grep -v builtins | sort | tail -1)
		export DAMASCUS_NVRTC
	fi
	log "nvrtc: ${DAMASCUS_NVRTC:-searched by internal/cuda}"
	export DAMASCUS_CUDA_DUMP=/tmp/cuda-dump
	T="$OUT/tests.txt"
	log "internal/cuda tests"; timeout 60 $B/cudadrv.test -test.v -test.count=1 > "$T" 2>&1; grep -aE "^(--- |ok|FAIL|PASS)|device:|NVRTC" "$T"
	log "variants/cuda tests"; timeout 180 $B/cuda.test -test.v -test.count=1 -test.skip TestGate >> "$T" 2>&1
	grep -aE "^(--- |ok|FAIL|PASS)|compiled for|registers" "$T" | grep -av "^    --- PASS" | tail -40
	log "ledger gate --family cuda"
	timeout "${GATE_TIMEOUT:-200}" $B/ledger gate --family cuda --shapes "${GATE_SHAPES:-all}" -v --store "$STORE" > "$OUT/gate.txt" 2>&1
	grep -av "^pass" "$OUT/gate.txt" | tail -8
	log "device-resident benchmarks (${DAMASCUS_BENCH_SHAPES:=3B})"; export DAMASCUS_BENCH_SHAPES
	timeout "${BENCH_TIMEOUT:-240}" $B/cuda.test -test.run '^$' -test.bench "${BENCH:-.}" -test.benchtime "${BENCHTIME:-200ms}" > "$OUT/bench.txt" 2>&1
	grep -aE "^Benchmark|FAIL|panic" "$OUT/bench.txt" | sed -E 's/[[:space:]]+/ /g' | cut -c1-150
	if command -v cuobjdump >/dev/null; then
		for f in /tmp/cuda-dump/*.cubin; do echo "== $f"; cuobjdump --dump-resource-usage "$f"; done > "$OUT/sass.txt" 2>&1
		cuobjdump --dump-sass /tmp/cuda-dump/matvec.cubin >> "$OUT/sass.txt" 2>&1
		grep -aE "Function|REG" "$OUT/sass.txt" | head -40
	fi
	;;
gpu)
	# Issue 18, part 2, on the lent H200: the GPU engine beside llama.cpp
	# CUDA. `make device-gpu` packs .device/gpu.tar.xz (binaries, test data,
	# the pinned llama.cpp's source); carry [".device/gpu.tar.xz"].
	#  1. llama.cpp's llama-bench built for sm_90a from the pinned source, in
	#     the background (about 4.5 minutes on 16 cores);
	#  2. the agreement test: the GPU engine's logits against the CPU
	#     engine's (llama.test -test.run TestCUDA);
	#     (MMA_AB=1: again with the 8-token prefill (DAMASCUS_CUDA_MMA=0), then its speed; PDL_AB=1:
	#     the speed without programmatic dependent launch; PROFILE=1: ncu per
	#     kernel over two 3B decode steps; GATE=1: ledger gate --family cuda)
	#  3. the synthetic 3B and 1B Q4_K_M, one look at the GPU engine alone
	#     (`ledger damascus-bench -device cuda`, kept in $OUT/gpu-rounds.jsonl
	#     with the optional A/B runs, summarized by the python below), then
	#     per model the protocol of record as one `ledger e2e --device cuda
	#     --llama-bench`: RUNS (10) interleaved rounds, each a fresh
	#     `ledger damascus-bench -device cuda` and a fresh llama-bench -ngl 99
	#     -o jsonl, pp$PP and tg$TG, medians and p95; records (with the GPU,
	#     driver, CUDA version and llama-bench's build) appended to
	#     $OUT/ledger.jsonl, the comparison in $OUT/e2e-gpu-MODEL.json and .txt.
	#     Then `ledger import $OUT/ledger.jsonl && ledger report`.
	NOTE="lent device machine (one NVIDIA H200)"
	mkdir -p .device/gpu && tar -C .device/gpu -xJf .device/gpu.tar.xz
	B=.device/gpu/bin
	export DAMASCUS_TESTDATA=$PWD/.device/gpu/testdata
	log nvidia-smi; nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1; head -12 "$OUT/nvidia-smi.txt"
	[ -n "${SKIP_LLAMA:-}" ] || (
		mkdir -p /tmp/llcu && tar -C /tmp/llcu -xJf .device/gpu/llama-src.tar.xz && cd /tmp/llcu &&
			cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DGGML_NATIVE=ON \
				-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
				-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF && cmake --build b --target llama-bench -j "${BUILD_JOBS:-14}"
	) > "$OUT/llama-build.txt" 2>&1 &
	build=$!
	MODELS=${MODELS:-llama3.2-3b llama3.2-1b}
	log synth; models $MODELS
	log "agreement (GPU against CPU)"
	timeout "${AGREE_TIMEOUT:-240}" $B/llama.test -test.v -test.count=1 -test.run 'TestCUDA|TestDeviceOption' > "$OUT/agree.txt" 2>&1
	grep -aE "^(=== RUN|--- |ok|FAIL|PASS|panic)|cuda_test|GPU against" "$OUT/agree.txt" | head -30
	if [ -n "${AGREE_ONLY:-}" ]; then exit 0; fi
	R="$OUT/gpu-rounds.jsonl"
	dmb() { # dmb MODEL ROUND [LABEL]: one damascus-bench run on the GPU, one line into $R
		timeout 300 $B/ledger damascus-bench -m "/tmp/$1.gguf" -p "${PP:-1024}" -n "${TG:-256}" -r "${REPS:-2}" -device cuda -weights mmap \
			> /tmp/dmb.json 2> /tmp/dmb.err || { echo "damascus-bench $1 failed:"; tail -5 /tmp/dmb.err; return; }
		python3 -c 'import json,sys; print(json.dumps({"engine": sys.argv[3], "model": sys.argv[1], "round": int(sys.argv[2]), "result": json.load(open("/tmp/dmb.json"))}))' "$1" "$2" "${3:-damascus-cuda}" >> "$R"
	}
	summary() { # the medians so far, per engine, model and test
		python3 - "$R" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line); res = r["result"]
    if r["engine"].startswith("damascus"):
        for t in res["tests"]:
            rows.setdefault((r["model"], t["name"], r["engine"]), []).extend(t["tokens_per_sec"])
    else:
        name = ("pp%d" % res["n_prompt"]) if res["n_gen"] == 0 else ("tg%d" % res["n_gen"])
        rows.setdefault((r["model"], name, r["engine"]), []).extend(res["samples_ts"])
for k in sorted(rows):
    v = sorted(rows[k])  # p95 of the time a run takes: the 5th percentile of its rate
    print("%-12s %-7s %-15s n=%2d median %9.1f tok/s  p95 %9.1f" % (k[0], k[1], k[2], len(v), statistics.median(v), v[int(0.05 * (len(v) - 1))]))
PY
	}
	log "first GPU run (warm-up and a look)"
	for m in $MODELS; do dmb "$m" 0; done
	summary
	if [ -n "${MMA_AB:-}" ]; then # prefill on the 8-token matmuls instead of the tensor cores (DAMASCUS_CUDA_MMA=0): agreement, then speed
		log "agreement with DAMASCUS_CUDA_MMA=0"
		DAMASCUS_CUDA_MMA=0 timeout 240 $B/llama.test -test.v -test.count=1 -test.run 'TestCUDAAgrees' > "$OUT/agree-mm8.txt" 2>&1
		grep -aE "^(--- |ok|FAIL|PASS|panic)|GPU against" "$OUT/agree-mm8.txt" | head -20
		for m in $MODELS; do DAMASCUS_CUDA_MMA=0 dmb "$m" 0 damascus-cuda-mm8; done
		summary
	fi
	if [ -n "${PDL_AB:-}" ]; then # the same without programmatic dependent launch
		for m in $MODELS; do DAMASCUS_CUDA_PDL=0 dmb "$m" 0 damascus-cuda-nopdl; dmb "$m" 0; done
		summary
	fi
	if [ -n "${PROFILE:-}" ]; then # each kernel of a few 3B decode steps, timed alone by Nsight Compute
		NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
		log "ncu: $NCU"
		timeout 240 "$NCU" --csv --metrics gpu__time_duration.sum --launch-skip "${NCU_SKIP:-1200}" --launch-count "${NCU_COUNT:-622}" \
			$B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 16 -n 8 -r 1 -device cuda -weights mmap > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
		tail -3 "$OUT/ncu.err"
		python3 - "$OUT/ncu.csv" <<'PY'
import csv, sys, collections
tot = collections.defaultdict(float); cnt = collections.Counter()
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; k = hdr.index("Kernel Name"); v = hdr.index("Metric Value"); u = hdr.index("Metric Unit")
for r in rows[1:]:
    x = float(r[v].replace(",", "")); x *= {"nsecond": 1, "usecond": 1e3, "msecond": 1e6}.get(r[u], 1)
    tot[r[k].split("(")[0]] += x; cnt[r[k].split("(")[0]] += 1
all_ = sum(tot.values())
for n in sorted(tot, key=lambda n: -tot[n]):
    print("%-22s %5d launches %10.1f us  %5.1f%%  %7.2f us each" % (n, cnt[n], tot[n] / 1e3, 100 * tot[n] / all_, tot[n] / cnt[n] / 1e3))
print("total %.1f us over %d launches" % (all_ / 1e3, sum(cnt.values())))
PY
	fi
	if [ -n "${GATE:-}" ]; then
		log "ledger gate --family cuda"
		timeout "${GATE_TIMEOUT:-150}" $B/ledger gate --family cuda -v --store "$STORE" > "$OUT/gate.txt" 2>&1
		grep -av "^pass" "$OUT/gate.txt" | tail -8
	fi
	if [ -n "${SKIP_LLAMA:-}" ]; then summary > "$OUT/gpu-summary.txt"; exit 0; fi
	log "waiting for the llama.cpp CUDA build"; wait $build; tail -3 "$OUT/llama-build.txt"
	# Agreement with llama.cpp CUDA (issue 18, item 6): logitsdump built with cc
	# against the CUDA build's libraries (/tmp/llcu/b/bin) and the source's
	# include/ and ggml/include/, then the GPU engine's logits held to it
	# (TestCUDAAgreesWithLlamaCpp; AGREE_LLAMA_RUN picks other tests, e.g.
	# 'TestCUDAAgreesWithLlamaCpp|TestCPUAgreesWithLogitsDump'); out in
	# $OUT/agree-llama.txt. SKIP_AGREE_LLAMA=1 leaves it out.
	if [ -z "${SKIP_AGREE_LLAMA:-}" ]; then
		log "agreement with llama.cpp CUDA (logitsdump)"
		if LLAMACPP_REV="5b4ebc5 (node-llama-cpp@3.21.1 gitRelease.bundle), CUDA build in /tmp/llcu/b" \
			harness/llamacpp/logitsdump/build.sh /tmp/llcu /tmp/llcu/b/bin /tmp/logitsdump > "$OUT/agree-llama.txt" 2>&1; then
			DAMASCUS_LOGITSDUMP=/tmp/logitsdump timeout "${AGREE_LLAMA_TIMEOUT:-300}" $B/llama.test -test.v -test.count=1 \
				-test.run "${AGREE_LLAMA_RUN:-TestCUDAAgreesWithLlamaCpp}" >> "$OUT/agree-llama.txt" 2>&1
		fi
		grep -aE "^(=== RUN|--- |ok|FAIL|PASS|panic)|built|error|all: |scale:|context:|NOT met|excused|against Damascus|llama.cpp: " "$OUT/agree-llama.txt" | cut -c1-220 | head -60
	fi
	LLAMA_BENCH=${LLAMA_BENCH:-/tmp/llcu/b/bin/llama-bench}
	summary > "$OUT/gpu-summary.txt" # the look and the A/B runs, Damascus alone
	for m in $MODELS; do
		log "e2e $m on the GPU: ${RUNS:-10} interleaved rounds beside $LLAMA_BENCH"
		timeout "${E2E_TIMEOUT:-300}" $B/ledger e2e -m "/tmp/$m.gguf" --device cuda --llama-bench "$LLAMA_BENCH" \
			--llama-source "built on this machine from node-llama-cpp@3.21.1's llama/gitRelease.bundle (5b4ebc5), cmake -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DGGML_NATIVE=ON, target llama-bench" \
			--pp "${PP:-1024}" --tg "${TG:-256}" --runs "${RUNS:-10}" --weights mmap --sustained "${SUSTAINED:-0}" --cold-runs "${COLD_RUNS:-0}" \
			--nominal-gbps "${HBM_GBPS:-4800}" --json "$OUT/e2e-gpu-$m.json" --store "$STORE" --note "$NOTE" \
			> "$OUT/e2e-gpu-$m.txt" 2>&1 || echo "ledger e2e $m failed (exit $?):"
		grep -aE "decode tok|prefill tok|peak RSS|cold start|recorded|rror" "$OUT/e2e-gpu-$m.txt" | tail -8
	done
	# llama-bench and its libraries, for a later call to skip the build
	if [ -n "${KEEP_LLAMA:-}" ]; then
		tar -C /tmp/llcu/b/bin -cf - . | xz -T0 -6 > "$OUT/llama-cuda-bin.tar.xz"; ls -l "$OUT/llama-cuda-bin.tar.xz"
	fi
	;;
gpu-ab)
	# Issue 18 on the lent H200: A/B of the GPU engine's opt-in kernels,
	# correctness first. `make device-gpu`; carry [".device/gpu.tar.xz"]. At
	# most 8 files come back from a call, so everything is packed into
	# $OUT/gpu-ab.tgz. Steps: llama.cpp CUDA built in the background (cores
	# 2-15); the kernel tests (TestFold*, TestRope*), the engine's decode
	# variants (TestCUDADecodeVariants) and, unless SKIP_AGREE=1, the GPU
	# against the CPU (TestCUDAAgreesWithCPU); then ROUNDS (4) rounds of
	# `ledger damascus-bench -device cuda` on the 3B for each of ARMS, the
	# order rotated each round, and one round at depth 4096; then, unless
	# SKIP_E2E=1, `ledger e2e --device cuda` (10 rounds beside llama.cpp)
	# for each of E2E_ARMS (default: the first arm). An arm is a name below,
	# or names joined by + (their environments together). ETESTS replaces the
	# engine tests' pattern, KTESTS the
	# kernel tests' -test.run pattern (KTIMEOUT seconds, 80); BENCH (a -test.bench pattern) runs the
	# device-resident kernel benchmarks first; SKIP_DEPTH=1 leaves out the
	# depth-4096 round; ABL lists ablation arms (skip-KERNEL, timing only)
	# run once each after the A/B; AMX_TESTS=1 runs variants/amx's and
	# harness/roofline's tests on the host's Intel AMX cores. SKIP_E2E=1
	# leaves out the llama.cpp build as well as the records.
	NOTE="lent device machine (one NVIDIA H200)"
	R=/tmp/gpu-ab; mkdir -p $R; trap 'tar -C /tmp -czf "$OUT/gpu-ab.tgz" gpu-ab' EXIT
	mkdir -p .device/gpu && tar -C .device/gpu -xJf .device/gpu.tar.xz
	B=$PWD/.device/gpu/bin; export DAMASCUS_TESTDATA=$PWD/.device/gpu/testdata
	ARMS=${ARMS:-fold ropefold longu4 serial}
	arm_env() { # the environment of arm $1; arms joined by + add up
		local a
		if [[ $1 == *+* ]]; then for a in ${1//+/ }; do arm_env "$a"; done; return; fi
		case $1 in
		fold) echo "DAMASCUS_CUDA_DATTN=fold" ;;  # the default since session 13
		serial) echo "DAMASCUS_CUDA_DATTN=serial" ;;
		ropefold) echo "DAMASCUS_CUDA_ROPEFOLD=1" ;;
		longu2) echo "DAMASCUS_CUDA_LONGU=2" ;;
		longu4) echo "DAMASCUS_CUDA_LONGU=4" ;;
		ropefold-longu4) echo "DAMASCUS_CUDA_ROPEFOLD=1 DAMASCUS_CUDA_LONGU=4" ;;
		warp) echo "DAMASCUS_CUDA_MV=warp" ;;
		xs | xs1 | xs4 | pro | pro2) echo "DAMASCUS_CUDA_MV=$1" ;;
		early0) echo "DAMASCUS_CUDA_DEFINES=MVP_EARLY=0" ;;
		early | early2) echo "DAMASCUS_CUDA_MV=$1" ;;
		prefetch) echo "DAMASCUS_CUDA_DEFINES=PREFETCH" ;;
		skip-*) echo "DAMASCUS_CUDA_SKIP=${1#skip-}" ;; # ablation: timing only
		pdl0) echo "DAMASCUS_CUDA_PDL=0" ;;
		persistent | mega) echo "DAMASCUS_CUDA_DECODE=$1" ;; # one kernel over the layers (mega: weights through a shared-memory ring)
		mega-ring*) echo "DAMASCUS_CUDA_DECODE=mega,ring=${1#mega-ring}" ;;
		persistent-blocks*) echo "DAMASCUS_CUDA_DECODE=persistent,blocks=${1#persistent-blocks}" ;; # the grid (default one block an SM)
		minb*) echo "DAMASCUS_CUDA_DEFINES=PMINB=${1#minb},PKU=1" ;; # persistent.cu's register budget: blocks an SM (spills below 254 registers)
		*) echo "unknown arm $1" >&2; exit 2 ;;
		esac
	}
	[ -n "${SKIP_E2E:-}" ] || ( # NB: SKIP_E2E=1 also leaves the llama.cpp build out (the host's cores stay quiet)
		mkdir -p /tmp/llcu && tar -C /tmp/llcu -xJf .device/gpu/llama-src.tar.xz && cd /tmp/llcu &&
			taskset -c 2-15 cmake -S . -B b -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DGGML_NATIVE=ON \
				-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
				-DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF && taskset -c 2-15 cmake --build b --target llama-bench -j 14
	) > $R/llama-build.txt 2>&1 &
	build=$!
	models llama3.2-3b llama3.2-1b
	log "kernel tests"
	(cd variants/cuda && timeout $((${KTIMEOUT:-80} + 10)) taskset -c 0-1 $B/cuda.test -test.v -test.count=1 -test.timeout ${KTIMEOUT:-80}s -test.run "${KTESTS:-TestFold|TestRope|TestAttention\$}" > $R/kernel-tests.txt 2>&1)
	grep -aE '^(--- |ok|FAIL|PASS|panic)' $R/kernel-tests.txt | grep -v '    --- PASS'
	log "engine tests"
	(cd model/llama && timeout 300 taskset -c 0-1 $B/llama.test -test.v -test.count=1 -test.timeout 290s \
		-test.run "${ETESTS:-TestCUDADecodeVariants$([ -n "${SKIP_AGREE:-}" ] || echo '|TestCUDAAgreesWithCPU$')}" > $R/engine-tests.txt 2>&1)
	grep -aE '^(=== RUN|--- |ok|FAIL|PASS|panic)|bit-identical|cosine' $R/engine-tests.txt | head -40
	if [ -n "${BENCH:-}" ]; then # device-resident kernel benchmarks (GB/s), e.g. BENCH='BenchmarkMatVec/type=Q[46]_K'
		log "kernel benchmarks $BENCH"
		(cd variants/cuda && timeout 240 taskset -c 0-1 $B/cuda.test -test.run '^$' -test.bench "$BENCH" -test.benchtime "${BENCHTIME:-300x}" > $R/bench.txt 2>&1)
		grep -aE '^Benchmark|FAIL|panic' $R/bench.txt | awk '{printf "%-80s", $1; for (i = 2; i <= NF; i++) if ($(i) ~ /GB\/s|ns\/kernel/) printf " %s %s", $(i-1), $(i); print ""}'
	fi
	if [ -n "${AMX_TESTS:-}" ]; then # the host's AMX: variants/amx and harness/roofline's tests
		log "AMX tests (host CPU)"
		for p in variants/amx:amx harness/roofline:roofline; do
			(cd ${p%%:*} && timeout 200 taskset -c 0-1 $B/${p##*:}.test -test.count=1 -test.timeout 190s > $R/${p##*:}-tests.txt 2>&1; echo "${p##*:}.test: exit $?")
		done
	fi
	ab() { # ab ARM ARGS...: one damascus-bench run on the GPU, its medians on one line
		local arm=$1; shift
		env $(arm_env $arm) timeout 60 taskset -c 0-1 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -device cuda -weights mmap "$@" \
			> /tmp/ab.json 2> /tmp/ab.err || { echo "$arm failed: $(tail -2 /tmp/ab.err)"; return; }
		cp /tmp/ab.json "$R/ab-$arm-$(date +%s%N).json"
		python3 -c 'import json,sys,statistics as s; r=json.load(open("/tmp/ab.json")); print("%-16s %s" % (sys.argv[1], "  ".join("%s %.1f" % (t["name"], s.median(t["tokens_per_sec"])) for t in r["tests"])))' "$arm"
	}
	log "A/B 3B tg256: $ARMS"
	set -- $ARMS
	for r in $(seq "${ROUNDS:-4}"); do
		for i in $(seq 0 $(($# - 1))); do a=("$@"); ab "${a[$(( (i + r) % $# ))]}" -p 16 -n 256 -r 2; done
	done | tee $R/ab-3b.txt
	if [ -z "${SKIP_DEPTH:-}" ]; then
		log "A/B 3B tg128 at depth 4096"
		for a in $ARMS; do ab $a -p 16 -n 128 -d 4096 -r 2; done | tee $R/ab-3b-d4096.txt
	fi
	if [ -n "${ABL:-}" ]; then # one round of each ablation arm (timing only)
		log "ablation 3B tg256: $ABL"
		for a in $ABL; do ab $a -p 16 -n 256 -r 2; done | tee $R/ablation-3b.txt
	fi
	[ -n "${SKIP_E2E:-}" ] && exit 0
	log "waiting for the llama.cpp build"; wait $build; tail -1 $R/llama-build.txt
	for a in ${E2E_ARMS:-${ARMS%% *}}; do
		for m in ${E2E_MODELS:-llama3.2-3b}; do
			log "e2e $m, arm $a"
			env $(arm_env $a) timeout 150 $B/ledger e2e -m /tmp/$m.gguf --device cuda --llama-bench /tmp/llcu/b/bin/llama-bench \
				--llama-source "built on this machine from node-llama-cpp@3.21.1's llama/gitRelease.bundle (5b4ebc5), cmake -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DGGML_NATIVE=ON, target llama-bench" \
				--pp 1024 --tg 256 --runs 10 --threads 16 --weights mmap --sustained 0 --cold-runs 0 --nominal-gbps 4800 \
				--json $R/e2e-$m-$a.json --store $R/ledger.jsonl --note "$NOTE; arm $a ($(arm_env $a))" > $R/e2e-$m-$a.txt 2>&1
			grep -aE 'decode tok|prefill tok|recorded' $R/e2e-$m-$a.txt | cut -c1-200
			cp $R/ledger.jsonl "$OUT/" 2>/dev/null # the records back even if the call is cut short
		done
	done
	;;
cpu-decode)
	# Issue 20 on the host's Intel AMX cores at 2 threads, nothing else
	# running: the matvec variants at the 3B shapes with each matvec's rows
	# split over two pooled workers as a decode step splits them (ledger run
	# --threads 2, SWEEP_RUNS runs, recorded, for `ledger promote --cpu-only`),
	# then tg TG (128) beside llama.cpp (sapphirerapids on huge pages) for
	# each of MODELS with the sweep's fastest Q4_K and Q6_K matvecs forced
	# (DAMASCUS_KERNELS; KERNELS=promoted runs the shipped preferences), RUNS
	# (10) rounds, the roofline probe in the same run. B may point at the
	# gpu archive's binaries (B=.device/gpu/bin).
	NOTE="lent device machine (Intel Xeon with AMX, 16 cores; the H200 idle)"
	log "matvec sweep at 2 threads, 3B shapes"
	timeout "${SWEEP_TIMEOUT:-200}" $B/ledger run --op matvec/q4_k,matvec/q6_k \
		--variant "${SWEEP_VARIANTS:-avx512-vnni,avx512-vnni-pf4k,avx512-vnni-pf8k,avx512-vnni-pf4k-2s,avx512-vnni-pf8k-2s,avx512-vnni-pf4k-4s,avx512-vnni-pf8k-4s}" \
		--shapes 3B --threads 2 --runs "${SWEEP_RUNS:-10}" --store "$STORE" \
		--note "$NOTE; the matvecs at 2 threads on Intel (issue 20)" > "$OUT/sweep-matvec-2t.txt" 2>&1
	grep -aE "^\| matvec.*\(3B|recorded|probe|GB/s" "$OUT/sweep-matvec-2t.txt" | head -40
	if [ "${KERNELS:-}" = promoted ]; then
		unset DAMASCUS_KERNELS; kn="promoted kernels, no override"
	else
		q4=$(fastest "$OUT/sweep-matvec-2t.txt" matvec/q4_k 3B); q6=$(fastest "$OUT/sweep-matvec-2t.txt" matvec/q6_k 3B)
		export DAMASCUS_KERNELS=matvec/q4_k=${q4:-avx512-vnni},matvec/q6_k=${q6:-avx512}
		kn="DAMASCUS_KERNELS=$DAMASCUS_KERNELS (the 2-thread sweep's fastest)"
	fi
	for m in ${MODELS:-llama3.2-1b llama3.2-3b}; do
		models $m
		log "e2e $m tg${TG:-128} at 2 threads: $kn"
		timeout "${E2E_TIMEOUT:-300}" $B/ledger e2e -m /tmp/$m.gguf --pp 0 --tg "${TG:-128}" --runs "${RUNS:-10}" \
			--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
			--json "$OUT/e2e-$m-decode-2t.json" --store "$STORE" --note "$NOTE; issue 20: decode at 2 threads; $kn" \
			> "$OUT/e2e-$m-decode-2t.txt" 2>&1
		grep -aE "decode tok|GB/s|probe|recorded" "$OUT/e2e-$m-decode-2t.txt" | tail -6
	done
	;;
cpu-depth)
	# Issue 20's depth legs on the host's Intel AMX cores at 2 threads:
	# tg TG (64) at DEPTH (4096) beside llama.cpp (sapphirerapids on huge
	# pages), both on f16 caches, ROUNDS (3) rounds of REPS (3) repetitions
	# each (ledger e2e --reps: one depth fill a process), promoted kernels,
	# for each of MODELS (llama3.2-1b). A 1B round at 4096 takes ≈ 85 s
	# here (session 17), so 3 rounds want E2E_TIMEOUT ≥ 300. DEPTH_THREADS
	# (e.g. 14) fills the depth on that many cores, untimed (--depth-threads):
	# the bar's 10 rounds then fit a call. SNAPSHOT=1 fills it once per
	# engine and reads it back in the later rounds (--depth-snapshot; the
	# snapshots, ≈ 1.8 GiB each for a 3B f16 cache at 16384, in /tmp):
	#   SNAPSHOT=1 DEPTH_THREADS=14 ROUNDS=10 REPS=1 DEPTH=16384 MODELS=llama3.2-3b E2E_TIMEOUT=560
	NOTE="lent device machine (Intel Xeon with AMX, 16 cores; the H200 idle)"
	dt=(); [ -n "${DEPTH_THREADS:-}" ] && dt=(--depth-threads "$DEPTH_THREADS")
	[ -n "${SNAPSHOT:-}" ] && dt+=(--depth-snapshot)
	for m in ${MODELS:-llama3.2-1b}; do
		models $m
		log "e2e $m tg${TG:-64} at depth ${DEPTH:-4096}, 2 threads (fill on ${DEPTH_THREADS:-2}), f16 caches, ${ROUNDS:-3} rounds x ${REPS:-3} reps"
		timeout "${E2E_TIMEOUT:-300}" $B/ledger e2e -m /tmp/$m.gguf --pp 0 --tg "${TG:-64}" --depth "${DEPTH:-4096}" "${dt[@]}" --runs "${ROUNDS:-3}" --reps "${REPS:-3}" \
			--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 --kv-type f16 \
			--json "$OUT/e2e-$m-d${DEPTH:-4096}.json" --store "$STORE" --note "$NOTE; issue 20: decode at depth ${DEPTH:-4096}, both engines on f16 caches, promoted kernels${DEPTH_THREADS:+, the depth filled on $DEPTH_THREADS threads}${SNAPSHOT:+, once per engine, later rounds reading its snapshot}" \
			> "$OUT/e2e-$m-d${DEPTH:-4096}.txt" 2>&1
		grep -aE "decode tok|recorded|^sample" "$OUT/e2e-$m-d${DEPTH:-4096}.txt" | cut -c1-200
	done
	;;
r16)
	# Issue 20 on the host's Intel AMX cores: does the interleaved layout
	# (variants/avx512's q4kr16.go, ~6.6 instructions a line; the matvec
	# variants avx512-vnni-r16[-pf4k|-pf8k] over a weight layout built at
	# load) read what plain loads read where the shipped kernels read
	# ~70 %? First BenchmarkReadMix in MIX_PROCS (10) interleaved processes
	# over MIX_MB (512) MiB of huge pages, then the matvecs at the 3B shapes
	# on 2 threads (MV_RUNS runs, 0: skip): the shipped pf4k/pf8k beside the
	# r16 ones, then the 3B tg TG (128) beside llama.cpp (sapphirerapids on
	# huge pages), RUNS (5) rounds, the probe in the same run (AB_ROUNDS > 0
	# first puts the engine's decode arms side by side, PP_ROUNDS > 0 its
	# short prefills, below), with
	# matvec/q4_k and matvec/q6_k forced to avx512-vnni-r16$R16 (-pf8k) and
	# the promoted kernels otherwise. The layout sits beside the file's
	# (prefill reads that), so Damascus's peak RSS grows by those weights.
	NOTE="lent device machine (Intel Xeon with AMX, 16 cores; the H200 idle)"
	log "BenchmarkReadMix, ${MIX_PROCS:-10} interleaved processes"
	for i in $(seq "${MIX_PROCS:-10}"); do
		( cd harness/roofline && DAMASCUS_MIX_MB=${MIX_MB:-512} timeout 120 "$OLDPWD/$B/roofline.test" -test.run '^$' -test.bench ReadMix -test.benchtime 3x ) >> "$OUT/readmix.txt" 2>&1
	done
	grep -c GB/s "$OUT/readmix.txt"
	if [ "${MV_RUNS:-0}" -gt 0 ]; then
		log "matvecs at the 3B shapes, 2 threads, $MV_RUNS runs"
		timeout 240 $B/ledger run --op matvec/q4_k,matvec/q6_k --variant avx512-vnni-pf4k,avx512-vnni-pf8k,avx512-vnni-r16,avx512-vnni-r16-pf4k,avx512-vnni-r16-pf8k \
			--shapes 3B --runs "$MV_RUNS" --threads 2 --store "$STORE" --note "$NOTE; issue 20: the interleaved layout's matvecs beside the shipped prefetch ones, 2 threads" \
			> "$OUT/matvec-r16-3b-2t.txt" 2>&1
		grep -aE "^\| matvec" "$OUT/matvec-r16-3b-2t.txt" | cut -c1-140
	fi
	models llama3.2-3b
	if [ "${AB_ROUNDS:-0}" -gt 0 ]; then
		# The engine's arms side by side on this one host: each round runs
		# `ledger damascus-bench -n 64 -r 1 -t 2` (weights on huge pages)
		# once per arm, the order rotated: the promoted matvecs, then the
		# r16 ones without prefetch, pf4k and pf8k (both types forced).
		log "A/B of the decode matvecs, 3B tg64, 2 threads, $AB_ROUNDS rounds"
		arms=(promoted "" -pf4k -pf8k)
		for r in $(seq "$AB_ROUNDS"); do
			for i in 0 1 2 3; do
				a=${arms[$(( (i + r) % 4 ))]}
				k="" label=$a
				[ "$a" != promoted ] && k="matvec/q4_k=avx512-vnni-r16$a,matvec/q6_k=avx512-vnni-r16$a" label="r16$a"
				ab_bench "$r" "$label" "$k" "$OUT/ab-r16-3b-2t.txt" -n 64
			done
		done
		ab_medians "$OUT/ab-r16-3b-2t.txt"
	fi
	if [ "${PP_ROUNDS:-0}" -gt 0 ]; then
		# Short prompts (issue 19): pp16, pp32, pp64 through the shipped
		# kernels and with Q4_K's batched decode product on the interleaved
		# layout (avx512-vnni-r16-m4, the r16 matvecs beside it), each
		# round both arms in turn.
		log "A/B of short prefills, 3B pp16,32,64, 2 threads, $PP_ROUNDS rounds"
		for r in $(seq "$PP_ROUNDS"); do
			for arm in promoted r16m4; do
				k=""; [ $arm = r16m4 ] && k="matvec/q4_k=avx512-vnni-r16-pf8k,matvec/q6_k=avx512-vnni-r16-pf8k,matvec_batch/q4_k=avx512-vnni-r16-m4"
				ab_bench "$r" "$arm" "$k" "$OUT/ab-pp-3b-2t.txt" -p 16,32,64
			done
		done
		ab_medians "$OUT/ab-pp-3b-2t.txt"
	fi
	kern="matvec/q4_k=avx512-vnni-r16${R16--pf8k},matvec/q6_k=avx512-vnni-r16${R16--pf8k}"
	log "e2e llama3.2-3b tg${TG:-128}, DAMASCUS_KERNELS=$kern"
	DAMASCUS_KERNELS=$kern timeout "${E2E_TIMEOUT:-300}" $B/ledger e2e -m /tmp/llama3.2-3b.gguf --pp 0 --tg "${TG:-128}" --runs "${RUNS:-5}" \
		--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
		--json "$OUT/e2e-llama3.2-3b-r16.json" --store "$STORE" --note "$NOTE; issue 20: DAMASCUS_KERNELS=$kern (the interleaved layout built at load beside the file's, which raises Damascus's RSS), promoted kernels otherwise" \
		> "$OUT/e2e-llama3.2-3b-r16.txt" 2>&1
	grep -aE "decode tok|recorded" "$OUT/e2e-llama3.2-3b-r16.txt" | cut -c1-400
	;;
r16-one)
	# Issues 19 and 20 on the host's Intel AMX cores with one copy of the
	# Q4_K weights in the interleaved layout: the matvec (avx512-vnni-r16
	# with R16's suffix, -pf8k), the batched product (avx512-vnni-r16-m4) and
	# the AMX prefill (amx-int8-il-r16) forced, so Load places those
	# matrices in the layout alone (Q6_K as stored; ONE_Q6=1: Q6_K's too,
	# with amx-int8-il-g8-r16). First the gate of the
	# layout variants at the 3B shapes (the AMX one has never run), then
	# PP_ROUNDS (3) rounds of the 3B pp16/pp64/pp512 + tg64 side by side with
	# the promoted kernels, then the protocol's records beside llama.cpp
	# (peak RSS, and the probe for decode): 3B pp1024 and tg128 (RUNS, 5;
	# ONE_E2E lists them as PP:TG, "" for none: a call holds about one).
	NOTE="lent device machine (Intel Xeon with AMX, 16 cores; the H200 idle)"
	models llama3.2-3b
	kern="matvec/q4_k=avx512-vnni-r16${R16--pf8k},matvec_batch/q4_k=avx512-vnni-r16-m4,matmul/q4_k=amx-int8-il-r16"
	[ "${ONE_Q6:-}" = 1 ] && kern="$kern,matvec/q6_k=avx512-vnni-r16${R16--pf8k},matvec_batch/q6_k=avx512-vnni-r16-m4,matmul/q6_k=amx-int8-il-g8-r16"
	log "gate of the layout variants, 3B shapes"
	timeout 200 $B/ledger gate --op matvec/q4_k,matvec_batch/q4_k,matmul/q4_k,matvec/q6_k,matvec_batch/q6_k,matmul/q6_k --variant avx512-vnni-r16,avx512-vnni-r16-pf4k,avx512-vnni-r16-pf8k,avx512-vnni-r16-m4,amx-int8-il-r16,amx-int8-il-g8-r16,avx512-vnni-tiles-r16,avx512-vnni-sub-r16 \
		--shapes 3B --store "$STORE" > "$OUT/gate-r16.txt" 2>&1
	tail -3 "$OUT/gate-r16.txt"
	log "A/B promoted vs one copy in the layout, 3B pp16,64,512 tg64, ${PP_ROUNDS:-3} rounds"
	for r in $(seq "${PP_ROUNDS:-3}"); do
		for arm in promoted r16-one; do
			k=""; [ $arm = r16-one ] && k=$kern
			ab_bench "$r" "$arm" "$k" "$OUT/ab-one-3b-2t.txt" -p 16,64,512 -n 64
		done
	done
	ab_medians "$OUT/ab-one-3b-2t.txt"
	for t in ${ONE_E2E-1024:0 0:${TG:-128}}; do
		set -- ${t%:*} ${t#*:}
		log "e2e llama3.2-3b pp$1 tg$2, DAMASCUS_KERNELS=$kern"
		DAMASCUS_KERNELS=$kern timeout "${E2E_TIMEOUT:-240}" $B/ledger e2e -m /tmp/llama3.2-3b.gguf --pp "$1" --tg "$2" --runs "${RUNS:-5}" --warmup-prompt 64 \
			--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
			--json "$OUT/e2e-3b-one-pp$1-tg$2.json" --store "$STORE" --note "$NOTE; issues 19/20: DAMASCUS_KERNELS=$kern (one copy of the Q4_K weights, in the interleaved layout), promoted kernels otherwise" \
			> "$OUT/e2e-3b-one-pp$1-tg$2.txt" 2>&1
		grep -aE "prefill tok|decode tok|peak RSS|recorded" "$OUT/e2e-3b-one-pp$1-tg$2.txt" | cut -c1-300
	done
	;;
l2pf)
	# Issue 20 on the host's Intel cores: the decode matvecs prefetching
	# into L2 (PREFETCHT1, the L2 miss queue rather than the line fill
	# buffers the loads share): the memory probe's four sweeps (prefetch-l2-8k
	# among them) at 1 and 2 threads, then `ledger ab` of the Intel bundle
	# with matvec/q4_k -hmx-l2pfNk and matvec/q6_k -l2pfNk for each N of
	# L2PF (KiB, default "8 16"; session 25 promoted 16: "32" tries the next)
	# against the promoted kernels, 3B pp16 tg64, RUNS (10) rounds. ≈ 420 s.
	log "memory probe, every sweep"
	timeout 90 $B/ledger probe --threads 1,2 --compute-ms 50 2>&1 | grep -a mem-read
	k="matvec_batch/q4_k=avx512-vnni-r16-m4,matmul/q4_k=amx-int8-il-r16,matvec_batch/q6_k=avx512-vnni-r16-m4,matmul/q6_k=amx-int8-il-g8-r16"
	ARMS=""
	for d in ${L2PF:-8 16}; do
		ARMS="$ARMS l2pf${d}k=$k,matvec/q4_k=avx512-vnni-r16-hmx-l2pf${d}k,matvec/q6_k=avx512-vnni-r16-l2pf${d}k"
	done
	PPS=${PPS:-16} TG=${TG:-64} RUNS=${RUNS:-10} AB_TIMEOUT=${AB_TIMEOUT:-480}
	ab_phase
	;;
split-attn)
	# Issue 19 item 3 on the host's AMX cores: float32-class prefill
	# attention on AMX-BF16 tiles with every operand a bf16 pair
	# (amx-bf16-split). Its AMX tests (the tile programs against their
	# emulation, the driver through the float32 gate), the attention_batch
	# variants at the 3B shapes (5 runs), then `ledger ab` of the engine with
	# it against the promoted kernels, 3B pp1024, RUNS (8) rounds. The
	# llama.cpp agreement runs in the suite call (AGREE_KERNELS of
	# scripts/device-suite.sh). ≈ 450 s.
	log "AMX attention tests"
	timeout 120 $B/amx.test -test.run 'BF16Converters|AttentionTiles' -test.count 1 -test.v > "$OUT/amx-attn.txt" 2>&1
	echo "amx.test rc $?"; grep -aE "^(--- |ok|FAIL|PASS)|worst" "$OUT/amx-attn.txt" | grep -v "^=== RUN" | tail -8
	log "attention sweep"
	timeout 150 $B/ledger run --op attention_batch --variant avx512,amx-bf16,amx-bf16-split --shapes 3B --runs 5 \
		--store "$STORE" --note "$NOTE; issue 19 item 3" > "$OUT/sweep-attn.txt" 2>&1
	grep -aE "^\| attention_batch.*\(|recorded" "$OUT/sweep-attn.txt"
	ARMS="split=attention_batch=amx-bf16-split" PPS=${PPS:-1024} TG="" RUNS=${RUNS:-8} AB_TIMEOUT=${AB_TIMEOUT:-300}
	ab_phase
	;;
ti)
	# Issue 19 item 2 on the host's AMX cores: the row tiles inside the
	# token groups (amx-int8-il-ti4-r16, -ti8-r16: a 64- or 128-row chunk's
	# panels unpacked once per K block, then each group of tokens whose
	# activations fit 1 MiB through every row tile, so all but the first
	# read them from L2). First TestTilesInside (bit for bit against -il's
	# loop order through AMX, and the gate of -ti4), then `ledger ab` of
	# the Intel bundle with each as its matmuls against the promoted
	# kernels, 3B pp1024 (PPS), RUNS (8) rounds: ti4 at the engine's
	# 64-row chunk, ti8 with DAMASCUS_BATCH_CHUNK=128. ≈ 450 s.
	log "TestTilesInside on AMX"
	timeout 120 $B/amx.test -test.run 'TestTilesInside' -test.v > "$OUT/amx-ti.txt" 2>&1
	echo "amx.test rc $?"; grep -aE '^(--- |ok|FAIL|PASS)' "$OUT/amx-ti.txt" | tail -4
	k="matvec/q4_k=avx512-vnni-r16-pf4k,matvec_batch/q4_k=avx512-vnni-r16-m4,matvec/q6_k=avx512-vnni-r16-pf4k,matvec_batch/q6_k=avx512-vnni-r16-m4"
	ARMS="ti4=$k,matmul/q4_k=amx-int8-il-ti4-r16,matmul/q6_k=amx-int8-il-ti4-r16 ti8=$k,matmul/q4_k=amx-int8-il-ti8-r16,matmul/q6_k=amx-int8-il-ti8-r16"
	BC_ARMS="ti8=128" PPS=${PPS:-1024} TG="" RUNS=${RUNS:-8} AB_TIMEOUT=${AB_TIMEOUT:-470}
	ab_phase
	;;
ab)
	ab_phase
	;;
r16s-long)
	# Issue 19 items 1-2 on the host's AMX cores: the short-step kernels
	# (amx-int8-r16s, gated first) carrying every prefill step up to SB
	# (1024) rows, in place of the promoted tile program (amx-int8-il-r16:
	# two digits, two TDPBSUDs a product), 3B at PPS (256,1024), RUNS (4)
	# rounds, and -r16sw for Q4_K (a super-block unpacked once for all the
	# tiles of 16 tokens, where -r16s unpacks it once a tile) when its gate
	# passed too. Their epilogue is a conversion and an FMA a token and
	# sub-block, against the tile program's per super-block.
	log "amx-int8-r16s gate"
	( cd variants/amx && timeout 120 "$OLDPWD/$B/amx.test" -test.run 'TestConformance/matvec_batch/q._k/amx-int8-r16sw?' -test.count 1 -test.v ) > "$OUT/r16s-gate.txt" 2>&1
	grep -aE -- "--- (PASS|FAIL|SKIP): TestConformance/matvec_batch/q._k/amx-int8-r16sw? |panic|SIG" "$OUT/r16s-gate.txt" | head
	if [ "$(grep -c -- "--- PASS: TestConformance/matvec_batch/q._k/amx-int8-r16s " "$OUT/r16s-gate.txt")" != 2 ]; then
		echo "amx-int8-r16s did not pass its gate"; exit 1
	fi
	sk="matvec_batch/q4_k=amx-int8-r16s,matvec_batch/q6_k=amx-int8-r16s"
	arms="s${SB:-1024}=$sk" sbarms="s${SB:-1024}=${SB:-1024}"
	if grep -q -- "--- PASS: TestConformance/matvec_batch/q4_k/amx-int8-r16sw " "$OUT/r16s-gate.txt"; then
		arms="$arms w${SB:-1024}=matvec_batch/q4_k=amx-int8-r16sw,matvec_batch/q6_k=amx-int8-r16s" sbarms="$sbarms w${SB:-1024}=${SB:-1024}"
	fi
	ARMS="$arms" SB_ARMS="$sbarms" PPS=${PPS:-256,1024} TG=${TG-8} RUNS=${RUNS:-4} ab_phase
	;;
batchf8)
	# Issue 19 item 4 on the host's Intel AMX cores, the short steps.
	# First the AMX short-step kernels' gate (amx-int8-r16s: one TDPBSUD a
	# sub-block over the interleaved layouts, written without AMX at hand),
	# then one core in L2: BenchmarkShortInCache (r16s and r16sw beside
	# -m4 and the float-scaled -f8, both types). Then `ledger ab` of the 3B
	# at PPS
	# (16,64) and TG (8), RUNS (5) rounds (≈ 25 s a process): the promoted
	# kernels (crossover 16) beside, when both types' gates passed, s
	# (amx-int8-r16s) at crossovers 16 and SB (64), else f8 (both types'
	# -r16-f8).
	log "amx-int8-r16s gate"
	( cd variants/amx && timeout 120 "$OLDPWD/$B/amx.test" -test.run 'TestConformance/matvec_batch/q._k/(amx-int8|avx512-vnni)-r16s' -test.count 1 -test.v ) > "$OUT/r16s-gate.txt" 2>&1
	rc=$?; grep -aE "^(---|ok|FAIL|PASS)|    ---|panic|SIG" "$OUT/r16s-gate.txt" | head -20
	log "BenchmarkShortInCache"
	( cd variants/amx && timeout 150 "$OLDPWD/$B/amx.test" -test.run '^$' -test.bench ShortInCache -test.count "${COUNT:-4}" -test.benchtime 0.3s ) > "$OUT/short-incache.txt" 2>&1
	grep -ah TOPS "$OUT/short-incache.txt" | awk '{print $1, $(NF-1)}' | sed 's/^Benchmark//'
	f8="matvec_batch/q4_k=avx512-vnni-r16-f8,matvec_batch/q6_k=avx512-vnni-r16-f8"
	arms="f8=$f8" sbarms=""
	if [ "$rc" = 0 ] && [ "$(grep -c -- "--- PASS: TestConformance/matvec_batch/q._k/amx-int8-r16s " "$OUT/r16s-gate.txt")" = 2 ]; then
		sk="matvec_batch/q4_k=amx-int8-r16s,matvec_batch/q6_k=amx-int8-r16s"
		arms="s=$sk s${SB:-64}=$sk" sbarms="s${SB:-64}=${SB:-64}"
	fi
	ARMS="$arms" SB_ARMS="$sbarms" PPS=${PPS:-16,64} TG=${TG-8} RUNS=${RUNS:-5} ab_phase
	;;
dealrun)
	# Issue 20 on the host's Intel AMX cores: the decode's matvec chunks
	# taken in guided runs of up to 4 and 8 (DAMASCUS_DEAL_RUN; each chunk
	# taken is a compare-and-swap, a fence between two kernel calls), 3B
	# tg64, RUNS (10) rounds, against a chunk a call; level on Zen 5 (run
	# 20261205T092833Z-dad4d5). ≈ 6 min.
	ARMS="" PPS="" DR_ARMS="${DR_ARMS:-r4=4 r8=8}" TG=${TG-64} RUNS=${RUNS:-10} ab_phase
	;;
decode-profile)
	# Issue 20 item 1 on the host's Intel AMX cores: where a 2-thread decode
	# step goes. A CPU profile of `ledger damascus-bench -n TG -t 2` (the
	# shipped preferences, weights on huge pages; the profile includes the
	# load) for each of MODELS into $OUT/decode-MODEL-2t.pprof, with the
	# run's tok/s beside it. B may point at the gpu archive's binaries.
	for m in ${MODELS:-llama3.2-1b llama3.2-3b}; do
		models $m
		log "decode profile $m tg${TG:-64} at 2 threads"
		timeout 200 $B/ledger damascus-bench -m /tmp/$m.gguf -n "${TG:-64}" -r "${REPS:-3}" -t 2 -cpuprofile "$OUT/decode-$m-2t.pprof" \
			> "$OUT/decode-$m-2t.json" 2> "$OUT/decode-$m-2t.err"
		python3 -c 'import json,sys,statistics as s; r=json.load(open(sys.argv[1])); print("  ".join("%s %.2f tok/s" % (t["name"], s.median(t["tokens_per_sec"])) for t in r["tests"]))' "$OUT/decode-$m-2t.json"
	done
	;;
short-profile)
	# Issue 19 item 4: where a short prefill step goes on the host's AMX
	# cores. CPU profiles of `ledger damascus-bench -p PP (16) -r REPS (60)
	# -t 2` for each of MODELS (llama3.2-1b) at each crossover of SBS ("0
	# 16": 0 sends the step through the matmul, 16 through the batched
	# decode kernel) into short-MODEL-ppPP-sbN.pprof (Go profiles carry
	# their symbols: `go tool pprof -top` reads them here), tok/s beside.
	for m in ${MODELS:-llama3.2-1b}; do
		models $m
		for sb in ${SBS:-0 16}; do
			log "profile $m pp${PP:-16} DAMASCUS_SMALL_BATCH=$sb, 2 threads"
			DAMASCUS_SMALL_BATCH=$sb timeout 200 $B/ledger damascus-bench -m /tmp/$m.gguf -p "${PP:-16}" -r "${REPS:-60}" -t 2 \
				-cpuprofile "$OUT/short-$m-pp${PP:-16}-sb$sb.pprof" > "$OUT/short-$m-pp${PP:-16}-sb$sb.json" 2> "$OUT/short-$m-pp${PP:-16}-sb$sb.err"
			python3 -c 'import json,sys,statistics as s; r=json.load(open(sys.argv[1])); print("  ".join("%s %.2f tok/s" % (t["name"], s.median(t["tokens_per_sec"])) for t in r["tests"]))' "$OUT/short-$m-pp${PP:-16}-sb$sb.json"
		done
	done
	;;
short-prompts)
	# Issue 19 item 4 on the host's Intel AMX cores at 2 threads: prefill at
	# each of PPS (pp16 … pp512) beside llama.cpp (sapphirerapids on huge
	# pages), RUNS (5) rounds each, the shipped preferences, for MODELS
	# (llama3.2-1b). B may point at the gpu archive's binaries.
	# DAMASCUS_SMALL_BATCH (the engine's small-batch crossover: steps of at
	# most N rows through matvec_batch, 0 off) and DAMASCUS_KERNELS pass
	# through to the engine and are named in the records' note; SBS="0 16
	# 32 64" repeats the sweep at each crossover (output names gain -sbN).
	NOTE="lent device machine (Intel Xeon with AMX, 16 cores; the H200 idle)"
	for sb in ${SBS:-${DAMASCUS_SMALL_BATCH:--}}; do
	sfx="" over="promoted kernels, no override"
	if [ "$sb" != - ]; then export DAMASCUS_SMALL_BATCH=$sb; sfx="-sb$sb"; over="DAMASCUS_SMALL_BATCH=$sb"; fi
	[ -n "${DAMASCUS_KERNELS:-}" ] && over="$over, DAMASCUS_KERNELS=$DAMASCUS_KERNELS"
	for m in ${MODELS:-llama3.2-1b}; do
		models $m
		for pp in ${PPS:-16 32 64 128 256 512}; do
			log "e2e $m pp$pp at 2 threads ($over)"
			timeout "${E2E_TIMEOUT:-120}" $B/ledger e2e -m /tmp/$m.gguf --pp $pp --tg 0 --runs "${RUNS:-5}" --no-roofline \
				--threads 2 --cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
				--json "$OUT/e2e-$m-pp$pp-2t$sfx.json" --store "$STORE" --note "$NOTE; issue 19: short prompts at 2 threads; $over" \
				> "$OUT/e2e-$m-pp$pp-2t$sfx.txt" 2>&1
			grep -aE "prefill tok|recorded" "$OUT/e2e-$m-pp$pp-2t$sfx.txt" | tail -2
		done
	done
	done
	;;
shipped)
	# The protocol of record with the engine as shipped (no override:
	# promoted/preferences.json and its bundles decide), RUNS (10) rounds
	# per test. SHIPPED lists MODEL:PP:TG ("3b:0:128" a decode, "3b:1024:0"
	# a prefill); one call holds about one 3B test. The roofline probes
	# run with both: the memory probe (and one after each round) for the
	# decode's fraction of bandwidth, the VNNI and AMX-INT8 probes for the
	# prefill's fraction of int8 peak (issue 19's report).
	# THREADS (2) sets both engines' threads (issue 19's 16-thread leg:
	# THREADS=16); LLAMA_CONFIGS (sapphirerapids,sapphirerapids+huge) the
	# llama.cpp configurations whose best per test is llama.cpp's row.
	# Timing on the lent host (session 38): the probes before round 1 take
	# ≈ 40 s, a 3B tg128 round with both configurations ≈ 50 s, so a 3B
	# decode needs a call of its own (E2E_TIMEOUT 575, run's timeout 600);
	# the 1B pp1024 ≈ 27 s a round (E2E_TIMEOUT ≥ 300). Even alone, 10
	# rounds of the 3B tg128 with both configurations were cut in round 10
	# (session 39); with LLAMA_CONFIGS=sapphirerapids+huge (llama.cpp's
	# better one there in every 3B decode so far) they took 380 s.
	NOTE="lent device machine (Intel Xeon with AMX, 16 cores; the H200 idle)"
	unset DAMASCUS_KERNELS
	th=${THREADS:-2} sfx=""; [ "$th" != 2 ] && sfx="-t$th"
	for t in ${SHIPPED:-3b:0:128}; do
		IFS=: read -r m pp tg <<< "$t"
		models "llama3.2-$m"
		log "e2e llama3.2-$m pp$pp tg$tg at $th threads, shipped preferences"
		timeout "${E2E_TIMEOUT:-575}" $B/ledger e2e -m "/tmp/llama3.2-$m.gguf" --pp "$pp" --tg "$tg" --runs "${RUNS:-10}" --warmup-prompt 64 \
			--threads "$th" --llama-configs "${LLAMA_CONFIGS:-sapphirerapids,sapphirerapids+huge}" --sustained 0 --cold-runs 0 \
			--json "$OUT/e2e-$m-pp$pp-tg$tg$sfx.json" --store "$STORE" --note "$NOTE; the engine as shipped (promoted kernels and bundles, no override); $th threads" \
			> "$OUT/e2e-$m-pp$pp-tg$tg$sfx.txt" 2>&1
		grep -aE "prefill tok|decode tok|peak RSS|recorded" "$OUT/e2e-$m-pp$pp-tg$tg$sfx.txt" | cut -c1-700
	done
	;;
*) echo "unknown phase $1" >&2; exit 2 ;;
esac
