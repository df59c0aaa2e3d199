#!/usr/bin/env bash
# The RPC server against a real TVM 0.18 host, where one is built (scripts/tvm018_host.sh):
# tests/rpc_host/host_flow.py against `tvm-rt rpc-server`, directly and through TVM's tracker.
# Without the host build it says so and succeeds (cargo test covers the protocol without TVM).
set -euo pipefail
cd "$(dirname "$0")/.."
env_file=target/tvm-0.18/env.sh
if [ ! -f "$env_file" ]; then
  echo "rpc host check: skipped (no TVM 0.18 host; scripts/tvm018_host.sh builds one)"
  exit 0
fi
# shellcheck disable=SC1090
source "$env_file"
[ -f target/demo/python_fixtures.json ] || cargo run --release --example python_fixtures
cargo build --release --bin tvm-rt
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
port=$(free_port)
target/release/tvm-rt rpc-server --host 127.0.0.1 --port "$port" >/dev/null &
pids+=($!)
sleep 1
"$TVM018_PYTHON" tests/rpc_host/host_flow.py 127.0.0.1 "$port"
tracker=$(free_port)
"$TVM018_PYTHON" -m tvm.exec.rpc_tracker --host 127.0.0.1 --port "$tracker" --port-end $((tracker + 1)) >/dev/null 2>&1 &
pids+=($!)
sleep 3
port=$(free_port)
target/release/tvm-rt rpc-server --host 127.0.0.1 --port "$port" --key ci --tracker "127.0.0.1:$tracker" >/dev/null &
pids+=($!)
sleep 1
"$TVM018_PYTHON" tests/rpc_host/host_flow.py 127.0.0.1 "$port" ci --tracker "127.0.0.1:$tracker"
