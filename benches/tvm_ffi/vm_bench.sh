#!/usr/bin/env bash
# A Relax VM call through apache-tvm 0.27's own Python (benches/tvm_ffi/vm_calls.py), side by
# side in one run: the wheel's libraries ("real"), this runtime's libtvm_ffi.so under the
# wheel's libtvm_runtime.so ("ours"), and runtime-only (TVM_USE_RUNTIME_LIB=1) the wheel's
# runtime ("real-rt") against this runtime as both libraries ("both", `tvm-rt ffi-swap
# --tvm-runtime`). Alternating processes, medians of the runs, ratios ours/real and both/real-rt
# (lower is faster). The wheel's libraries are put back on exit, whatever happens.
#
#   bash benches/tvm_ffi/vm_bench.sh [RUNS]     # after `cargo build --release`
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
source scripts/lib.sh
tvm027_bench_setup
for i in $(seq "$runs"); do
  use_ffi_library "$python" "$lib" real
  "$python" benches/tvm_ffi/vm_calls.py > "$out/real.$i.json"
  TVM_USE_RUNTIME_LIB=1 "$python" benches/tvm_ffi/vm_calls.py > "$out/real-rt.$i.json"
  use_ffi_library "$python" "$lib" ours
  "$python" benches/tvm_ffi/vm_calls.py > "$out/ours.$i.json"
  use_ffi_library "$python" "$lib" real
  use_ffi_library "$python" "$lib" both
  TVM_USE_RUNTIME_LIB=1 "$python" benches/tvm_ffi/vm_calls.py > "$out/both.$i.json"
done
use_ffi_library "$python" "$lib" real
"$python" - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
med = lambda side, case: statistics.median(json.load(open(f"{out}/{side}.{i}.json"))[case] for i in range(1, runs + 1))
cases = json.load(open(f"{out}/real.1.json"))
print(f"{'case':<22} {'real ns':>9} {'ours ns':>9} {'ours/real':>9} {'real-rt ns':>10} {'both ns':>9} {'both/real-rt':>12}")
for c in cases:
    r, o, rr, b = med("real", c), med("ours", c), med("real-rt", c), med("both", c)
    print(f"{c:<22} {r:>9.0f} {o:>9.0f} {o / r:>9.2f} {rr:>10.0f} {b:>9.0f} {b / rr:>12.2f}")
PY
rm -rf "$out"
