#!/usr/bin/env bash
# apache-tvm 0.27's own Python runtime on this library: `import tvm` (apache-tvm's
# libtvm_runtime.so, built on tvm-ffi, loaded over the libtvm_ffi.so of its tvm_ffi package),
# then every case of tests/data/relax-0.27 through tvm.runtime.load_module and
# relax.VirtualMachine, outputs against apache-tvm's recorded ones, and apache-tvm's compiler
# itself (tests/tvm027_runtime/compile_and_run.py: tvm.compile, run, against numpy): first on the wheel's own
# library, then with this runtime's in its place, put there and back by `tvm-rt ffi-swap` (as a
# user would; restored whatever happens), and once more with handles checked
# (TVM_RUNTIME_CHECK_HANDLES=1: apache-tvm's C++ makes most objects itself, which the checked
# mode must take as foreign objects). Last, the language-model builtins (tests/tvm027_runtime/
# lm_builtins.py) on the wheel's runtime and on this one as both libraries, and the paged KV
# cache (apache/tvm's test of it; a tiny language model through apache-tvm's Python and tvmrt).
# Uses the apache-tvm 0.27 venv scripts/rpc_027_host.sh
# uses too (scripts/lib.sh's tvm027_venv: made once, by either).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
venv=target/tvm027-venv
tvm027_venv "$venv" 0.1.15.post2
[ -f target/release/libtvm_ffi.so ] && [ -x target/release/tvm-rt ] || cargo build --release
# The real library's structural walks and mutations of TVM's IR, which ours must repeat.
trace=target/tvm027-structure-trace.json
swap() { target/release/tvm-rt ffi-swap --python "$venv/bin/python" "$@" >/dev/null; }
trap 'swap --restore 2>/dev/null || true' EXIT
echo "-- on the wheel's libtvm_ffi.so"
# The README's run of a Relax model, which must print the same on ours (below).
"$venv/bin/python" examples/tvm_ffi/run_relax.py >target/tvm027-readme-run.txt
"$venv/bin/python" tests/tvm027_runtime/run_relax_cases.py tests/data/relax-0.27 real
"$venv/bin/python" tests/tvm027_runtime/compile_and_run.py real "$trace"
echo "-- on this library's libtvm_ffi.so (tvm-rt ffi-swap)"
swap
"$venv/bin/python" examples/tvm_ffi/run_relax.py | diff -u target/tvm027-readme-run.txt -
echo "README's examples/tvm_ffi/run_relax.py: the same output as on the wheel's library"
"$venv/bin/python" tests/tvm027_runtime/run_relax_cases.py tests/data/relax-0.27 ours
"$venv/bin/python" tests/tvm027_runtime/compile_and_run.py ours "$trace"
echo "-- the same, handles checked"
TVM_RUNTIME_CHECK_HANDLES=1 "$venv/bin/python" tests/tvm027_runtime/run_relax_cases.py tests/data/relax-0.27 ours
TVM_RUNTIME_CHECK_HANDLES=1 "$venv/bin/python" tests/tvm027_runtime/compile_and_run.py ours "$trace"
# OpenCL Relax models (tests/data/opencl-0.27) with tvm.opencl(): the wheel's libraries, built
# without OpenCL, cannot load them; this runtime as both libraries runs them (runtime-only).
echo "-- OpenCL Relax models on tvm.opencl(): this runtime as both libraries (runtime-only)"
swap --restore
"$venv/bin/python" tests/tvm027_runtime/run_opencl.py tests/data/opencl-0.27 real
swap --tvm-runtime
TVM_USE_RUNTIME_LIB=1 "$venv/bin/python" tests/tvm027_runtime/run_opencl.py tests/data/opencl-0.27 ours
# The language-model builtins (src/lm/): apache/tvm's own tests of the older KV cache and the
# tensor cache, and seeded calls of samplers, penalties, softmax and both caches, recorded on the
# wheel's runtime and compared bit for bit on this runtime as both libraries (runtime-only).
echo "-- language-model builtins: the wheel's runtime, then this runtime as both libraries"
swap --restore
TVM_USE_RUNTIME_LIB=1 "$venv/bin/python" tests/tvm027_runtime/lm_builtins.py record target/tvm027-lm-builtins.json
swap --tvm-runtime
TVM_USE_RUNTIME_LIB=1 "$venv/bin/python" tests/tvm027_runtime/lm_builtins.py check target/tvm027-lm-builtins.json
# The paged KV cache: apache/tvm's own test of it (unchanged, runtime-only; its kernels built by the
# wheel's compiler as the test builds them: tests/data/lm-0.27/make_paged_kv.py), then the tiny
# language model of tests/data/lm-0.27/tiny_llm (apache-tvm's nn.llm) generating on the wheel's
# runtime, then on this one through apache-tvm's Python and through tvmrt: the same tokens and
# logits. (The test's per-layer sliding window case reads slots no token was written to and is
# flaky on the wheel's own runtime, whose pages are not zeroed; on this runtime they are.)
echo "-- the paged KV cache: apache/tvm's test of it, and a tiny language model (runtime-only)"
swap --restore
"$venv/bin/python" tests/data/lm-0.27/make_paged_kv.py target/lm-paged-kv
TVM_USE_RUNTIME_LIB=1 "$venv/bin/python" tests/tvm027_runtime/tiny_llm.py run tests/data/lm-0.27/tiny_llm target/tiny-llm-wheel.json
swap --tvm-runtime
(cd tests/tvm027_runtime && PAGED_KV_KERNELS="$PWD/../../target/lm-paged-kv/manifest.json" TVM_USE_RUNTIME_LIB=1 \
  "../../$venv/bin/python" -m pytest -q -p paged_kv_runtime_only -p no:cacheprovider \
  ../../third_party/tvm_tests/tests/python/relax/test_runtime_builtin_paged_attention_kv_cache_cpu.py)
TVM_USE_RUNTIME_LIB=1 "$venv/bin/python" tests/tvm027_runtime/tiny_llm.py run tests/data/lm-0.27/tiny_llm target/tiny-llm-ours.json
"$venv/bin/python" tests/tvm027_runtime/tiny_llm.py compare target/tiny-llm-wheel.json target/tiny-llm-ours.json
swap --restore
PYTHONPATH=python "$venv/bin/python" tests/tvm027_runtime/tiny_llm.py run tests/data/lm-0.27/tiny_llm target/tiny-llm-tvmrt.json tvmrt
"$venv/bin/python" tests/tvm027_runtime/tiny_llm.py compare target/tiny-llm-wheel.json target/tiny-llm-tvmrt.json
