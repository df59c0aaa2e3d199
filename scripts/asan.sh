#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) on the C tests.
#
#   scripts/asan.sh [extra ctest args, e.g. -R test_ndarray]
#
# The C tests and the model libraries they load are compiled with
#   -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# (CMake cache variable TVM_RUNTIME_SANITIZE) and linked against the normal release build of
# libtvm_runtime.so. The Rust code itself is not instrumented, but the ASan runtime replaces
# malloc/posix_memalign/free for the whole process, so
#   - C code (tests, kernels) reading or writing outside memory the library allocated, or using
#     it after the library freed it, is reported;
#   - bad frees and double frees done by the library are reported;
#   - LeakSanitizer tracks the library's allocations too: leaks of Rust allocations are reported
#     at exit (detect_leaks=1), with the allocating Rust frames in the stack.
# Out-of-bounds accesses made by Rust code itself are not checked here; the fuzzers
# (scripts/fuzz.sh) are instrumented, and ASAN_RUST_TESTS=1 also runs the library's Rust tests
# with the Rust code instrumented (see the end of this script).
#
# The sanitizer_canary_* ctests (c_tests/sanitize/canary.c) commit deliberate errors and pass only
# if the sanitizer reports them: proof that the runtime is linked and sees the library's memory.
#
# Build directory: target/sanitize/asan. Exits non-zero on any report or test failure.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

BUILD="$REPO/target/sanitize/asan"
configure_c_tests "$BUILD" -DTVM_RUNTIME_SANITIZE=address,undefined

probe="$BUILD/c_tests/test_smoke"
linked="$(ldd "$probe")"
if ! echo "$linked" | grep -q 'libasan'; then
  echo "error: $probe is not linked with libasan:" >&2
  echo "$linked" >&2
  exit 1
fi
if ! echo "$linked" | grep -q 'libubsan'; then
  echo "error: $probe is not linked with libubsan" >&2
  exit 1
fi
echo "-- $(basename "$probe") links $(echo "$linked" | grep -oE 'lib(asan|ubsan)\.so[^ ]*' | sort -u | tr '\n' ' ')"

export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:fast_unwind_on_malloc=0:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:detect_invalid_pointer_pairs=0:exitcode=23${ASAN_EXTRA_OPTIONS:+:$ASAN_EXTRA_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=24"
export LSAN_OPTIONS="exitcode=23"
export LD_LIBRARY_PATH="$(test_env_ld_path)"
echo "-- ASAN_OPTIONS=$ASAN_OPTIONS"
echo "-- UBSAN_OPTIONS=$UBSAN_OPTIONS"
echo "-- ctest (every C test, plus the sanitizer canaries that must be reported)"
cd "$BUILD"
ctest --output-on-failure -j "$JOBS" "$@"
echo "asan: all C tests clean under ASan+UBSan+LSan; canaries reported as expected"

if [ "${ASAN_RUST_TESTS:-0}" = 1 ]; then
  # The Rust code instrumented too (stable + RUSTC_BOOTSTRAP=1 accepts -Zsanitizer=address; std
  # stays uninstrumented): the library's unit tests and the Rust integration tests, except
  # c_api and exports, which load the cdylib from C / by dlopen and cannot use an instrumented
  # one. allocator_may_return_null=1 because tests/corpus.rs asks for impossible allocations on
  # purpose and expects an error, not ASan's abort. scripts/lsan.supp: a deliberate test leak.
  tests=()
  for f in "$REPO"/tests/*.rs; do
    t="$(basename "$f" .rs)"
    case "$t" in c_api|exports) ;; *) tests+=(--test "$t") ;; esac
  done
  host="$(rustc -vV | sed -n 's/^host: //p')"
  echo "-- ASAN_RUST_TESTS=1: cargo test --lib ${tests[*]} with -Zsanitizer=address"
  cd "$REPO"
  RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zsanitizer=address" \
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:detect_stack_use_after_return=1" \
  LSAN_OPTIONS="suppressions=$REPO/scripts/lsan.supp" \
    cargo test --quiet --no-fail-fast --target "$host" --target-dir "$REPO/target/sanitize/asan-rust" \
      --lib "${tests[@]}"
  echo "asan: Rust tests clean under ASan+LSan"
fi
