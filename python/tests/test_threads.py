"""Python threads, each with its own executor of one model: bit-identical outputs."""

from __future__ import annotations

import threading

import numpy as np

import tvmrt

THREADS = 8
RUNS = 200


def test_threads_bit_identical(demo, cases):
    expected = [want.tobytes() for _, want, _ in cases]
    errors = []
    mods = [tvmrt.GraphModule(demo["default"](tvmrt.cpu(0))) for _ in range(THREADS)]
    start = threading.Barrier(THREADS)

    def work(k: int) -> None:
        try:
            m = mods[k]
            out = np.empty((1, 10), "float32")
            start.wait()
            for r in range(RUNS):
                c = (k + r) % len(cases)
                m.set_input("data", cases[c][0])
                m.run()
                m.get_output(0, out)
                if out.tobytes() != expected[c]:
                    errors.append(f"thread {k} run {r}: {out} != {cases[c][1]}")
                    return
        except Exception as e:  # noqa: BLE001
            errors.append(f"thread {k}: {e!r}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_one_executor_two_threads_is_an_error_not_a_crash(demo, cases):
    # An executor serves one thread at a time: concurrent calls may fail, but never corrupt.
    m = tvmrt.GraphModule(demo["default"](tvmrt.cpu(0)))
    m.set_input("data", cases[0][0])
    failures = []

    def work() -> None:
        for _ in range(100):
            try:
                m.run()
            except tvmrt.TVMError as e:
                failures.append(str(e))

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    m.run()
    assert m.get_output(0).numpy().tobytes() == cases[0][1].tobytes()


def test_gil_released_during_run(fixtures):
    """Another Python thread runs while a run (tens of ms) is inside the runtime: its timestamps
    cover most of each run's time span. (With the GIL held, as through ctypes.PyDLL, they cover
    under a tenth: only the switch-interval slices at the ends.)"""
    import sys
    import time

    lib = tvmrt.load_module(fixtures["large"])
    m = lib["default"](tvmrt.cpu(0), options="intra_op_threads=1")
    (x,) = m.data_inputs()
    m.set_input(x.index, np.zeros(x.shape, x.dtype))
    m.run()
    stamps = []
    stop = threading.Event()
    pc = time.perf_counter

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            if n % 64 == 0:
                stamps.append(pc())

    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    t = threading.Thread(target=spin)
    t.start()
    windows = []
    try:
        time.sleep(0.01)
        for _ in range(5):
            t0 = pc()
            m.run()
            windows.append((t0, pc()))
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)
    covered = total = 0.0
    for a, b in windows:
        inside = [s for s in stamps if a < s < b]
        total += b - a
        if inside:
            covered += max(inside) - min(inside)
    assert covered / total > 0.5, f"another thread ran during {covered / total:.0%} of the runs' time"
