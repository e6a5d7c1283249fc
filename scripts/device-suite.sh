#!/usr/bin/env bash
# The whole test suite on the lent device machine (an Intel Xeon with AMX,
# no Go toolchain): every package's test binary, cross-built here by
#
#   make device-suite          # .device/suite.tar.xz: test binaries, llama.cpp, test data
#   run: carry [".device/suite.tar.xz"], command: scripts/device-suite.sh [LEG...]
#
# Each LEG is a DAMASCUS_CPU_HIDE value ("none" hides nothing): the default
# legs are the machine as it is (AMX), without AMX, and without AVX-512
# (the AVX2 and generic fallbacks); the GPU tests in the first only. Every binary runs from its package's
# folder, as `go test` runs it, 6 at a time. Logs land in $OUT; the last
# lines printed are one summary line per leg (BENCH, at the end, times
# benchmarks from the same binaries). Run it whenever a change
# touches AMX, BF16 or Intel-only code: CI cannot see those paths.
set -uo pipefail
OUT=${OUT:-/tmp/damascus-out}
mkdir -p "$OUT"
root=$PWD
work=/tmp/damascus-suite
rm -rf "$work"; mkdir -p "$work"
if command -v xz >/dev/null; then
	tar -xJf .device/suite.tar.xz -C "$work"
else
	python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/suite.tar.xz "$work"
fi || { echo "cannot unpack .device/suite.tar.xz (make device-suite, then carry it)"; exit 2; }
export DAMASCUS_TESTDATA=$work/testdata DAMASCUS_LLAMACPP_DIR=$work/llama
{ lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-400; nproc; } > "$OUT/suite-machine.txt"

# one BINARY LEG: the package's tests from its folder, log in $OUT/suite-LEG/.
one() {
	local bin=$1 leg=$2 pkg
	pkg=$(basename "$bin" .test | tr _ /)
	local log="$OUT/suite-$leg/$(basename "$bin" .test).log" v=()
	[ "$pkg" = model/llama ] && v=(-test.v)
	local hide=$leg gpu=(); [ "$leg" = none ] && hide=
	# The GPU's tests do not depend on the host's CPU features: they run in
	# the "none" leg only (GPU_ALL_LEGS=1: in every leg), which halves the
	# hidden legs' time (variants/cuda and model/llama's GPU tests dominate).
	[ "$leg" != none ] && [ -z "${GPU_ALL_LEGS:-}" ] && gpu=(DAMASCUS_LIBCUDA=/nonexistent/libcuda.so.1)
	( cd "$root/$pkg" && env "${gpu[@]}" DAMASCUS_CPU_HIDE=$hide timeout 540 "$bin" -test.count=1 "${v[@]}" > "$log" 2>&1 )
	local rc=$?
	if [ $rc = 0 ]; then echo "ok   $pkg"; else
		echo "FAIL $pkg (exit $rc)"
		# Only a few files come back from the device: failures in one.
		{ echo "=== $leg $pkg (exit $rc)"; grep -a -B2 -A12 -E -- '--- FAIL|panic:|^FAIL' "$log" | head -80; } >> "$OUT/suite-failures.txt"
	fi
}
export -f one
export OUT root
# LEG "-" runs no legs (BENCH alone).
legs=("$@"); [ $# = 0 ] && legs=("none amx-tile avx512f"); [ "${1:-}" = "-" ] && legs=()
for leg in "${legs[@]}"; do
	for l in $leg; do
		mkdir -p "$OUT/suite-$l"
		start=$(date +%s)
		ls "$work"/tests/*.test | xargs -P "${JOBS:-6}" -I{} bash -c "one {} $l" > "$OUT/suite-$l.txt"
		pass=$(grep -c '^ok' "$OUT/suite-$l.txt"); fail=$(grep -c '^FAIL' "$OUT/suite-$l.txt")
		echo "leg DAMASCUS_CPU_HIDE=$l: $pass packages passed, $fail failed, $(( $(date +%s) - start )) s"
		grep '^FAIL' "$OUT/suite-$l.txt"
	done
done | tee "$OUT/suite-summary.txt"

# AGREE_KERNELS (op=variant,...): the engine's llama.cpp agreement test on
# the tiny synthetic Q4_K_M with those kernels forced (DAMASCUS_KERNELS),
# for a candidate that the suite's own runs do not pick: e.g.
# attention_batch=amx-bf16-split, which must agree at float32's criteria.
if [ -n "${AGREE_KERNELS:-}" ]; then
	( cd "$root/model/llama" && DAMASCUS_KERNELS=$AGREE_KERNELS timeout 300 "$work/tests/model_llama.test" -test.count=1 -test.v \
		-test.run 'TestSynthTinyMatchesLlamaCppAndReference/Q4_K_M' > "$OUT/agree.txt" 2>&1 )
	echo "agreement with DAMASCUS_KERNELS=$AGREE_KERNELS: exit $?"
	grep -aE "ours vs llama.cpp|criteria|FAIL|^ok|^PASS|diverg" "$OUT/agree.txt" | head -12
fi | tee -a "$OUT/suite-summary.txt"

# BENCH (PKG:PATTERN items, e.g. "variants/avx512:AttnbParts
# variants/amx:TileStep"): after the legs, those benchmarks from the same
# test binaries, on the machine as it is (BENCH_TIME per benchmark, 200x).
for b in ${BENCH:-}; do
	pkg=${b%%:*} pat=${b#*:}
	( cd "$root/$pkg" && timeout 300 "$work/tests/$(echo "$pkg" | tr / _).test" -test.run XXX -test.bench "$pat" \
		-test.benchtime "${BENCH_TIME:-200x}" -test.count "${BENCH_COUNT:-3}" > "$OUT/bench-$(echo "$pkg" | tr / _).txt" 2>&1 )
	echo "bench $pkg $pat: exit $?"
	grep -aE "^Benchmark" "$OUT/bench-$(echo "$pkg" | tr / _).txt" | head -40
done | tee -a "$OUT/suite-summary.txt"
