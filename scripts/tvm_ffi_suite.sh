#!/usr/bin/env bash
# tvm-ffi's own Python test suite (tests/python of the apache-tvm-ffi 0.1.15.post2 sdist) on the
# real libtvm_ffi.so and on this library put in its place, with the passed count per file side
# by side: how far this runtime is from being a drop-in libtvm_ffi.so (issue 33's target: every
# file that needs neither torch nor a GPU passes as on the real library).
#
#   bash scripts/tvm_ffi_suite.sh            # after `cargo build --release`
#   bash scripts/tvm_ffi_suite.sh --min N    # also fail when fewer than N pass on this library
#   bash scripts/tvm_ffi_suite.sh --jobs N   # N test files at a time (default 1)
#   TVM_FFI_PYTHON=python3 bash scripts/tvm_ffi_suite.sh
#       # an interpreter that already has apache-tvm-ffi 0.1.15.post2 and pytest (with torch
#       # and a GPU, the suite's torch and CUDA tests run too) instead of the cached venv
#
# Each test file runs in its own process (a crash costs that file only). The venv and the sdist
# are cached under target/ (first run: a minute of pip). The libraries are swapped with
# `tvm-rt ffi-swap`; the wheel's own is put back afterwards, whatever happens. This library
# runs twice: as it is, and with handles checked (TVM_RUNTIME_CHECK_HANDLES=1). Prints a table
# and the totals; exits 0 unless --min is given and either run of this library does not reach
# it (.ci/run keeps the count from going back).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
min=0
jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --min) min=${2:?--min needs a count}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a count}; shift 2 ;;
    *) echo "usage: $0 [--min N] [--jobs N]" >&2; exit 2 ;;
  esac
done
sdist=target/tvm-ffi-sdist
source scripts/lib.sh
ensure_ffi_release
# ninja: the tests that build C++ modules (tvm_ffi.cpp.load_inline, build) find it on PATH.
python=${TVM_FFI_PYTHON:-}
if [ -z "$python" ]; then
  python=$(tvm_ffi_venv)
  export PATH="$(dirname "$python"):$PATH"
fi
tvm_ffi_sdist "$python" tests/python
lib=$(tvm_ffi_library "$python")
trap 'use_ffi_library "$python" "$lib" real' EXIT

one_file() { # side file [VAR=value...]: one junit xml (a crash in one file costs that file alone)
  local side=$1 f=$2
  shift 2
  (cd "$sdist" && env "$@" timeout 600 "$python" -m pytest -q -p no:cacheprovider -o addopts= \
    --junitxml="$root/target/tvm-ffi-suite-$side/$(echo "${f%.py}" | tr / _).xml" "$f" >/dev/null 2>&1) || true
}
export -f one_file
export root sdist python

run() { # side [VAR=value...]: every test file, $jobs at a time
  local side=$1
  shift
  rm -rf "$root/target/tvm-ffi-suite-$side" && mkdir -p "$root/target/tvm-ffi-suite-$side"
  (cd "$sdist" && find tests/python -name 'test_*.py' | sort) |
    xargs -P "$jobs" -I{} bash -c 'one_file "$@"' _ "$side" {} "$@"
}
use_ffi_library "$python" "$lib" real
run real
use_ffi_library "$python" "$lib" ours
run ours
# Values that end tvm-ffi's own library (cycles, nesting 100 000 deep) must end in a value or a
# ValueError on ours.
echo "-- hostile values (tests/tvm_ffi_python) on this runtime's libtvm_ffi.so"
(cd "$root" && "$python" -m pytest -q -p no:cacheprovider tests/tvm_ffi_python)
# once more with handles checked (docs/checking-handles.md): the C++ objects of tvm-ffi's testing
# library and of the tests' own modules are foreign objects there
run checked TVM_RUNTIME_CHECK_HANDLES=1
use_ffi_library "$python" "$lib" real

MIN=$min "$python" - <<'PY'
import collections, os, xml.etree.ElementTree as ET

def cases(side):
    folder = f"target/tvm-ffi-suite-{side}"
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            yield from ET.parse(os.path.join(folder, name)).iter("testcase")
        except ET.ParseError:
            pass  # the file's process died before writing its report: nothing passed

def per_file(side):
    counts = collections.Counter()
    for case in cases(side):
        # classname is the module path (tests.python.test_x), then any test class (.TestY)
        parts = (case.get("classname") or "").split(".")
        name = next((p for p in parts if p.startswith("test_")), parts[-1]) + ".py"
        failed = any(c.tag in ("failure", "error", "skipped") for c in case)
        counts[name] += 0 if failed else 1
    return counts

real, ours, checked = per_file("real"), per_file("ours"), per_file("checked")
print(f"{'file':<44} {'real':>6} {'ours':>6} {'ours, handles checked':>22}")
for name in sorted(set(real) | set(ours) | set(checked)):
    print(f"{name:<44} {real[name]:>6} {ours[name]:>6} {checked[name]:>22}")
total = sum(real.values())
print(f"tvm-ffi suite: {sum(ours.values())} of {total} passed on this library (real libtvm_ffi.so: {total})")
print(f"tvm-ffi suite, handles checked: {sum(checked.values())} of {total} passed on this library")
floor = int(os.environ["MIN"])
for what, counts in (("", ours), (" with handles checked", checked)):
    if sum(counts.values()) < floor:
        raise SystemExit(f"tvm-ffi suite: {sum(counts.values())} passed on this library{what}, fewer than the {floor} required")
PY
