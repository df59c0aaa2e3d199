#!/usr/bin/env bash
# apache-tvm 0.27's own runtime and Relax VM tests (third_party/tvm_tests: apache/tvm's files,
# unchanged) on this runtime's libtvm_ffi.so under the wheel's libtvm_runtime.so: each file in
# its own pytest process, first on the wheel's own libtvm_ffi.so, then on ours (`tvm-rt
# ffi-swap`, restored whatever happens). Fails when a test that passes on the wheel's library
# fails on ours, or when fewer than the floor pass on ours.
#
#   bash scripts/tvm027_suite.sh [--min N]     # after `cargo build --release`
#
# Uses the apache-tvm 0.27 venv of scripts/lib.sh (tvm027_venv, under target/), with pytest.
# Tests named *rpc* are deselected (see third_party/tvm_tests/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
min=0
while [ $# -gt 0 ]; do
  case $1 in
    --min) min=$2; shift 2 ;;
    *) echo "usage: $0 [--min N]" >&2; exit 2 ;;
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
    (cd "$suite" && env -u CI timeout 900 "$REPO/$python" -m pytest -q -rA \
      -p no:cacheprovider -k "not rpc" "$f") >"$log" 2>&1 || rc=$?
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

echo "-- on the wheel's libtvm_ffi.so"
use_ffi_library "$python" "$lib" real
run real
echo "-- on this runtime's libtvm_ffi.so (tvm-rt ffi-swap)"
use_ffi_library "$python" "$lib" ours
run ours
use_ffi_library "$python" "$lib" real

real=$(wc -l <"$out/real.passed") ours=$(wc -l <"$out/ours.passed")
lost=$(comm -23 "$out/real.passed" "$out/ours.passed")
echo "apache-tvm 0.27's runtime tests: $ours passed on this runtime's libtvm_ffi.so, $real on the wheel's"
if [ -n "$lost" ]; then
  echo "passed on the wheel's library, not on ours:"
  echo "$lost" | sed 's/^/  /'
  exit 1
fi
if [ "$ours" -lt "$min" ]; then
  echo "fewer than the floor of $min passed on ours"
  exit 1
fi
