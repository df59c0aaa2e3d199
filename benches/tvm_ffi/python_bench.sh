#!/usr/bin/env bash
# tvm-ffi's Python package on its own libtvm_ffi.so and on this runtime's put in its place (the
# package opens its library by path; `tvm-rt ffi-swap` swaps them, and the wheel's own is put
# back on exit, whatever happens), side by side: per-call nanoseconds of
# benches/tvm_ffi/python_calls.py and of the numpy cases of tvm-ffi's own DLPack benchmark
# (its sdist's tests/scripts/benchmark_dlpack.py, through benches/tvm_ffi/upstream_dlpack.py),
# alternating processes, medians of the runs, and ours / real.
#
#   bash benches/tvm_ffi/python_bench.sh [RUNS]     # after `cargo build --release`
#   TVM_FFI_PYTHON=python3 bash benches/tvm_ffi/python_bench.sh [RUNS]
#       # an interpreter that already has apache-tvm-ffi 0.1.15.post2 and numpy, not the venv
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
source scripts/lib.sh
ensure_ffi_release
python=${TVM_FFI_PYTHON:-$(tvm_ffi_venv)}
lib=$(tvm_ffi_library "$python")
tvm_ffi_sdist "$python" tests/scripts
upstream="$REPO/target/tvm-ffi-sdist/tests/scripts/benchmark_dlpack.py"
trap 'use_ffi_library "$python" "$lib" real' EXIT
out=$(mktemp -d)
for i in $(seq "$runs"); do
  for side in real ours; do
    use_ffi_library "$python" "$lib" "$side"
    "$python" benches/tvm_ffi/python_calls.py > "$out/$side.$i.json"
    "$python" benches/tvm_ffi/upstream_dlpack.py "$upstream" > "$out/$side.$i.upstream.json"
  done
done
"$python" - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
load = lambda side: [
    {**json.load(open(f"{out}/{side}.{i}.json")), **json.load(open(f"{out}/{side}.{i}.upstream.json"))}
    for i in range(1, runs + 1)
]
real, ours = load("real"), load("ours")
print(f"{'case':<60} {'real ns':>9} {'ours ns':>9} {'ours/real':>9}")
for case in real[0]:
    r = statistics.median(x[case] for x in real)
    o = statistics.median(x[case] for x in ours)
    print(f"{case:<60} {r:>9.1f} {o:>9.1f} {o / r:>9.2f}")
PY
rm -rf "$out"
