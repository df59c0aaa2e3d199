#!/usr/bin/env bash
# Miri (Rust's UB checker: aliasing, out-of-bounds, use-after-free, uninitialised reads, data
# races, leaks) on the library's unit tests.
#
#   scripts/miri.sh [test filter / libtest args...]     e.g. scripts/miri.sh runtime::params
#
# Needs a nightly toolchain with the miri and rust-src components:
#   rustup toolchain install nightly --component miri rust-src
# (or `rustup +nightly component add miri rust-src`). Without them this prints how to get them
# and exits 0. MIRI_TOOLCHAIN picks the toolchain (default: nightly).
#
# Defaults (override with MIRIFLAGS): -Zmiri-disable-isolation, because tests read their data
# files from tests/data. Miri runs Rust only: a test that calls into C (dlopen'ed libraries,
# compiled kernels) stops with "unsupported operation"; such tests can be skipped with
# `-- --skip <name>`. Miri is slow (minutes for the whole suite); it is not part of CI.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
TOOLCHAIN="${MIRI_TOOLCHAIN:-nightly}"

skip() {
  echo "miri: skipped: $*"
  echo "miri: Miri needs a nightly toolchain with the miri component, which stable cannot use"
  echo "      (not even with RUSTC_BOOTSTRAP=1). To get it:"
  echo "        rustup toolchain install nightly --component miri rust-src"
  echo "      or, with nightly already installed:"
  echo "        rustup +nightly component add miri rust-src"
  exit 0
}

command -v rustup >/dev/null 2>&1 || skip "rustup is not installed"
rustup toolchain list 2>/dev/null | grep -q "^$TOOLCHAIN" || skip "no '$TOOLCHAIN' toolchain"
cargo "+$TOOLCHAIN" miri --version >/dev/null 2>&1 || skip "the '$TOOLCHAIN' toolchain lacks the miri component"
rustup "+$TOOLCHAIN" component list --installed 2>/dev/null | grep -q '^rust-src' ||
  skip "the '$TOOLCHAIN' toolchain lacks the rust-src component (Miri builds its own std)"

export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
echo "miri: $(cargo "+$TOOLCHAIN" miri --version), MIRIFLAGS=$MIRIFLAGS"
cd "$REPO"
cargo "+$TOOLCHAIN" miri setup --quiet 2>/dev/null || cargo "+$TOOLCHAIN" miri setup
if [ "$#" -gt 0 ] && [ "$1" != "--" ]; then
  set -- -- "$@"
fi
cargo "+$TOOLCHAIN" miri test --lib "$@"
echo "miri: no undefined behaviour found in the tests run"
