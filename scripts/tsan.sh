#!/usr/bin/env bash
# ThreadSanitizer on the C tests, chiefly the concurrent ones (test_graph_executor: 4 threads
# running executors of one factory plus two threads contending for one executor;
# test_packed_func: 8 threads calling string-returning functions; test_module: parallel kernels
# with barriers; test_streams: 4 threads each chaining copies through 2 streams and 2 events,
# 500 rounds, reading the data after every round; test_pipeline: 4 threads submitting to one
# request pipeline, callbacks on its threads, frees with requests in flight; test_async_phases:
# an executor's copies and runs on stream workers, ordered by events, with the host reading and
# refilling its tensors meanwhile; test_rpc_server: four RPC sessions served at once, each on its
# own thread over a socket pair; test_tvm_ffi_threads: 4 threads sharing tvm-ffi arrays, maps,
# a tensor, functions made on other threads, and appending to one List and one Dict).
#
#   scripts/tsan.sh [extra ctest args, e.g. -R test_graph_executor]
#   TSAN_MODE=c-only|full|auto (default auto)
#
# The C tests and the model libraries are always built with -fsanitize=thread (CMake cache
# variable TVM_RUNTIME_SANITIZE=thread). What happens to the Rust library decides the mode:
#
# c-only (works on stable; what CI runs). libtvm_runtime.so is the normal, UNINSTRUMENTED release
#   build, so TSan sees only the C side:
#   - it checks every memory access made by C code (tests, kernels) on every thread, including
#     accesses to memory the library hands out (arrays, strings, errors, workspaces);
#   - it does NOT see the library's own accesses nor its synchronisation (Rust's Mutex, RwLock,
#     atomics and the thread pool's launch/barrier/join use atomics and futexes, not pthreads).
#     Races inside the library are out of reach in this mode.
#   Because of that blindness, two classes of reports are false and are suppressed
#   (scripts/tsan.supp explains each): memcpy/free called by the library (called_from_lib), and
#   accesses by kernel tasks of TVMBackendParallelLaunch (ordered by the pool's atomics).
#   What remains checked: C threads sharing data through the API without the library's internal
#   synchronisation standing in between. For test_streams that is little: the copies a stream
#   runs are the library's memcpy on the stream's worker thread, invisible here, so only full
#   mode checks that synchronizing a stream or an event orders the copies before the reads.
#
# full (auto-selected when a toolchain with nightly features and the rust-src component is
#   available, e.g. `rustup +nightly component add rust-src`): the library AND the Rust standard
#   library are rebuilt with -Zsanitizer=thread -Zbuild-std (target/sanitize/tsan-rust), so TSan
#   sees the pool, the locks, the reference counts and every access the library makes (for
#   test_streams: each stream worker's copies against the test's fills and reads, ordered only
#   by TVMSynchronize, TVMEventSynchronize/Query and the waits between streams). Nothing about
#   the library is suppressed; scripts/tsan-full.supp lists only known races in the tests.
#   rustc's instrumentation calls __tsan_memcpy/memmove/memset, which GCC's libtsan lacks;
#   scripts/tsan_memfns.c provides them. The static_link test is linked against the instrumented
#   static library too. Then the library's unit tests and the threaded Rust tests (see below)
#   run on the same instrumented build (TSAN_RUST_TESTS=0 skips them).
#
# The sanitizer_canary_data_race ctest must report a deliberate race, proving TSan is active.
# Build directories: target/sanitize/tsan (c-only), target/sanitize/tsan-full (full). Exits
# non-zero on any report or test failure; if TSan cannot run here at all, says so and exits 0.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

MODE="${TSAN_MODE:-auto}"
host="$(rustc -vV | sed -n 's/^host: //p')"

# A toolchain that can rebuild std with TSan: nightly features (nightly, or RUSTC_BOOTSTRAP=1)
# plus rust-src.
full_toolchain=""
has_rust_src() {
  local sysroot
  sysroot="$(rustc "$@" --print sysroot 2>/dev/null)" || return 1
  [ -d "$sysroot/lib/rustlib/src/rust/library/std" ]
}
if [ "$MODE" != c-only ]; then
  if rustup toolchain list 2>/dev/null | grep -q '^nightly' && has_rust_src +nightly; then
    full_toolchain=+nightly
  elif has_rust_src; then
    full_toolchain=bootstrap
  fi
  if [ -z "$full_toolchain" ]; then
    if [ "$MODE" = full ]; then
      echo "error: TSAN_MODE=full needs the rust-src component (rustup +nightly component add rust-src)" >&2
      exit 1
    fi
    MODE=c-only
  else
    MODE=full
  fi
fi

if [ "$MODE" = full ]; then
  BUILD="$REPO/target/sanitize/tsan-full"
  RUST_TARGET_DIR="$REPO/target/sanitize/tsan-rust"
  mkdir -p "$BUILD"
  echo "-- mode full: building libtvm_runtime and std with -Zsanitizer=thread -Zbuild-std ($full_toolchain)"
  cargo_cmd=(cargo)
  if [ "$full_toolchain" = bootstrap ]; then export RUSTC_BOOTSTRAP=1; else cargo_cmd+=("$full_toolchain"); fi
  (cd "$REPO" && RUSTFLAGS="-Zsanitizer=thread" "${cargo_cmd[@]}" build --quiet --release --lib \
     -Zbuild-std --target "$host" --target-dir "$RUST_TARGET_DIR")
  cc -O1 -shared -fPIC -o "$BUILD/libtsan_memfns.so" "$REPO/scripts/tsan_memfns.c"
  export TVM_RUNTIME_LIB_DIR="$RUST_TARGET_DIR/$host/release"
  configure_c_tests "$BUILD" -DTVM_RUNTIME_SANITIZE=thread \
    "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--no-as-needed $BUILD/libtsan_memfns.so -Wl,--as-needed"
  SUPP="$REPO/scripts/tsan-full.supp"
else
  echo "-- mode c-only: the library is the normal release build (uninstrumented)"
  BUILD="$REPO/target/sanitize/tsan"
  configure_c_tests "$BUILD" -DTVM_RUNTIME_SANITIZE=thread
  SUPP="$REPO/scripts/tsan.supp"
fi

probe="$BUILD/c_tests/test_smoke"
linked="$(ldd "$probe")"
if ! echo "$linked" | grep -q 'libtsan'; then
  echo "error: $probe is not linked with libtsan:" >&2
  echo "$linked" >&2
  exit 1
fi
echo "-- $(basename "$probe") links $(echo "$linked" | grep -oE 'libtsan\.so[^ ]*')"
if [ "$MODE" = full ]; then
  lib="$(echo "$linked" | sed -n 's/.*libtvm_runtime\.so => \([^ ]*\).*/\1/p')"
  n="$(nm -D --undefined-only "$lib" | grep -c '__tsan_read\|__tsan_write' || true)"
  if [ "$lib" != "$TVM_RUNTIME_LIB_DIR/libtvm_runtime.so" ] || [ "$n" -eq 0 ]; then
    echo "error: the tests load $lib, which is not the instrumented library" >&2
    exit 1
  fi
  echo "-- the tests load the instrumented $lib ($n kinds of __tsan_read/__tsan_write calls)"
fi

export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=7:suppressions=$SUPP${TSAN_EXTRA_OPTIONS:+:$TSAN_EXTRA_OPTIONS}"
export LD_LIBRARY_PATH="$(test_env_ld_path)"
echo "-- TSAN_OPTIONS=$TSAN_OPTIONS"

# TSan needs a memory layout it knows; some kernels' ASLR settings break it. Retry without ASLR.
runner=()
if ! out="$("$probe" 2>&1)"; then
  if echo "$out" | grep -q 'ThreadSanitizer: unexpected memory mapping\|FATAL: ThreadSanitizer' &&
     setarch "$(uname -m)" -R true 2>/dev/null &&
     setarch "$(uname -m)" -R "$probe" >/dev/null 2>&1; then
    echo "-- TSan needs ASLR off here: running the tests under setarch -R"
    runner=(setarch "$(uname -m)" -R)
  elif echo "$out" | grep -q 'ThreadSanitizer'; then
    echo "tsan: skipped: ThreadSanitizer cannot run on this machine:"
    echo "$out" | head -n 5
    exit 0
  else
    echo "$out"
    echo "error: $probe failed" >&2
    exit 1
  fi
fi

echo "-- ctest (every C test, plus the data-race canary that must be reported)"
(cd "$BUILD" && "${runner[@]}" ctest --output-on-failure -j "$JOBS" "$@")

if [ "$MODE" = full ] && [ "${TSAN_RUST_TESTS:-1}" = 1 ]; then
  # The same instrumented build runs the library's own unit tests, tests/concurrency.rs,
  # tests/inter_op.rs, tests/async_phases.rs, tests/pipeline.rs, tests/buckets.rs and
  # tests/buckets_models.rs and tests/rpc.rs (threads through the C API from Rust; the inter-op
  # scheduler; stages on stream workers; the request pipeline's streams, contexts, callbacks and
  # shutdown; bucketed contexts on threads over one bucket set; RPC servers on their threads,
  # stopped by a flag, with clients on the test threads), tests/lm_decode.rs (a language model
  # decoding on two threads, each with its own paged KV cache) and tests/opencl.rs (OpenCL streams,
  # events and host tasks from several threads, on PoCL where installed), with rustc's TSan runtime.
  # TSAN_RUST_TESTS=0 skips.
  echo "-- the library's unit tests and the concurrent Rust tests under TSan (TSAN_RUST_TESTS=0 skips)"
  (cd "$REPO" && RUSTFLAGS="-Zsanitizer=thread" "${runner[@]}" "${cargo_cmd[@]}" test --quiet --release \
     -Zbuild-std --target "$host" --target-dir "$RUST_TARGET_DIR" --lib --test concurrency --test inter_op \
     --test async_phases --test pipeline --test buckets --test buckets_models --test rpc --test opencl \
     --test lm_decode)
fi
echo "tsan ($MODE): no data races reported; canary reported as expected"
