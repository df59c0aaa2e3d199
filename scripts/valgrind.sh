#!/usr/bin/env bash
# Valgrind memcheck on every C test program (the ctests of c_tests/, uninstrumented build).
#
#   scripts/valgrind.sh [name regex, default: all]
#
# Each program runs under
#   valgrind --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=1
# so invalid reads/writes, uses of uninitialised values, bad frees and definite or indirect
# leaks fail it (Rust code included: valgrind sees every instruction). "Still reachable" and
# "possibly lost" blocks are not errors: the Rust runtime keeps process-lifetime state (the
# global function registry, thread-local error/return buffers, the thread pool whose workers are
# never joined) that is legitimately alive at exit. scripts/valgrind.supp: leaks inside PoCL, the
# CPU OpenCL platform test_opencl runs on (its own allocations, not this runtime's).
#
# Build directory: target/sanitize/plain. Logs: target/sanitize/plain/valgrind/<test>.log.
# Exits non-zero if any program fails or has a memcheck error.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind: not installed (apt-get install valgrind); skipped"
  exit 0
fi

BUILD="$REPO/target/sanitize/plain"
FILTER="${1:-.}"
configure_c_tests "$BUILD"
export LD_LIBRARY_PATH="$(test_env_ld_path)"

LOGS="$BUILD/valgrind"
rm -rf "$LOGS"
mkdir -p "$LOGS"
# Every ctest runs the program of its own name from the c_tests build directory.
mapfile -t tests < <(cd "$BUILD" && ctest -N | sed -n 's/^ *Test *#[0-9]*: *//p' | grep -E -- "$FILTER")
if [ "${#tests[@]}" -eq 0 ]; then
  echo "error: no ctest matches '$FILTER'" >&2
  exit 1
fi

failed=()
cd "$BUILD/c_tests"
for t in "${tests[@]}"; do
  start=$SECONDS
  if valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
      --errors-for-leak-kinds=definite,indirect --error-exitcode=99 --num-callers=40 \
      --track-origins=yes --suppressions="$REPO/scripts/valgrind.supp" --log-file="$LOGS/$t.log" "./$t" >"$LOGS/$t.out" 2>&1; then
    echo "-- $t: clean ($((SECONDS - start)) s)"
  else
    rc=$?
    if [ "$rc" -eq 99 ]; then
      echo "-- $t: MEMCHECK ERRORS ($((SECONDS - start)) s):"
    else
      echo "-- $t: FAILED with exit status $rc under valgrind ($((SECONDS - start)) s):"
      tail -n 20 "$LOGS/$t.out"
    fi
    cat "$LOGS/$t.log"
    failed+=("$t")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "valgrind: ${#failed[@]} of ${#tests[@]} programs failed: ${failed[*]} (logs in $LOGS)"
  exit 1
fi
echo "valgrind: ${#tests[@]} programs, no memory errors, no definite or indirect leaks"
