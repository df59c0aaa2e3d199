#!/usr/bin/env bash
# apache-tvm 0.27's compiler on its own libtvm_ffi.so and on this runtime's in its place,
# side by side: whole processes, alternating, each importing tvm and running `tvm.compile` on
# the models of tests/tvm027_runtime/compile_and_run.py a number of times (COMPILES rounds of
# three). Prints the import time and the compile time of each process, medians of the runs,
# and ours / real.
#
#   bash benches/tvm_ffi/compile_bench.sh [RUNS] [COMPILES]    # after `cargo build --release`
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
rounds=${2:-10}
source scripts/lib.sh
tvm027_bench_setup
probe='
import sys, time
t0 = time.perf_counter()
import tvm
sys.path.insert(0, "tests/tvm027_runtime")
from compile_and_run import AddTuple, ConvPool, MatmulRelu
t1 = time.perf_counter()
for _ in range(int(sys.argv[1])):
    for m in (ConvPool, MatmulRelu, AddTuple):
        tvm.compile(m, target="llvm")
print(t1 - t0, time.perf_counter() - t1)
'
for i in $(seq "$runs"); do
  for side in real ours; do
    use_ffi_library "$python" "$lib" "$side"
    "$python" -c "$probe" "$rounds" 2>/dev/null | tail -1 >> "$out/$side"
  done
done
"$python" - "$out" "$rounds" <<'PY'
import statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
read = lambda side: [tuple(map(float, line.split())) for line in open(f"{out}/{side}")]
real, ours = read("real"), read("ours")
print(f"{'process part':<40} {'real s':>8} {'ours s':>8} {'ours/real':>9}")
for i, name in enumerate(["import tvm", f"{3 * rounds} x tvm.compile"]):
    r, o = statistics.median(x[i] for x in real), statistics.median(x[i] for x in ours)
    print(f"{name:<40} {r:>8.3f} {o:>8.3f} {o / r:>9.2f}")
PY
rm -rf "$out"
