#!/usr/bin/env bash
# The persistent decode kernel (DAMASCUS_CUDA_DECODE, model/llama
# cuda_persistent.go, variants/cuda persistent.cu) on the lent H200.
#
#   make device-gpu     (here: binaries, test data and llama.cpp's source in .device/gpu.tar.xz)
#   run: kind nvidia-h200, carry [".device/gpu.tar.xz"],
#        command: scripts/device-persistent.sh check   (≈ 3 min: the tests only)
#        command: scripts/device-persistent.sh time    (≈ 6 min: 3B tg256 A/B rounds)
#
# check: the cuda package's persistent tests (cuda-persist bit for bit
#   against cuda; resources), then the engine's: the persistent kernel
#   against the launch-per-op graph on tiny Q4_K_M, tiny Q8_0 and the
#   3B-shaped 2-layer Q4_K_M (bit-identical logits every step, past position
#   1024 on the 3B file), and the watchdog's test. Every decode step is
#   bounded: a barrier that waits past its timeout fails the step.
# time: the synthetic 3B Q4_K_M, ROUNDS (3) rounds, each running
#   `ledger damascus-bench -p 16 -n 256 -r 3 -device cuda -weights mmap`
#   once per mode in MODES (graph, persistent, persistent with prefetch,
#   one launch a layer), the modes alternating within a round.
# Output in $OUT: check.txt, bench-MODE-ROUND.json, and the medians.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
log() { echo "== $(date -u +%H:%M:%S) $*"; }
[ -d .device/gpu/bin ] || { mkdir -p .device/gpu && tar -C .device/gpu -xJf .device/gpu.tar.xz; }
B=.device/gpu/bin
export DAMASCUS_TESTDATA=$PWD/.device/gpu/testdata
case "${1:-check}" in
check)
	log "variants/cuda persistent tests"
	timeout 120 $B/cuda.test -test.v -test.count=1 -test.timeout 110s -test.run 'TestPersistent|TestKernelResources' > "$OUT/check.txt" 2>&1
	grep -aE "^(--- |ok|FAIL|PASS|panic)|persistent" "$OUT/check.txt" | head -20
	log "model/llama persistent decode against the graph"
	timeout 300 $B/llama.test -test.v -test.count=1 -test.timeout 290s -test.run 'TestPersistent|TestDecodeEnv' >> "$OUT/check.txt" 2>&1
	grep -aE "^(=== RUN|--- |ok|FAIL|PASS|panic)|persistent|bit-identical|cosine|watchdog" "$OUT/check.txt" | tail -40
	;;
time)
	[ -f /tmp/llama3.2-3b.gguf ] || $B/damascus synth --preset llama3.2-3b --type Q4_K_M -o /tmp/llama3.2-3b.gguf 2>&1 | tail -1
	MODES=${MODES:-"graph persistent persistent,prefetch persistent-layer"}
	for r in $(seq 1 "${ROUNDS:-3}"); do
		for m in $MODES; do
			log "round $r: DAMASCUS_CUDA_DECODE=$m"
			f="$OUT/bench-${m//,/+}-$r.json"
			DAMASCUS_CUDA_DECODE=$m timeout 150 $B/ledger damascus-bench -m /tmp/llama3.2-3b.gguf -p 16 -n 256 -r 3 -device cuda -weights mmap \
				> "$f" 2> "$OUT/bench.err" || { echo "failed:"; tail -5 "$OUT/bench.err"; }
		done
	done
	python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "bench-*.json"))):
    mode = os.path.basename(f)[6:].rsplit("-", 1)[0]
    try:
        res = json.load(open(f))
    except Exception as e:
        print(f, "unreadable:", e); continue
    for t in res["tests"]:
        rows.setdefault((t["name"], mode), []).extend(t["tokens_per_sec"])
for k in sorted(rows):
    v = sorted(rows[k])
    print("%-7s %-22s n=%2d median %8.1f tok/s  min %8.1f  max %8.1f" % (k[0], k[1], len(v), statistics.median(v), v[0], v[-1]))
PY
	;;
*) echo "usage: $0 check|time" >&2; exit 2 ;;
esac
