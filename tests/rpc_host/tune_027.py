"""MetaSchedule from an apache-tvm 0.27 host through a tracker to an RPC server: an 8-trial
`tune_tir` of a 64x64x64 matmul with `RPCRunner` (each candidate built by `LocalBuilder` into a
`.tar` of object files, uploaded, linked and loaded on the server, its inputs filled by
`tvm.contrib.random.random_fill_for_measure`, timed), then the best schedule compiled and run
locally against numpy.

Needs apache-tvm-ffi 0.1.14.post0 on the host (0.1.15.post2 crashes in MetaSchedule before any
RPC traffic), cloudpickle, psutil and tornado.

    python tests/rpc_host/tune_027.py TRACKER_HOST:PORT KEY WORK_DIR
"""

import sys

import numpy as np
import tvm
from tvm import te
from tvm.s_tir import meta_schedule as ms


def matmul():
    n = 64
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return tvm.IRModule({"main": te.create_prim_func([a, b, c])})


def main():
    tracker, key, work_dir = sys.argv[1:4]
    host, port = tracker.rsplit(":", 1)
    target = tvm.target.Target({"kind": "llvm", "num-cores": 1})
    runner = ms.runner.RPCRunner(
        ms.runner.RPCConfig(tracker_host=host, tracker_port=int(port), tracker_key=key, session_timeout_sec=60),
        ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=0),
    )
    mod = matmul()
    db = ms.tir_integration.tune_tir(
        mod, target, work_dir, max_trials_global=8, num_trials_per_iter=4, runner=runner, cost_model="random"
    )
    records = db.get_all_tuning_records()
    secs = [float(s) for r in records for s in (r.run_secs or [])]
    ok = [s for s in secs if 0 < s < 1e9]
    print(f"{len(records)} records, {len(ok)} measured on the server: {sorted(ok)[:3]} s ...", flush=True)
    assert ok, "no candidate was measured on the server"
    sch = ms.tir_integration.compile_tir(db, mod, target)
    f = tvm.compile(sch.mod, target="llvm")
    a, b = (np.random.RandomState(i).rand(64, 64).astype("float32") for i in range(2))
    c = tvm.runtime.tensor(np.zeros((64, 64), "float32"))
    f(tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)
    print("tuned matmul: best schedule checked against numpy", flush=True)


if __name__ == "__main__":
    main()
