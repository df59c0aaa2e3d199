#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a while (libFuzzer).
#
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]
#
# Targets (fuzz/fuzz_targets/):
#   graph_json  Graph::parse -> Plan::new (every function a no-op) -> Executor::new -> run
#   params      load_params, and save_params/load_params round trip of what loads
#   blob        load_import_tree (the __tvm_dev_mblob) with a library of no-op kernels; factories
#               found in it are instantiated (plan + params) and run
#   elf         the ELF check of a shared library before dlopen (runtime::elf::check)
#   library_bin the __tvm_ffi__library_bin of a tvm-ffi release's library (load_library_bin), with
#               every binary loader reachable
#   relax_exec  vm::Executable::parse (Relax VM executables of both generations), then as_text,
#               stats and describe
#   rpc_session the RPC server's session on a stream of packets (rpc::session::Session::handle)
#   ffi_json    tvm-ffi's JSON text: parse, print, and printing is a fixed point
#   json_graph  tvm-ffi's JSON object graphs: load, save and load again to an equal value (equal
#               hashes), repr, deep copy
#   structural  structural equality and hashing, recursive comparison, repr and deep copy of two
#               values a small stack machine builds (containers, cycles through lists and dicts)
#   dlpack      DLPack import through tvm-ffi's C API (both managed tensor versions): refused
#               tensors stay the caller's, accepted ones keep their shape, export, delete once
#   kv_cache    the paged KV cache's bookkeeping: sequences added, removed, forked, popped, slid,
#               forward passes with token trees, attention (no-op kernels), commits; it empties
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and nightly compiler features. A nightly
# toolchain is not required: the default toolchain is used with RUSTC_BOOTSTRAP=1 (set
# FUZZ_TOOLCHAIN=nightly to use `cargo +nightly` instead). Builds use AddressSanitizer when the
# toolchain ships its runtime (librustc-*_rt.asan.a), otherwise no sanitizer (-s none); debug
# assertions and overflow checks are on either way. When cargo-fuzz or the nightly features are
# unavailable it prints why and exits 0.
#
# Corpora: the checked-in seeds in fuzz/corpus/<target>/ and the saved crashes in
# fuzz/regressions/<target>/ are read only (so every run re-checks old crashes first); what
# libFuzzer finds goes to fuzz/work/<target>/ (ignored by git). A crash, panic, leak or timeout fails the run (exit 1)
# and its input is copied to fuzz/regressions/<target>/ for a regression test.
#
# FUZZ_LIBFUZZER_ARGS adds libFuzzer flags (e.g. "-jobs=2 -workers=2", or "-malloc_limit_mb=..."
# with ASAN_OPTIONS=allocator_may_return_null=1 to explore past a known over-allocation).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
FUZZ="$REPO/fuzz"
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(graph_json params blob elf relax_exec library_bin rpc_session ffi_json json_graph structural dlpack kv_cache)

skip() {
  echo "fuzz: skipped: $*"
  exit 0
}

if ! cargo fuzz --version >/dev/null 2>&1; then
  skip "cargo-fuzz is not installed (install it with: cargo install cargo-fuzz)"
fi

cargo_cmd=(cargo)
if [ -n "${FUZZ_TOOLCHAIN:-}" ]; then
  cargo_cmd=(cargo "+$FUZZ_TOOLCHAIN")
else
  # Stable compilers accept nightly-only flags (-Z...) with RUSTC_BOOTSTRAP=1.
  export RUSTC_BOOTSTRAP=1
fi
if ! "${cargo_cmd[@]/cargo/rustc}" -Zunstable-options --print sysroot >/dev/null 2>&1; then
  skip "this toolchain does not accept nightly -Z flags (use a nightly toolchain or RUSTC_BOOTSTRAP=1)"
fi

host="$("${cargo_cmd[@]/cargo/rustc}" -vV | sed -n 's/^host: //p')"
sysroot="$("${cargo_cmd[@]/cargo/rustc}" --print sysroot)"
if ls "$sysroot/lib/rustlib/$host/lib/"librustc-*_rt.asan.a >/dev/null 2>&1; then
  sanitizer=address
else
  sanitizer=none
fi

echo "fuzz: $("${cargo_cmd[@]}" fuzz --version), $("${cargo_cmd[@]/cargo/rustc}" --version)" \
     "${RUSTC_BOOTSTRAP:+(RUSTC_BOOTSTRAP=1)}, sanitizer: $sanitizer, ${SECONDS_PER_TARGET}s per target"
cd "$FUZZ"
start=$SECONDS
if ! "${cargo_cmd[@]}" fuzz build -s "$sanitizer" >"$FUZZ/build.log" 2>&1; then
  cat "$FUZZ/build.log"
  if [ "$sanitizer" = address ] && grep -q 'sanitizer' "$FUZZ/build.log"; then
    echo "fuzz: the AddressSanitizer build failed; retrying without a sanitizer"
    sanitizer=none
    "${cargo_cmd[@]}" fuzz build -s none
  else
    echo "fuzz: build failed" >&2
    exit 1
  fi
fi
echo "fuzz: built all targets in $((SECONDS - start)) s"

failed=()
summary=()
for t in "${TARGETS[@]}"; do
  work="$FUZZ/work/$t"
  artifacts="$FUZZ/artifacts/$t"
  mkdir -p "$work" "$artifacts"
  dict=()
  [ -f "$FUZZ/dicts/$t.dict" ] && dict=("-dict=$FUZZ/dicts/$t.dict")
  log="$FUZZ/work/$t.log"
  echo "fuzz: $t for ${SECONDS_PER_TARGET}s (log: ${log#"$REPO"/})"
  rc=0
  # -rss_limit_mb: the targets bound their own allocations, so growth beyond this is a bug.
  # Inputs: the working corpus (written), the seeds and the saved regressions (read, run first).
  inputs=("$work" "$FUZZ/corpus/$t")
  [ -d "$FUZZ/regressions/$t" ] && inputs+=("$FUZZ/regressions/$t")
  "${cargo_cmd[@]}" fuzz run -s "$sanitizer" "$t" "${inputs[@]}" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" ${FUZZ_LIBFUZZER_ARGS:-} \
    >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)" || true
  cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -n 1)" || true
  if [ "$rc" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $rc); the end of its log:"
    tail -n 60 "$log"
    mkdir -p "$FUZZ/regressions/$t"
    for a in "$artifacts"/*; do
      [ -f "$a" ] || continue
      cp "$a" "$FUZZ/regressions/$t/"
      echo "fuzz: saved ${a#"$REPO"/} as fuzz/regressions/$t/$(basename "$a")"
    done
    failed+=("$t")
  fi
  summary+=("$(printf '%-11s %12s execs  %s%s' "$t" "${execs:-?}" "$cov" "$([ "$rc" -ne 0 ] && echo '  FAILED')")")
done

echo "fuzz: summary (${SECONDS_PER_TARGET}s per target, sanitizer: $sanitizer)"
printf '  %s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failures in: ${failed[*]}; inputs are in fuzz/regressions/" >&2
  exit 1
fi
