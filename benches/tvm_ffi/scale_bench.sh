#!/usr/bin/env bash
# tvm-ffi's containers and structural functions at N = 10 .. 100 000 (benches/tvm_ffi/scale.py),
# through tvm-ffi's Python package, side by side in one run: the real libtvm_ffi.so ("real")
# and this runtime's ("ours", `tvm-rt ffi-swap`), alternating processes; medians of the runs,
# the ratio ours/real (lower is faster), and each side's growth from the smallest N to the
# largest (cost per operation at the largest over the smallest: 1.0 is constant per
# operation). The real library is put back on exit, whatever happens.
#
#   bash benches/tvm_ffi/scale_bench.sh [RUNS] [N ...]     # after `cargo build --release`
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
shift || true
sizes=${*:-10 1000 10000 100000}
source scripts/lib.sh
tvm027_bench_setup
for i in $(seq "$runs"); do
  use_ffi_library "$python" "$lib" real
  "$python" benches/tvm_ffi/scale.py $sizes > "$out/real.$i.json"
  use_ffi_library "$python" "$lib" ours
  "$python" benches/tvm_ffi/scale.py $sizes > "$out/ours.$i.json"
done
use_ffi_library "$python" "$lib" real
"$python" - "$out" "$runs" $sizes <<'PY'
import json, statistics, sys
out, runs, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
data = {s: [json.load(open(f"{out}/{s}.{i}.json")) for i in range(1, runs + 1)] for s in ("real", "ours")}
med = lambda side, key: statistics.median(d[key] for d in data[side])
names = dict.fromkeys(k.rsplit("@", 1)[0] for k in data["real"][0])
print(f"ns per operation, median of {runs} runs; ratio ours/real; growth = ns at N={sizes[-1]} / ns at N={sizes[0]}")
print(f"{'operation':<24}" + "".join(f"{'N=' + n:>16}" for n in sizes) + f"{'growth real':>12}{'growth ours':>12}")
worst = 0.0
for name in names:
    cells, r0, o0 = [], None, None
    for n in sizes:
        r, o = med("real", f"{name}@{n}"), med("ours", f"{name}@{n}")
        r0, o0 = r0 or r, o0 or o
        worst = max(worst, o / r)
        cells.append(f"{o:>7.0f} {o / r:>5.2f}x ")
    print(f"{name:<24}" + "".join(f"{c:>16}" for c in cells) + f"{r / r0:>12.2f}{o / o0:>12.2f}")
print(f"worst ratio ours/real: {worst:.2f}x")
PY
rm -rf "$out"
