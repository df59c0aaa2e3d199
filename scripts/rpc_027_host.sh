#!/usr/bin/env bash
# The RPC server against a real apache-tvm 0.27 host: tests/rpc_host/host_flow_027.py against
# `tvm-rt rpc-server`, directly and through apache-tvm 0.27's tracker. The host's venv
# (apache-tvm 0.27.0.post1 from PyPI, with the tracker's and server's extra packages) is made once
# under target/tvm027-venv. Set TVM_RT to a built tvm-rt to skip the release build.
# With --tune, also MetaSchedule through the tracker (tests/rpc_host/tune_027.py, about a minute;
# its host needs apache-tvm-ffi 0.1.14.post0: a second venv, target/tvm027ms-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
tvm027_venv target/tvm027-venv 0.1.15.post2
py=target/tvm027-venv/bin/python
if [ -z "${TVM_RT:-}" ]; then
  cargo build --release --bin tvm-rt
  TVM_RT=target/release/tvm-rt
fi
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
port=$(free_port)
"$TVM_RT" rpc-server --host 127.0.0.1 --port "$port" >/dev/null &
pids+=($!)
wait_port "$port"
echo "== apache-tvm 0.27 host -> tvm-rt rpc-server"
"$py" tests/rpc_host/host_flow_027.py 127.0.0.1 "$port"
tracker=$(free_port)
"$py" -m tvm.exec.rpc_tracker --host 127.0.0.1 --port "$tracker" --port-end $((tracker + 1)) >/dev/null 2>&1 &
pids+=($!)
wait_port "$tracker"
port=$(free_port)
"$TVM_RT" rpc-server --host 127.0.0.1 --port "$port" --key ci027 --tracker "127.0.0.1:$tracker" >/dev/null &
pids+=($!)
wait_port "$port"
sleep 1
echo "== apache-tvm 0.27 host -> apache-tvm 0.27 tracker -> tvm-rt rpc-server"
"$py" tests/rpc_host/host_flow_027.py 127.0.0.1 "$port" ci027 --tracker "127.0.0.1:$tracker"
if [ "${1:-}" = "--tune" ]; then
  tvm027_venv target/tvm027ms-venv 0.1.14.post0
  echo "== MetaSchedule (apache-tvm 0.27 host, RPCRunner) -> 0.27 tracker -> tvm-rt rpc-server"
  work=$(mktemp -d)
  target/tvm027ms-venv/bin/python tests/rpc_host/tune_027.py "127.0.0.1:$tracker" ci027 "$work" 2>&1 | tail -2
  rm -rf "$work"
fi
