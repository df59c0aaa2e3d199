"""The test client, in its own process and venv (tritonclient[http,grpc]; importing KServe and
tritonclient.grpc in one process fails on duplicate protobuf symbols). Reads a JSON job on
stdin: ports, model, input name and array, how many times to send it (``repeat``, 1); prints
what each protocol got, as JSON: the first output, every output and every ``served_by``."""

import json
import sys

import numpy as np
import tritonclient.grpc as grpc
import tritonclient.http as http

job = json.load(sys.stdin)
x = np.array(job["input"], dtype=job["dtype"]).reshape(job["shape"])
repeat = job.get("repeat", 1)
out = {}


def record(proto, output, served_by):
    got = out.setdefault(proto, {"output": output.tolist(), "served_by": served_by, "outputs": [], "served_by_all": []})
    got["outputs"].append(output.tolist())
    got["served_by_all"].append(served_by)


h = http.InferenceServerClient(f"127.0.0.1:{job['http_port']}")
for binary in (False, True):
    for _ in range(repeat):
        i = http.InferInput(job["input_name"], list(x.shape), job["datatype"])
        i.set_data_from_numpy(x, binary_data=binary)
        o = http.InferRequestedOutput(job["output_name"], binary_data=binary)
        r = h.infer(job["model"], [i], outputs=[o])
        record("http_binary" if binary else "http_json", r.as_numpy(job["output_name"]), r.get_response()["parameters"]["served_by"])
g = grpc.InferenceServerClient(f"127.0.0.1:{job['grpc_port']}")
for _ in range(repeat):
    i = grpc.InferInput(job["input_name"], list(x.shape), job["datatype"])
    i.set_data_from_numpy(x)
    r = g.infer(job["model"], [i])
    record("grpc", r.as_numpy(job["output_name"]), r.get_response().parameters["served_by"].string_param)
out["metadata"] = h.get_model_metadata(job["model"])
out["ready"] = h.is_server_ready() and g.is_model_ready(job["model"])
print(json.dumps(out))
