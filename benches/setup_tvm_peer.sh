#!/usr/bin/env bash
# Install Apache TVM (the PyPI package `apache-tvm`, which ships TVM's own libtvm_runtime.so)
# into a venv under target/, for benches/parallel_launch.rs to compare against.
#
# Usage: bash benches/setup_tvm_peer.sh [version]   (default 0.27.0.post1)
# Prints the paths of TVM's runtime library and of its libtvm_ffi.so dependency, and writes
# them to target/tvm-peer-venv/peer-libs.txt, where the bench looks for them.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${TVM_PEER_VENV:-$here/target/tvm-peer-venv}"
version="${1:-0.27.0.post1}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "apache-tvm==$version" >&2

# Locate the libraries from the installed files (importing tvm is not needed: it may pull in
# optional Python dependencies; the .so files are what the bench loads).
"$venv/bin/python" - "$venv" <<'PY'
import glob, os, sys
venv = sys.argv[1]
site = glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))[0]
def find(pattern):
    hits = sorted(glob.glob(os.path.join(site, "**", pattern), recursive=True))
    return hits
rt = [p for p in find("libtvm_runtime.so") if os.path.isfile(p)]
ffi = [p for p in find("libtvm_ffi.so") if os.path.isfile(p)]
if not rt:
    sys.exit("setup_tvm_peer: libtvm_runtime.so not found under " + site)
lines = ["TVM_PEER_LIB=" + rt[0]] + ["TVM_PEER_DEP=" + p for p in ffi]
out = os.path.join(venv, "peer-libs.txt")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print("setup_tvm_peer: wrote " + out, file=sys.stderr, flush=True)
print("\n".join(lines), flush=True)
PY
