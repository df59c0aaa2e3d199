#!/usr/bin/env bash
# The serving tests (python/serve_tests): `python -m tvmrt.serve` started for real on KServe's
# ModelServer, driven by tritonclient from its own process and virtual environment (KServe and
# tritonclient.grpc cannot share a process). The two venvs are cached under target/ and made
# once (about 2.5 minutes of pip); the tests take about a minute, most of it the two-node Ray
# cluster's (marked `cluster`).
#
#   scripts/serve_tests.sh                    # after `cargo build --release` and the python_fixtures example
#   scripts/serve_tests.sh -m cluster         # only the Ray cluster test; -m "not cluster": the rest
#
# The server's venv gets the package from the wheel in target/wheel when .ci/run built one (so
# the wheel is what is served), else from the checkout with TVM_RUNTIME_LIBRARY.
set -euo pipefail
cd "$(dirname "$0")/.."
server_venv=target/serve-venv
client_venv=target/serve-client-venv
pip_q=(-q --disable-pip-version-check)
if [ ! -x "$server_venv/bin/python" ] || ! "$server_venv/bin/python" -c "import kserve.ray, ray.serve, pytest" 2>/dev/null; then
  python3 -m venv "$server_venv"
  "$server_venv/bin/pip" install "${pip_q[@]}" "kserve[ray]==0.21.0" "ray[serve]==2.60.0" numpy pytest
fi
if [ ! -x "$client_venv/bin/python" ] || ! "$client_venv/bin/python" -c "import tritonclient.grpc" 2>/dev/null; then
  python3 -m venv "$client_venv"
  "$client_venv/bin/pip" install "${pip_q[@]}" "tritonclient[http,grpc]==2.73.0" numpy
fi
[ -f target/demo/python_fixtures.json ] || cargo run --release --example python_fixtures
wheel=$(ls target/wheel/tvmrt-*.whl 2>/dev/null | head -1 || true)
if [ -n "$wheel" ]; then
  "$server_venv/bin/pip" install "${pip_q[@]}" --force-reinstall --no-deps "$wheel"
  run_env=(env -u TVM_RUNTIME_LIBRARY)
else
  "$server_venv/bin/pip" uninstall -q -y tvmrt 2>/dev/null || true
  run_env=(env "PYTHONPATH=$PWD/python" "TVM_RUNTIME_LIBRARY=$PWD/target/release/libtvm_runtime.so")
fi
"${run_env[@]}" TVMRT_SERVE_CLIENT_PYTHON="$PWD/$client_venv/bin/python" \
  "$server_venv/bin/python" -m pytest -q -p no:cacheprovider python/serve_tests "$@"
