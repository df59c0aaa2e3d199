#!/usr/bin/env bash
# tvm-ffi's own examples (examples/ of the apache-tvm-ffi 0.1.15.post2 sdist), built as their
# scripts build them, against the wheel, then run on the wheel's libtvm_ffi.so, on this library in
# its place (`tvm-rt ffi-swap`) and on this library with handles checked; their output must be
# the same on all three:
# - quickstart: a C++ kernel library (add_one_cpu.so) loaded by a C++ program through
#   `tvm::ffi::Module` and from Python with numpy;
# - stable_c_abi: a C kernel library loaded by a C program, through the C ABI alone;
# - python_packaging: a Python package built on tvm-ffi (scikit-build-core, a C++ extension
#   with a registered object type, its generated stubs) and its run_example.py: functions, a
#   C++ error with its traceback, an object's fields and method;
# - abi_overview: the ABI guide's C code, linked and loaded with every symbol bound at once.
# The CUDA and torch examples need a GPU or torch and are not run.
#
#   bash scripts/tvm_ffi_examples.sh     # after `cargo build --release`; needs gcc, g++, cmake
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_ffi_release
python=$(tvm_ffi_venv)
export PATH="$(dirname "$python"):$PATH" # tvm-ffi-config, cmake's ninja
tvm_ffi_sdist "$python" examples
lib=$(tvm_ffi_library "$python")
trap 'use_ffi_library "$python" "$lib" real' EXIT
use_ffi_library "$python" "$lib" real

work=$REPO/target/tvm-ffi-examples
rm -rf "$work" && mkdir -p "$work" && cp -r target/tvm-ffi-sdist/examples "$work/src"
ex=$work/src
echo "-- building the examples against apache-tvm-ffi $TVM_FFI_VERSION (log: $work/build.log)"
{
  (cd "$ex/quickstart" && bash raw_compile.sh)
  (cd "$ex/stable_c_abi" && bash raw_compile.sh)
  (cd "$ex/python_packaging" &&
    "$python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --target "$work/site" .)
  (cd "$ex/abi_overview" && mkdir -p build &&
    gcc -std=c11 example_code.c $(tvm-ffi-config --cflags) $(tvm-ffi-config --ldflags) $(tvm-ffi-config --libs) \
      -Wl,-rpath,"$(tvm-ffi-config --libdir)" -Wl,-z,now -o build/abi_overview)
} >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

run() { # side [VAR=value...]: every example's output, in one file
  local side=$1
  shift
  {
    echo "== quickstart: C++ loader"
    (cd "$ex/quickstart" && env "$@" build/load_cpp)
    echo "== quickstart: Python with numpy"
    (cd "$ex/quickstart" && env "$@" "$python" load/load_numpy.py)
    echo "== stable_c_abi: C loader"
    (cd "$ex/stable_c_abi" && env "$@" build/load)
    echo
    echo "== python_packaging: run_example.py"
    (cd "$ex/python_packaging" && env "$@" PYTHONPATH="$work/site" "$python" run_example.py)
    echo "== abi_overview: loads"
    (cd "$ex/abi_overview" && env "$@" build/abi_overview && echo "exit 0")
  } >"$work/$side.txt" 2>&1 || { cat "$work/$side.txt"; echo "error: an example failed on the $side library" >&2; exit 1; }
}
run real
use_ffi_library "$python" "$lib" ours
run ours
run checked TVM_RUNTIME_CHECK_HANDLES=1
use_ffi_library "$python" "$lib" real

cat "$work/ours.txt"
for side in ours checked; do
  if ! diff -u "$work/real.txt" "$work/$side.txt"; then
    echo "error: tvm-ffi's examples print otherwise on this library ($side) than on the real one" >&2
    exit 1
  fi
done
echo "tvm-ffi's examples: quickstart, stable_c_abi, python_packaging, abi_overview print the same on this library (also with handles checked) as on the real libtvm_ffi.so"
