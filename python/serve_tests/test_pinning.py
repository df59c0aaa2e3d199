"""``--replica-core-groups``: a node's CPUs split into core groups, each replica claiming a free
one (a lock file held while its process lives) and pinning every thread of its process to it,
the runtime's kernel workers included. The Ray side is in test_ray_cluster.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from tvmrt.serve import app
from tvmrt.serve.pinning import CoreGroup, split

from test_serve import FIXTURES


def test_split_is_contiguous_and_even():
    assert split([3, 1, 0, 2], 2) == [[0, 1], [2, 3]]
    assert split(range(5), 2) == [[0, 1, 2], [3, 4]]
    assert split([7], 1) == [[7]]
    with pytest.raises(ValueError, match="3 core groups of 2 CPUs"):
        split([0, 1], 3)


def test_claims_take_free_groups_and_a_released_group_is_free_again(tmp_path):
    a = CoreGroup.claim("node-m", 2, cpus=[0, 1, 2, 3], lock_dir=str(tmp_path))
    b = CoreGroup.claim("node-m", 2, cpus=[0, 1, 2, 3], lock_dir=str(tmp_path))
    assert (a.index, a.cpus, b.index, b.cpus) == (0, [0, 1], 1, [2, 3])
    with pytest.raises(RuntimeError, match=r"all 2 core groups of this node are taken \(node-m\)"):
        CoreGroup.claim("node-m", 2, cpus=[0, 1, 2, 3], lock_dir=str(tmp_path))
    other = CoreGroup.claim("node-other", 2, cpus=[0, 1, 2, 3], lock_dir=str(tmp_path))
    assert other.index == 0, "another deployment (or node) has groups of its own"
    a.release()
    assert CoreGroup.claim("node-m", 2, cpus=[0, 1, 2, 3], lock_dir=str(tmp_path)).index == 0


def test_a_group_held_by_a_process_is_freed_when_it_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from tvmrt.serve.pinning import CoreGroup
        g = CoreGroup.claim("k", 2, cpus=[0, 1], lock_dir={str(tmp_path)!r})
        print(g.index, flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "0"
        assert CoreGroup.claim("k", 2, cpus=[0, 1], lock_dir=str(tmp_path)).index == 1
    finally:
        holder.kill()
        holder.wait()
    assert CoreGroup.claim("k", 2, cpus=[0, 1], lock_dir=str(tmp_path)).index == 0


def thread_cpus(pid: int):
    """The CPUs each thread of process ``pid`` may run on, by thread id."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = sorted(os.sched_getaffinity(int(tid)))
        except ProcessLookupError:
            pass
    return out


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_pin_covers_threads_started_before_and_after_and_the_runtime_workers(tmp_path):
    # A process that starts a thread, pins itself to the second of two groups, then runs a
    # model (the runtime starts its workers then) and reports every thread's CPUs.
    script = textwrap.dedent(f"""
        import json, os, threading, time
        import numpy as np, tvmrt
        from tvmrt.serve.pinning import CoreGroup
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        first = CoreGroup.claim("k", 2, lock_dir={str(tmp_path)!r})  # holds group 0: the next gets 1
        g = CoreGroup.claim("k", 2, lock_dir={str(tmp_path)!r})
        g.pin()
        m = tvmrt.graph_executor.GraphModule(tvmrt.load_module({FIXTURES["demo"]!r})["default"](tvmrt.cpu()))
        m.set_input("data", np.ones((1, 1, 16, 16), "float32"))
        for _ in range(50):
            m.run()
        tids = os.listdir("/proc/self/task")
        print(json.dumps({{"group": g.cpus, "threads": [sorted(os.sched_getaffinity(int(t))) for t in tids]}}))
    """)
    # Two kernel threads: the runtime starts a worker, after the pin, which must inherit it.
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, TVM_NUM_THREADS="2"))
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert got["group"] == split(os.sched_getaffinity(0), 2)[1]
    assert len(got["threads"]) >= 3, got
    assert all(cpus == got["group"] for cpus in got["threads"]), got


def test_options_are_checked():
    base = ["--model", "m=x.so", "--http-port", "1"]
    with pytest.raises(SystemExit):
        app.parse(base + ["--replica-core-groups", "2"])  # no Ray
    with pytest.raises(SystemExit):
        app.parse(base + ["--replicas", "4", "--replica-core-groups", "2", "--max-replicas-per-node", "3"])
    with pytest.raises(SystemExit):
        app.parse(base + ["--replicas", "2", "--replica-core-groups", "0"])
    a = app.parse(base + ["--replicas", "4", "--replica-core-groups", "2"])
    assert a.max_replicas_per_node == 2
