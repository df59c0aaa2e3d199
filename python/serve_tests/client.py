"""The test client, in its own process and venv (tritonclient[http,grpc]; importing KServe and
tritonclient.grpc in one process fails on duplicate protobuf symbols). Reads a JSON job on
stdin: ports, model, input name and array; prints the outputs each protocol got, as JSON."""

import json
import sys

import numpy as np
import tritonclient.grpc as grpc
import tritonclient.http as http

job = json.load(sys.stdin)
x = np.array(job["input"], dtype=job["dtype"]).reshape(job["shape"])
out = {}
h = http.InferenceServerClient(f"127.0.0.1:{job['http_port']}")
for binary in (False, True):
    i = http.InferInput(job["input_name"], list(x.shape), job["datatype"])
    i.set_data_from_numpy(x, binary_data=binary)
    o = http.InferRequestedOutput(job["output_name"], binary_data=binary)
    r = h.infer(job["model"], [i], outputs=[o])
    out["http_binary" if binary else "http_json"] = {
        "output": r.as_numpy(job["output_name"]).tolist(),
        "served_by": r.get_response()["parameters"]["served_by"],
    }
g = grpc.InferenceServerClient(f"127.0.0.1:{job['grpc_port']}")
i = grpc.InferInput(job["input_name"], list(x.shape), job["datatype"])
i.set_data_from_numpy(x)
r = g.infer(job["model"], [i])
out["grpc"] = {
    "output": r.as_numpy(job["output_name"]).tolist(),
    "served_by": r.get_response().parameters["served_by"].string_param,
}
out["metadata"] = h.get_model_metadata(job["model"])
out["ready"] = h.is_server_ready() and g.is_model_ready(job["model"])
print(json.dumps(out))
