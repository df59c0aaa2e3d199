#!/usr/bin/env bash
# TVM 0.18's own OpenCL runtime against this one, on the same files: TVM 0.18's graph models built
# for OpenCL (../shared/tvm-data/opencl-0.18: mlp, cnn), run by one C program
# (benches/opencl/graph_latency.c, TVM's C API only) linked once and run on either
# libtvm_runtime.so (LD_LIBRARY_PATH picks it: the drop-in promise), alternating, medians.
# On PoCL the device is CPU code.
#
#   bash benches/opencl/tvm018_opencl.sh      # after `cargo build --release`
#
# Builds TVM v0.18.0's runtime-only library with USE_OPENCL=ON under target/tvm-0.18-opencl/
# (ignored by git; a few minutes on two cores) from $TVM_SOURCE (a checkout of v0.18.0 with its
# submodules dmlc-core, dlpack and rang), or else a clone of https://github.com/apache/tvm at
# v0.18.0 with those submodules. Needs cmake, a C++ compiler and the OpenCL headers and loader
# (Debian: opencl-headers ocl-icd-opencl-dev).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$PWD/target/tvm-0.18-opencl
data=$PWD/../shared/tvm-data/opencl-0.18
mkdir -p "$out"
if [ ! -f "$out/build/libtvm_runtime.so" ]; then
  if [ -n "${TVM_SOURCE:-}" ]; then
    src=$TVM_SOURCE
  else
    src=$out/src
    if [ ! -f "$src/CMakeLists.txt" ]; then
      git clone --depth 1 --branch v0.18.0 https://github.com/apache/tvm "$src"
      git -C "$src" submodule update --init --depth 1 3rdparty/dmlc-core 3rdparty/dlpack 3rdparty/rang
    fi
  fi
  mkdir -p "$out/build"
  cp "$src/cmake/config.cmake" "$out/build/config.cmake"
  sed -i 's/^set(USE_LLVM .*/set(USE_LLVM OFF)/; s/^set(USE_OPENCL .*/set(USE_OPENCL ON)/; s/^set(USE_LIBBACKTRACE .*/set(USE_LIBBACKTRACE OFF)/' \
    "$out/build/config.cmake"
  cmake -S "$src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$out/build" --target tvm_runtime -j "$(nproc 2>/dev/null || echo 2)"
fi
[ -f target/release/libtvm_runtime.so ] || cargo build --release
gcc -O2 -Iinclude benches/opencl/graph_latency.c -o "$out/graph_latency" -ldl -L target/release -ltvm_runtime
rounds=${BENCH_ROUNDS:-5}
for spec in mlp:x cnn:data; do
  model=${spec%:*} input=${spec#*:}
  for ((r = 1; r <= rounds; r++)); do
    LD_LIBRARY_PATH=$out/build "$out/graph_latency" "$data/$model" "$input" tvm018
    LD_LIBRARY_PATH=$PWD/target/release "$out/graph_latency" "$data/$model" "$input" ours
  done
done | awk '
  { sum[$1" "$2] = sum[$1" "$2] " " $3; launch[$1" "$2] = launch[$1" "$2] " " $4 }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    split("mlp cnn", models, " ")
    for (i = 1; i <= 2; i++) {
      o = median(sum[models[i] " ours"]); t = median(sum[models[i] " tvm018"])
      ol = median(launch[models[i] " ours"]); tl = median(launch[models[i] " tvm018"])
      printf "%s: run + sync: ours %.1f us, TVM 0.18 %.1f us, ratio %.2f (target <= 1.0); per kernel launch (run, no sync): ours %.2f us, TVM 0.18 %.2f us, ratio %.2f (target <= 0.8)\n", models[i], o, t, o / t, ol, tl, ol / tl
    }
  }'
