#!/usr/bin/env bash
# Runs the end-to-end protocol on the lent device machine (an Intel Xeon with
# AMX; see /work/.library/device). The binaries are cross-built here
# (CGO_ENABLED=0) into .device/bin and carried with the pinned llama.cpp:
#
#   make device-bins
#   run: carry [".device", "baseline/llama.cpp/node_modules"],
#        command: scripts/device-e2e.sh PHASE
#
# Every result lands in $OUT (records to append to results/ledger.jsonl, the
# e2e JSON files and the logs). PHASE picks what to run so that each call
# fits the device's 10-minute limit.
set -uo pipefail
B=.device/bin
export DAMASCUS_TESTDATA=${DAMASCUS_TESTDATA:-$PWD/.device/testdata}
OUT=${OUT:-/tmp/damascus-out}
mkdir -p "$OUT"
STORE="$OUT/ledger.jsonl"
NOTE="lent device machine (Intel Xeon with AMX, 16 cores; other tenants unknown)"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

models() {
	for p in "$@"; do
		[ -f "/tmp/$p.gguf" ] || $B/damascus synth --preset "$p" --type Q4_K_M -o "/tmp/$p.gguf" 2>&1 | tail -1
	done
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
kernels)
	# Gate, then time, the prefill matmul variants where AMX exists.
	log gate; timeout 120 $B/ledger gate --op matmul/q4_k,matmul/q6_k --shapes 3B --store "$STORE" > "$OUT/gate.txt" 2>&1; tail -5 "$OUT/gate.txt"
	log run; timeout 300 $B/ledger run --op matmul/q4_k,matmul/q6_k --shapes 3B --runs 10 --store "$STORE" --note "$NOTE" > "$OUT/run.txt" 2>&1; tail -40 "$OUT/run.txt"
	;;
scaling)
	# Prefill scaling 1→16 threads, Damascus beside llama.cpp.
	models llama3.2-3b
	export DAMASCUS_KERNELS=${DAMASCUS_KERNELS:-matmul/q4_k=amx-int8,matmul/q6_k=amx-int8}
	for t in 1 2 4 8 16; do
		log "scaling t=$t"
		timeout 150 $B/ledger e2e -m /tmp/llama3.2-3b.gguf --pp 256 --tg 0 --runs 3 --threads $t \
			--cpu-variant sapphirerapids --huge-pages --sustained 0 --cold-runs 0 \
			--json "$OUT/scaling-t$t.json" --store "$STORE" --note "$NOTE; scaling run" > "$OUT/scaling-t$t.txt" 2>&1
		grep -E "prefill" "$OUT/scaling-t$t.txt"
	done
	;;
*) echo "unknown phase $1" >&2; exit 2 ;;
esac
