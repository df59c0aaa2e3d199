#!/usr/bin/env bash
# The Triton backend's tests (triton/python_tests): the real tritonserver 2.51 (bundled by
# nvidia-pytriton 0.7.0, which also brings tritonclient) started with target/release/
# libtriton_tvmrt.so on a model repository made from the demo models, driven over HTTP and gRPC.
# The venv is cached under target/ (about a minute of pip once); the tests take about 30 s.
#
#   scripts/triton_tests.sh              # after `cargo build --release` (builds the backend too)
#   scripts/triton_tests.sh -k batching  # pytest arguments pass through
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/triton-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import pytriton, tritonclient.grpc, tritonclient.http, pytest" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "nvidia-pytriton==0.7.0" numpy pytest
fi
[ -f target/release/libtriton_tvmrt.so ] || cargo build --release -p triton-tvmrt
[ -f target/demo/python_fixtures.json ] || cargo run --release --example python_fixtures
# the instances test's model: 8 MB of weights (made once, cached under target/demo)
[ -f target/demo/wide_model.so ] || cargo run --release --example python_fixtures -- --wide
# the ragged-batching model: the sequence block at batch 1, 2, 4 by length 4, 8
[ -f target/demo/seq_grid.json ] || cargo run --release --example python_fixtures -- --seq-grid
"$venv/bin/python" -m pytest -q -p no:cacheprovider triton/python_tests "$@"
