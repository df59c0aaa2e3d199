#!/usr/bin/env bash
# apache-tvm 0.27's own Python runtime on this library: `import tvm` (apache-tvm's
# libtvm_runtime.so, built on tvm-ffi, loaded over the libtvm_ffi.so of its tvm_ffi package),
# then every case of tests/data/relax-0.27 through tvm.runtime.load_module and
# relax.VirtualMachine, outputs against apache-tvm's recorded ones: first on the wheel's own
# library, then with target/release/libtvm_ffi.so in its place (put back afterwards, whatever
# happens). Uses the apache-tvm 0.27 venv of scripts/rpc_027_host.sh (made there, or here once).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/tvm027-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tvm, numpy' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q apache-tvm==0.27.0.post1 apache-tvm-ffi==0.1.15.post2 numpy
fi
ours=target/release/libtvm_ffi.so
[ -f "$ours" ] || cargo build --release
lib=$("$venv/bin/python" -c "import importlib.util, os; print(os.path.join(importlib.util.find_spec('tvm_ffi').submodule_search_locations[0], 'lib', 'libtvm_ffi.so'))")
backup="$lib.real"
[ -f "$backup" ] || cp "$lib" "$backup"
trap 'cp "$backup" "$lib"' EXIT
echo "-- on the wheel's libtvm_ffi.so"
cp "$backup" "$lib"
"$venv/bin/python" tests/tvm027_runtime/run_relax_cases.py tests/data/relax-0.27 real
echo "-- on this library's libtvm_ffi.so"
cp "$ours" "$lib"
"$venv/bin/python" tests/tvm027_runtime/run_relax_cases.py tests/data/relax-0.27 ours
