#!/usr/bin/env bash
# Host<->device copy bandwidth through this runtime's C API against OpenCL called directly
# (benches/opencl/copy_bench.c), on this machine's OpenCL platform (PoCL: CPU code).
# Needs the OpenCL headers and loader to build (Debian: opencl-headers ocl-icd-opencl-dev).
#
#   bash benches/opencl/copy_bench.sh     # after `cargo build --release`
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/opencl-bench
mkdir -p "$out"
gcc -O2 -Iinclude benches/opencl/copy_bench.c \
  -o "$out/copy_bench" -Ltarget/release -ltvm_runtime -lOpenCL -Wl,-rpath,"$PWD/target/release"
"$out/copy_bench"
