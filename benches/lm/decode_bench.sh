#!/usr/bin/env bash
# A language model on the paged KV cache (benches/lm/decode.py: prefill latency, decode steps of
# one and of four sequences) through apache-tvm 0.27's Python runtime-only, side by side in one
# run: the wheel's runtime ("real") and this runtime as both libraries ("ours"), alternating
# processes, on the same model library: the tiny model of tests/data/lm-0.27/tiny_llm and a
# larger one (tests/tvm027_runtime/tiny_llm.py build DIR larger: 4 layers, hidden 512, vocabulary
# 4096; built once into target/lm-larger by the wheel's compiler). Medians of the runs and the
# ratio ours/real (lower is faster). The wheel's libraries are put back on exit.
#
#   bash benches/lm/decode_bench.sh [RUNS]     # after `cargo build --release`
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
source scripts/lib.sh
tvm027_bench_setup
use_ffi_library "$python" "$lib" real
[ -f target/lm-larger/tiny_llm.so ] || "$python" tests/tvm027_runtime/tiny_llm.py build target/lm-larger larger >/dev/null
for model in tiny larger; do
  dir=$([ $model = tiny ] && echo tests/data/lm-0.27/tiny_llm || echo target/lm-larger)
  for i in $(seq "$runs"); do
    use_ffi_library "$python" "$lib" real
    TVM_USE_RUNTIME_LIB=1 "$python" benches/lm/decode.py "$dir" > "$out/$model.real.$i.json"
    use_ffi_library "$python" "$lib" both
    TVM_USE_RUNTIME_LIB=1 "$python" benches/lm/decode.py "$dir" > "$out/$model.ours.$i.json"
  done
done
use_ffi_library "$python" "$lib" real
"$python" - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
print(f"median of {runs} runs (each a median of 5 rounds); ratio ours/real (lower is faster)")
for model in ("tiny", "larger"):
    data = {s: [json.load(open(f"{out}/{model}.{s}.{i}.json")) for i in range(1, runs + 1)] for s in ("real", "ours")}
    for key in data["real"][0]:
        r = statistics.median(d[key] for d in data["real"])
        o = statistics.median(d[key] for d in data["ours"])
        print(f"{model:<8}{key:<36}{r:>10.1f}{o:>10.1f}{o / r:>8.2f}x")
PY
rm -rf "$out"
