"""The request pipeline: futures, against the C API's numbers."""

from __future__ import annotations

import threading
from concurrent.futures import Future, wait

import numpy as np
import pytest

import tvmrt


def test_pipeline_futures(demo, cases):
    with tvmrt.Pipeline(demo, tvmrt.cpu(0), core_groups=2, threads_per_group=1, in_flight=2) as p:
        assert [t.name for t in p.data_inputs] == ["data"]
        futs = []
        for r in range(64):
            x, want, _ = cases[r % len(cases)]
            f = p.submit(x)
            assert isinstance(f, Future)
            futs.append((f, want))
        done, not_done = wait([f for f, _ in futs], timeout=60)
        assert not not_done
        for f, want in futs:
            (y,) = f.result()
            assert y.shape == (1, 10) and y.tobytes() == want.tobytes()


def test_pipeline_forms(demo, cases):
    x, want, _ = cases[2]
    with tvmrt.Pipeline(demo, options="core_groups=1,in_flight=2") as p:
        (y,) = p.run(data=x)
        assert y.tobytes() == want.tobytes()
        out = tvmrt.nd.empty((1, 10))
        (o,) = p.submit(tvmrt.nd.array(x), outputs=[out]).result(timeout=30)
        assert o is out and out.numpy().tobytes() == want.tobytes()
        out_np = tvmrt.empty_aligned((1, 10), "float32")
        p.submit(x, outputs=[out_np]).result(timeout=30)
        assert out_np.tobytes() == want.tobytes()


def test_pipeline_from_threads(demo, cases):
    errors = []
    with tvmrt.Pipeline(demo, options={"core_groups": 2}) as p:

        def work(k: int) -> None:
            for r in range(50):
                x, want, _ = cases[(k + r) % len(cases)]
                (y,) = p.submit(x).result(timeout=30)
                if y.tobytes() != want.tobytes():
                    errors.append((k, r))

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors


def test_pipeline_trace(demo, cases):
    with tvmrt.Pipeline(demo, trace=1) as p:
        p.run(cases[0][0])
        assert "traceEvents" in p.trace() or p.trace().lstrip().startswith("[")
    with tvmrt.Pipeline(demo) as p:
        with pytest.raises(tvmrt.TVMError, match="trace"):
            p.trace()


def test_pipeline_misuse(demo, cases):
    x = cases[0][0]
    with pytest.raises(tvmrt.TVMError, match="core_groups|bogus"):
        tvmrt.Pipeline(demo, options="bogus=1")
    p = tvmrt.Pipeline(demo)
    with pytest.raises(tvmrt.TVMError, match="2 inputs given"):
        p.submit(x, x)
    with pytest.raises(tvmrt.TVMError, match="unknown data input"):
        p.submit(image=x)
    with pytest.raises(tvmrt.TVMError):
        p.submit(x.astype("float64")).result(timeout=30)
    with pytest.raises(tvmrt.TVMError):
        p.submit(x.reshape(1, 16, 16, 1)[:, :8]).result(timeout=30)
    with pytest.raises(tvmrt.TVMError, match="outputs"):
        p.submit(x, outputs=[])
    # still working after the errors
    (y,) = p.run(x)
    assert y.tobytes() == cases[0][1].tobytes()
    p.close()
    p.close()
    with pytest.raises(tvmrt.TVMError, match="closed"):
        p.submit(x)


def test_pipeline_close_with_requests_in_flight(demo, cases):
    p = tvmrt.Pipeline(demo, core_groups=1, in_flight=1)
    futs = [p.submit(cases[0][0]) for _ in range(200)]
    p.close()
    ok = cancelled = 0
    for f in futs:
        try:
            (y,) = f.result(timeout=30)
            assert y.tobytes() == cases[0][1].tobytes()
            ok += 1
        except tvmrt.TVMError as e:
            assert "cancel" in str(e)
            cancelled += 1
    assert ok + cancelled == 200


def test_interpreter_exit_with_requests_in_flight(demo_path, tmp_path):
    import subprocess
    import sys

    script = tmp_path / "exit.py"
    script.write_text(
        "import numpy as np, tvmrt\n"
        f"lib = tvmrt.load_module({demo_path!r})\n"
        "p = tvmrt.Pipeline(lib, core_groups=2, in_flight=4)\n"
        "futs = [p.submit(np.zeros((1, 1, 16, 16), 'float32')) for _ in range(500)]\n"
        "g = lib['default'](tvmrt.cpu(0))\n"
        "a = tvmrt.nd.array(np.ones(3, 'float32'))\n"
        "v = np.from_dlpack(a)\n"
        "print('bye')\n"
    )
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "bye", r.stderr
