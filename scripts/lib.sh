# Shared by scripts/*.sh (sourced, not run). Assumes the caller did `set -euo pipefail`.
#
# REPO            repository root
# LIB_DIR         where libtvm_runtime.so/.a come from (default: target/release, built here
#                 with `cargo build --release --lib` unless TVM_RUNTIME_LIB_DIR names a directory
#                 that already holds them)
# configure_c_tests <build dir> [cmake args...]
#                 configure + build the C tests against LIB_DIR (no cargo run inside CMake)
# tvm027_venv <dir> <apache-tvm-ffi version>
#                 a venv with apache-tvm 0.27 over that apache-tvm-ffi (and what its RPC
#                 tracker and server import), made once
# tvm_ffi_venv   target/tvm-ffi-venv: apache-tvm-ffi 0.1.15.post2 with what its test suite and
#                 examples need (pytest, numpy, ninja on PATH for C++ builds, scikit-build-core),
#                 made once; prints the venv's python
# tvm_ffi_sdist <python> <part>
#                 target/tvm-ffi-sdist: that release's sdist unpacked, downloaded with <python>'s
#                 pip unless <part> of it (tests/python, examples) is there already
# ensure_ffi_release
#                 target/release's libtvm_ffi.so and tvm-rt (which swaps it in), built unless there
# tvm_ffi_library <python>
#                 the libtvm_ffi.so <python>'s tvm_ffi package loads (found without importing it)
# use_ffi_library <python> <its tvm_ffi/lib/libtvm_ffi.so> ours|both|real
#                 this runtime's libtvm_ffi.so in that package (both: apache-tvm's
#                 tvm/lib/libtvm_runtime.so too, as a link to it), or the packages' own back
#                 (`tvm-rt ffi-swap [--tvm-runtime]`, which keeps the originals as *.orig)

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

ensure_release_lib() {
  if [ -n "${TVM_RUNTIME_LIB_DIR:-}" ]; then
    LIB_DIR="$(cd "$TVM_RUNTIME_LIB_DIR" && pwd)"
  else
    LIB_DIR="$REPO/target/release"
    echo "-- cargo build --release --lib (a no-op when up to date)"
    (cd "$REPO" && cargo build --release --lib --quiet)
  fi
  for f in libtvm_runtime.so libtvm_runtime.a; do
    if [ ! -f "$LIB_DIR/$f" ]; then
      echo "error: $LIB_DIR/$f is missing" >&2
      exit 1
    fi
  done
}

configure_c_tests() {
  local build_dir="$1"
  shift
  ensure_release_lib
  mkdir -p "$build_dir"
  echo "-- configuring the C tests in $build_dir against $LIB_DIR ($*)"
  cmake -S "$REPO" -B "$build_dir" -DTVM_RUNTIME_PREBUILT_DIR="$LIB_DIR" \
    -DTVM_RUNTIME_BUILD_TESTS=ON "$@" >"$build_dir.configure.log" 2>&1 ||
    { cat "$build_dir.configure.log"; exit 1; }
  echo "-- building the C tests"
  cmake --build "$build_dir" -j "$JOBS" >"$build_dir.build.log" 2>&1 ||
    { cat "$build_dir.build.log"; exit 1; }
}

# Tests run against LIB_DIR even if LD_LIBRARY_PATH (e.g. from cargo) names another copy.
test_env_ld_path() {
  echo "$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

tvm027_venv() {
  # pytest, scipy: apache/tvm's test files import them (tests/tvm027_runtime/lm_builtins.py runs some)
  if [ ! -x "$1/bin/python" ] || ! "$1/bin/python" -c 'import tvm, numpy, tornado, cloudpickle, psutil, pytest, scipy' 2>/dev/null; then
    python3 -m venv "$1"
    "$1/bin/pip" install -q apache-tvm==0.27.0.post1 "apache-tvm-ffi==$2" cloudpickle psutil tornado numpy pytest scipy
  fi
}

TVM_FFI_VERSION=0.1.15.post2

# What the side-by-side benches over apache-tvm 0.27 share: the release libraries, the 0.27
# venv's interpreter ($python), its tvm_ffi library ($lib: the wheel's, put back on exit
# whatever happens) and a scratch folder ($out).
tvm027_bench_setup() {
  ensure_ffi_release
  tvm027_venv target/tvm027-venv "$TVM_FFI_VERSION"
  python=target/tvm027-venv/bin/python
  lib=$(tvm_ffi_library "$python")
  trap 'use_ffi_library "$python" "$lib" real' EXIT
  out=$(mktemp -d)
}

tvm_ffi_venv() {
  local venv="$REPO/target/tvm-ffi-venv"
  if [ ! -x "$venv/bin/python" ] ||
    ! "$venv/bin/python" -c "import tvm_ffi, pytest, numpy, ninja, scikit_build_core" 2>/dev/null; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "apache-tvm-ffi==$TVM_FFI_VERSION" pytest numpy \
      ninja scikit-build-core >&2
  fi
  echo "$venv/bin/python"
}

tvm_ffi_sdist() {
  local sdist="$REPO/target/tvm-ffi-sdist"
  if [ ! -d "$sdist/$2" ]; then
    rm -rf "$sdist" && mkdir -p "$sdist"
    "$1" -m pip download -q --disable-pip-version-check --no-deps --no-binary apache-tvm-ffi -d "$sdist" \
      "apache-tvm-ffi==$TVM_FFI_VERSION"
    tar -xzf "$sdist"/apache_tvm_ffi-*.tar.gz -C "$sdist" --strip-components=1
  fi
}

ensure_ffi_release() {
  [ -f "$REPO/target/release/libtvm_ffi.so" ] && [ -x "$REPO/target/release/tvm-rt" ] ||
    (cd "$REPO" && cargo build --release)
}

tvm_ffi_library() {
  "$1" -c "import importlib.util as u, os; print(os.path.join(u.find_spec('tvm_ffi').submodule_search_locations[0], 'lib', 'libtvm_ffi.so'))"
}

use_ffi_library() {
  local tvm_rt="$REPO/target/release/tvm-rt"
  if [ "$3" = ours ] || [ "$3" = both ]; then
    "$tvm_rt" ffi-swap --python "$1" $([ "$3" = both ] && echo --tvm-runtime) >/dev/null
    cmp -s "$2" "$REPO/target/release/libtvm_ffi.so" || { echo "error: $2 is not this runtime's" >&2; exit 1; }
  elif [ -f "$2.orig" ]; then
    "$tvm_rt" ffi-swap --python "$1" --restore >/dev/null
  fi
}
