"""The serving bench's load generator, in the client venv (tritonclient[http]). Reads a JSON job
on stdin: port, model, input (name, shape, datatype, dtype), concurrency, seconds; sends HTTP
binary requests from `concurrency` threads (a client each) for that long after a short warm-up;
prints JSON: requests/s, latency percentiles in ms, error count, the served_by values seen,
the CPU seconds this process used while measuring."""

import json
import sys
import threading
import time

import numpy as np
import tritonclient.http as http

job = json.load(sys.stdin)
x = np.random.RandomState(0).uniform(-1, 1, job["shape"]).astype(job["dtype"])
lat, errors, seen = [], [], set()
lock = threading.Lock()
start = threading.Event()
stop_at = [0.0]


def worker():
    c = http.InferenceServerClient(f"127.0.0.1:{job['port']}", connection_timeout=120, network_timeout=120)
    i = http.InferInput(job["input_name"], job["shape"], job["datatype"])
    i.set_data_from_numpy(x, binary_data=True)
    for _ in range(job.get("warmup", 5)):
        c.infer(job["model"], [i])
    start.wait()
    mine, bad, by = [], 0, set()
    while time.perf_counter() < stop_at[0]:
        t = time.perf_counter()
        try:
            r = c.infer(job["model"], [i])
            by.add(r.get_response()["parameters"]["served_by"])
            mine.append(time.perf_counter() - t)
        except Exception:  # noqa: BLE001 - counted as an error
            bad += 1
    with lock:
        lat.extend(mine)
        errors.append(bad)
        seen.update(by)


threads = [threading.Thread(target=worker) for _ in range(job["concurrency"])]
for t in threads:
    t.start()
time.sleep(job.get("warmup_s", 1.0))
t0 = time.perf_counter()
cpu0 = time.process_time()
stop_at[0] = t0 + job["seconds"]
start.set()
for t in threads:
    t.join()
elapsed = time.perf_counter() - t0
lat.sort()


def pct(p):
    return 1e3 * lat[min(len(lat) - 1, int(p / 100 * len(lat)))] if lat else float("nan")


cpu = time.process_time() - cpu0
print(json.dumps({"rps": len(lat) / elapsed, "client_cpu_s": cpu, "p50_ms": pct(50), "p99_ms": pct(99), "requests": len(lat),
                  "errors": sum(errors), "served_by": sorted(seen)}))
