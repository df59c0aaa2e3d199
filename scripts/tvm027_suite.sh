#!/usr/bin/env bash
# apache-tvm 0.27's own runtime and Relax VM tests (third_party/tvm_tests: apache/tvm's files,
# unchanged) on this runtime, each file in its own pytest process, in two pairs:
#   1. this runtime's libtvm_ffi.so under the wheel's libtvm_runtime.so and compiler, against
#      the wheel's own libraries;
#   2. runtime-only (TVM_USE_RUNTIME_LIB=1), this runtime as both libraries (`tvm-rt ffi-swap
#      --tvm-runtime`), against the wheel's own runtime-only.
# Libraries are swapped by `tvm-rt ffi-swap` and restored whatever happens. Fails when a test
# that passes on the wheel's libraries fails on ours, or when fewer than a floor pass on ours.
#
#   bash scripts/tvm027_suite.sh [--min N] [--min-both N]     # after `cargo build --release`
#
# Uses the apache-tvm 0.27 venv of scripts/lib.sh (tvm027_venv, under target/), with pytest.
# Tests named *rpc* are deselected (see third_party/tvm_tests/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
min=0 min_both=0
while [ $# -gt 0 ]; do
  case $1 in
    --min) min=$2; shift 2 ;;
    --min-both) min_both=$2; shift 2 ;;
    *) echo "usage: $0 [--min N] [--min-both N]" >&2; exit 2 ;;
  esac
done
venv=target/tvm027-venv
tvm027_venv "$venv" 0.1.15.post2
"$venv/bin/python" -c 'import pytest' 2>/dev/null || "$venv/bin/pip" install -q --disable-pip-version-check pytest
ensure_ffi_release
python=$venv/bin/python
lib=$(tvm_ffi_library "$python")
trap 'use_ffi_library "$python" "$lib" real' EXIT
out=target/tvm027-suite
rm -rf "$out" && mkdir -p "$out"
suite=third_party/tvm_tests/tests/python
files=$(cd "$suite" && ls relax/test_vm_*.py relax/test_runtime_builtin.py runtime/test_runtime_*.py)

# run <label>: every file, its passed tests into $out/<label>.passed
run() {
  : >"$out/$1.passed"
  for f in $files; do
    log="$out/$1.$(echo "$f" | tr / _).log"
    # CI=true would make apache/tvm's conftest install a request hook it does not ship here
    rc=0
    # -p pytest_seeded: the same random inputs on both libraries (see scripts/pytest_seeded.py)
    (cd "$suite" && env -u CI PYTHONPATH="$REPO/scripts" timeout 900 "$REPO/$python" -m pytest \
      -q -rA -p no:cacheprovider -p pytest_seeded -k "not rpc" "$f") >"$log" 2>&1 || rc=$?
    grep -E '^PASSED ' "$log" | cut -d' ' -f2 >>"$out/$1.passed" || true
    # pytest's exit codes 0-5 end with its summary; anything else is the process dying (a crash
    # or the time limit), which leaves no summary and counts the file's tests as not passed
    if [ "$rc" -le 5 ]; then
      echo "  $1 $f: $(tail -1 "$log")"
    else
      echo "  $1 $f: the process died (exit $rc; log: $log)"
    fi
  done
  sort -o "$out/$1.passed" "$out/$1.passed"
}

# compare <wheel's label> <ours' label> <floor> <what ours is>: 1 when ours lost a test or is
# under the floor
compare() {
  local real ours lost
  real=$(wc -l <"$out/$1.passed") ours=$(wc -l <"$out/$2.passed")
  lost=$(comm -23 "$out/$1.passed" "$out/$2.passed")
  echo "apache-tvm 0.27's runtime tests: $ours passed on $4, $real on the wheel's"
  if [ -n "$lost" ]; then
    echo "passed on the wheel's libraries, not on ours:"
    echo "$lost" | sed 's/^/  /'
    return 1
  fi
  if [ "$ours" -lt "$3" ]; then
    echo "fewer than the floor of $3 passed on ours"
    return 1
  fi
}

echo "-- on the wheel's libraries"
use_ffi_library "$python" "$lib" real
run real
echo "-- on this runtime's libtvm_ffi.so (tvm-rt ffi-swap)"
use_ffi_library "$python" "$lib" ours
run ours
use_ffi_library "$python" "$lib" real
export TVM_USE_RUNTIME_LIB=1
echo "-- runtime-only, on the wheel's libraries"
run real-rt
echo "-- runtime-only, this runtime as both (tvm-rt ffi-swap --tvm-runtime)"
use_ffi_library "$python" "$lib" both
run both
use_ffi_library "$python" "$lib" real

status=0
compare real ours "$min" "this runtime's libtvm_ffi.so" || status=1
compare real-rt both "$min_both" "this runtime as both libraries (runtime-only)" || status=1
exit $status
