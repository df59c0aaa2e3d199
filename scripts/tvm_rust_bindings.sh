#!/usr/bin/env bash
# TVM's Rust bindings (the `tvm-rt` crate, with `tvm-sys` under it) run their own unit tests
# against this runtime: the crates from crates.io, built against the release library here.
#
#   scripts/tvm_rust_bindings.sh            fetch, build and run (minutes the first time)
#
# What the published crates need, and what this script gives them:
# - tvm-sys runs bindgen over TVM's C headers at `$TVM_HOME/include` and
#   `$TVM_HOME/3rdparty/dlpack/include`, and links `-ltvm` from `$TVM_HOME/build`. The published
#   release (tvm-sys 0.1.1-alpha, tvm-rt 0.1.0-alpha) predates DLPack's rename of `DLContext` to
#   `DLDevice` (and TVM's `TVMContext`/`kTVMContext`/`v_ctx`, `DLTensor::ctx`, `kDLGPU`), so
#   `TVM_HOME` here is a directory made from this repository's headers with those old names put
#   back (the same structs and values, only renamed) and `build/libtvm.so` pointing at
#   `libtvm_runtime.so`.
# - tvm-sys's build script falls back to cloning and building TVM with the `tvm-build` crate
#   when `TVM_HOME` is unset; every tvm-build 0.1 release depends on yanked crates, so it is
#   replaced by a small crate whose `build` only reports that TVM_HOME is needed (it is never
#   called here).
# - bindgen needs libclang (any libclang.so*; `apt-get install libclang1-14`) and the C
#   compiler's builtin headers (`stddef.h`, taken from `cc -print-file-name=include`).
#
# Four of the crate's 25 tests are skipped: they call `node.Array`, `node.ArrayGetItem`,
# `node.ArraySize`, `node.Map*` and `ir.DebugPrint`, which TVM registers in its compiler library
# (libtvm.so), not in its runtime; a runtime-only library (TVM's libtvm_runtime.so or this one)
# has the containers as `runtime.Array`, `runtime.Map`, ... .
#
# Skips (exit 0, saying why) when the crates cannot be fetched or libclang is missing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

WORK="${TVM_RT_WORK:-$REPO/target/tvm-rust-bindings}"
SKIPPED_TESTS=(
  array::tests::create_array_and_get
  array::tests::downcast
  map::test::test_from_into_hash_map
  string::tests::test_string_debug
)

skip() {
  echo "tvm-rust-bindings: skipped: $*"
  exit 0
}

find_libclang() {
  local d
  for d in ${LIBCLANG_PATH:-} /usr/lib/llvm-*/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
    for f in "$d"/libclang.so "$d"/libclang-*.so "$d"/libclang.so.* "$d"/libclang-*.so.*; do
      [ -f "$f" ] && { echo "$f"; return 0; }
    done
  done
  return 1
}

# The stand-in for tvm-build (see above).
write_tvm_build_stand_in() {
  local dir="$1"
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<'EOF'
[package]
name = "tvm-build"
version = "0.1.99"
edition = "2018"

[dependencies]
anyhow = "1"
EOF
  cat >"$dir/src/lib.rs" <<'EOF'
//! The part of tvm-build's API that tvm-sys's build script names; it only runs without TVM_HOME.
use std::path::PathBuf;

#[derive(Default)]
pub struct BuildConfig {
    pub repository: Option<String>,
    pub branch: Option<String>,
}

pub struct Revision;

impl Revision {
    pub fn source_path(&self) -> PathBuf {
        PathBuf::new()
    }
    pub fn build_path(&self) -> PathBuf {
        PathBuf::new()
    }
}

pub struct BuildResult {
    pub revision: Revision,
}

pub fn build(_config: BuildConfig) -> anyhow::Result<BuildResult> {
    anyhow::bail!("TVM_HOME is not set: this stand-in for tvm-build does not clone or build TVM")
}
EOF
}

# sed over one header, failing when an expected name is gone (the header changed).
rename_in() {
  local src="$1" dst="$2" must="$3"
  shift 3
  grep -q "$must" "$src" || { echo "error: $src no longer has '$must'" >&2; exit 1; }
  mkdir -p "$(dirname "$dst")"
  sed "$@" "$src" >"$dst"
}

# TVM_HOME for tvm-sys: this repository's headers under the pre-DLDevice names.
make_tvm_home() {
  local home="$1" inc="$REPO/include"
  rm -rf "$home"
  rename_in "$inc/dlpack/dlpack.h" "$home/3rdparty/dlpack/include/dlpack/dlpack.h" "} DLDevice;" \
    -e 's/} DLDevice;/} DLContext;/' -e 's/DLDevice device;/DLContext ctx;/' \
    -e 's/kDLCUDA = 2,/kDLGPU = 2,/'
  rename_in "$inc/tvm/runtime/c_runtime_api.h" "$home/include/tvm/runtime/c_runtime_api.h" \
    "kDLDevice = 6U," -e 's/kDLDevice = 6U,/kTVMContext = 6U,/' \
    -e 's/DLDevice v_device;/DLContext v_ctx;/' -e 's/\bDLDevice\b/DLContext/g' \
    -e 's|^#endif /\* TVM_RUNTIME_C_RUNTIME_API_H_ \*/|typedef DLContext TVMContext;\n&|'
  grep -q "typedef DLContext TVMContext" "$home/include/tvm/runtime/c_runtime_api.h" ||
    { echo "error: c_runtime_api.h lost its include-guard #endif" >&2; exit 1; }
  rename_in "$inc/tvm/runtime/c_backend_api.h" "$home/include/tvm/runtime/c_backend_api.h" \
    "c_runtime_api.h" -e 's/\bDLDevice\b/DLContext/g'
  mkdir -p "$home/build"
  ln -s "$LIB_DIR/libtvm_runtime.so" "$home/build/libtvm.so"
}

# The published tvm-rt sources, fetched through cargo (the tvm-build stand-in lets them resolve).
fetch_tvm_rt() {
  local fetch="$WORK/fetch"
  mkdir -p "$fetch/src"
  : >"$fetch/src/lib.rs"
  cat >"$fetch/Cargo.toml" <<EOF
[package]
name = "fetch-tvm-rt"
version = "0.0.0"
edition = "2018"

[dependencies]
tvm-rt = "=0.1.0-alpha"

[patch.crates-io]
tvm-build = { path = "$WORK/tvm-build-stand-in" }

[workspace]
EOF
  cargo metadata --format-version 1 --manifest-path "$fetch/Cargo.toml" >"$WORK/metadata.json" \
    2>"$WORK/fetch.log" || return 1
  python3 -c 'import json,sys; print(next(p["manifest_path"] for p in json.load(open(sys.argv[1]))["packages"] if p["name"] == "tvm-rt"))' \
    "$WORK/metadata.json"
}

ensure_release_lib
mkdir -p "$WORK"
write_tvm_build_stand_in "$WORK/tvm-build-stand-in"
manifest="$(fetch_tvm_rt)" || { cat "$WORK/fetch.log"; skip "could not fetch tvm-rt 0.1.0-alpha from crates.io"; }
libclang="$(find_libclang)" || skip "libclang not found (apt-get install libclang1-14, or set LIBCLANG_PATH)"

# clang-sys links `libclang.so`; a versioned file alone gets a link beside it.
mkdir -p "$WORK/libclang"
ln -sf "$libclang" "$WORK/libclang/libclang.so"
make_tvm_home "$WORK/tvm-home"

crate="$WORK/tvm-rt"
rm -rf "$crate"
cp -r "$(dirname "$manifest")" "$crate"
chmod -R u+w "$crate"
cat >>"$crate/Cargo.toml" <<EOF

[patch.crates-io]
tvm-build = { path = "$WORK/tvm-build-stand-in" }

[workspace]
EOF

export TVM_HOME="$WORK/tvm-home"
export LIBCLANG_PATH="$WORK/libclang"
export BINDGEN_EXTRA_CLANG_ARGS="-I$(cc -print-file-name=include)"
export CARGO_TARGET_DIR="$WORK/target"
export LD_LIBRARY_PATH="$TVM_HOME/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RUSTFLAGS="--cap-lints=allow" # the crates' own warnings are not ours to fix
cd "$crate"
# The bindings are generated from the headers, which tvm-sys's build script does not watch.
cargo clean -p tvm-sys --quiet 2>/dev/null || true
echo "-- building tvm-rt 0.1.0-alpha's tests against $LIB_DIR/libtvm_runtime.so"
cargo test --lib --quiet --no-run 2>"$WORK/build.log" || { cat "$WORK/build.log"; exit 1; }
skips=()
for t in "${SKIPPED_TESTS[@]}"; do skips+=(--skip "$t"); done
echo "-- running them (${#SKIPPED_TESTS[@]} skipped: they need TVM's compiler library)"
cargo test --lib --quiet -- --test-threads=1 --exact "${skips[@]}"
