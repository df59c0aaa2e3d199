"""The bench's comparison: Triton's python backend running a graph model through the `tvmrt`
package (what a TVM user does today without a backend), one request at a time."""

import json
import os
import sys

# The stub's interpreter ignores PYTHONPATH: the bench lists numpy's and tvmrt's directories here.
with open(os.path.join(os.path.dirname(__file__), "sys_path.txt")) as f:
    sys.path[:0] = [line.strip() for line in f if line.strip()]

import triton_python_backend_utils as pb_utils  # noqa: E402

import tvmrt  # noqa: E402


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.input = config["input"][0]["name"]
        self.output = config["output"][0]["name"]
        path = os.path.join(args["model_repository"], args["model_version"], "cnn.so")
        self.module = tvmrt.GraphModule(tvmrt.load_module(path)["default"](tvmrt.cpu(0)))

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, self.input).as_numpy()
            self.module.set_input(self.input, x)
            self.module.run()
            y = self.module.get_output(0).numpy()
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor(self.output, y)]))
        return responses
