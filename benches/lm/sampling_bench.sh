#!/usr/bin/env bash
# The per-token language-model builtins (benches/lm/sampling.py) through apache-tvm 0.27's
# Python runtime-only, side by side in one run: the wheel's runtime ("real") and this runtime as
# both libraries ("ours", `tvm-rt ffi-swap --tvm-runtime`), alternating processes; medians of the
# runs and the ratio ours/real (lower is faster). The wheel's libraries are put back on exit.
#
#   bash benches/lm/sampling_bench.sh [RUNS]     # after `cargo build --release`
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
source scripts/lib.sh
tvm027_bench_setup
for i in $(seq "$runs"); do
  use_ffi_library "$python" "$lib" real
  TVM_USE_RUNTIME_LIB=1 "$python" benches/lm/sampling.py > "$out/real.$i.json"
  use_ffi_library "$python" "$lib" both
  TVM_USE_RUNTIME_LIB=1 "$python" benches/lm/sampling.py > "$out/ours.$i.json"
done
use_ffi_library "$python" "$lib" real
"$python" - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
data = {s: [json.load(open(f"{out}/{s}.{i}.json")) for i in range(1, runs + 1)] for s in ("real", "ours")}
print(f"µs per call, median of {runs} runs; ratio ours/real (lower is faster)")
for key in data["real"][0]:
    r = statistics.median(d[key] for d in data["real"])
    o = statistics.median(d[key] for d in data["ours"])
    print(f"{key:<48}{r / 1e3:>10.1f}{o / 1e3:>10.1f}{o / r:>8.2f}x")
PY
rm -rf "$out"
