#!/usr/bin/env bash
# Builds a TVM 0.18 host for the RPC checks: TVM v0.18.0's runtime-only library, its C++ RPC
# server (apps/cpp_rpc, the reference server) and its Python package in runtime-only mode, under
# target/tvm-0.18/ (ignored by git). About two minutes of compiling on two cores.
#
#   scripts/tvm018_host.sh            # then: source target/tvm-0.18/env.sh
#
# Source: $TVM_SOURCE (a checkout of v0.18.0 with its submodules dmlc-core, dlpack and rang), or
# else a clone of https://github.com/apache/tvm at v0.18.0 with those submodules. Needs cmake, a
# C++ compiler, python3 with venv, and network access for the clone and pip.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/target/tvm-0.18
mkdir -p "$out"
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
sed -i 's/^set(USE_LLVM .*/set(USE_LLVM OFF)/; s/^set(USE_CPP_RPC .*/set(USE_CPP_RPC ON)/; s/^set(USE_LIBBACKTRACE .*/set(USE_LIBBACKTRACE OFF)/' \
  "$out/build/config.cmake"
cmake -S "$src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out/build" --target tvm_runtime tvm_rpc -j "$(nproc 2>/dev/null || echo 2)"
[ -x "$out/venv/bin/python" ] || python3 -m venv "$out/venv"
"$out/venv/bin/pip" install -q "numpy<2" cloudpickle tornado psutil typing_extensions decorator attrs packaging scipy
cat > "$out/env.sh" <<ENV
# TVM 0.18 (runtime only) as a Python host: python = \$TVM018_PYTHON
export TVM_LIBRARY_PATH=$out/build TVM_USE_RUNTIME_LIB=1 PYTHONPATH=$src/python
export TVM018_PYTHON=$out/venv/bin/python TVM018_RPC_SERVER=$out/build/tvm_rpc
ENV
echo "ready: source $out/env.sh"
