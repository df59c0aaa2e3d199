#!/usr/bin/env bash
# End-to-end check of the packaging, from a downstream project's point of view.
#
#   c_tests/consumer/run.sh <repo> <workdir>
#
#   (a) build + install the root project into <workdir>/prefix (prebuilt target/release libraries
#       if present, else CMake drives cargo), then build this consumer with find_package() and run
#       its ctest;
#   (b) build the consumer with add_subdirectory(<repo>) and run its ctest;
#   (c) compile main.c and deploy.cpp (the C++ API) with `pkg-config --cflags --libs tvm_runtime`
#       and run them, then main.c once more against the static library using `pkg-config --static`.
#
# Everything is written under <workdir> (its previous build trees are removed). Exits non-zero on
# the first failure.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <repo> <workdir>" >&2
  exit 2
fi
repo=$(cd "$1" && pwd)
mkdir -p "$2"
work=$(cd "$2" && pwd)
here="$repo/c_tests/consumer"
prefix="$work/prefix"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
cc=${CC:-cc}
cxx=${CXX:-c++}

step() { printf '\n=== %s\n' "$*"; }
# Run the freshly built programs without help from the caller's environment.
run_clean() { env -u LD_LIBRARY_PATH "$@"; }

rm -rf "$work/root-build" "$prefix" "$work/find-build" "$work/subdir-build" "$work/pkgconfig-build"

# --- (a) install, then find_package -------------------------------------------------------------
release="$repo/target/release"
root_args=(-DCMAKE_INSTALL_PREFIX="$prefix" -DTVM_RUNTIME_BUILD_TESTS=OFF)
if [[ -f $release/libtvm_runtime.so && -f $release/libtvm_runtime.a ]]; then
  step "(a) root project with prebuilt libraries from $release"
  root_args+=(-DTVM_RUNTIME_PREBUILT_DIR="$release")
else
  step "(a) root project; $release has no libraries, so CMake drives cargo"
fi
cmake -S "$repo" -B "$work/root-build" "${root_args[@]}"
cmake --build "$work/root-build" -j "$jobs"
cmake --install "$work/root-build"
(cd "$prefix" && find . -type f | sort)

step "(a) consumer via find_package(tvm_runtime), CMAKE_PREFIX_PATH=$prefix"
cmake -S "$here" -B "$work/find-build" -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$work/find-build" -j "$jobs"
(cd "$work/find-build" && run_clean ctest --output-on-failure)

# --- (b) add_subdirectory ----------------------------------------------------------------------
# Reuse the libraries of (a) rather than compiling the crate a second time.
step "(b) consumer via add_subdirectory($repo)"
cmake -S "$here" -B "$work/subdir-build" -DTVM_RUNTIME_SOURCE_DIR="$repo" \
  -DTVM_RUNTIME_PREBUILT_DIR="$prefix/lib"
cmake --build "$work/subdir-build" -j "$jobs"
(cd "$work/subdir-build" && run_clean ctest --output-on-failure)

# --- (c) pkg-config ----------------------------------------------------------------------------
step "(c) consumer via pkg-config"
pc_file=$(find "$prefix" -name tvm_runtime.pc -print -quit)
[[ -n $pc_file ]] || { echo "tvm_runtime.pc was not installed" >&2; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc_file")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
cat "$pc_file"
mkdir -p "$work/pkgconfig-build"
read -r -a cflags <<<"$(pkg-config --cflags tvm_runtime)"
read -r -a libs <<<"$(pkg-config --libs tvm_runtime)"
libdir=$(pkg-config --variable=libdir tvm_runtime)
echo "cflags: ${cflags[*]}"
echo "libs:   ${libs[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror "$here/main.c" -o "$work/pkgconfig-build/consumer_shared" \
  "${cflags[@]}" "${libs[@]}" -Wl,-rpath,"$libdir"
run_clean "$work/pkgconfig-build/consumer_shared"
"$cxx" -std=c++14 -Wall -Wextra -Werror "$here/deploy.cpp" -o "$work/pkgconfig-build/consumer_deploy" \
  "${cflags[@]}" "${libs[@]}" -Wl,-rpath,"$libdir"
run_clean "$work/pkgconfig-build/consumer_deploy"

# Static: the archive itself plus the Libs.private system libraries.
read -r -a static_libs <<<"$(pkg-config --static --libs-only-l tvm_runtime)"
private=()
for l in "${static_libs[@]}"; do [[ $l == -ltvm_runtime ]] || private+=("$l"); done
echo "static: $libdir/libtvm_runtime.a ${private[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror "$here/main.c" -o "$work/pkgconfig-build/consumer_static" \
  "${cflags[@]}" "$libdir/libtvm_runtime.a" "${private[@]}"
if command -v readelf >/dev/null && readelf -d "$work/pkgconfig-build/consumer_static" | grep -q 'libtvm_runtime\.so'; then
  echo "consumer_static unexpectedly depends on libtvm_runtime.so" >&2
  exit 1
fi
run_clean "$work/pkgconfig-build/consumer_static"

step "all consumer checks passed"
