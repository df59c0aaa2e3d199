"""The RNN state's kernels of apache/tvm's own test (third_party/tvm_tests'
test_runtime_builtin_rnn_state.py: its TIR getter and setter of each state, unchanged), built by
apache-tvm 0.27 (PyPI) into kernel libraries a runtime-only process loads: for the CPU (llvm)
and for OpenCL (the test's GPU schedule, dlight's fallback; OpenCL C source, host code for
llvm; the first state in float32 there, as PoCL has no half precision). `python make.py <this
folder>`; tests/tvm027_runtime/lm_builtins.py runs them."""
import os
import sys

import tvm
from tvm.s_tir import dlight as dl

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "third_party", "tvm_tests", "tests", "python", "relax"))
import test_runtime_builtin_rnn_state as t  # noqa: E402

out = sys.argv[1]


def functions(states):
    funcs = {}
    for k, (shape, dtype) in enumerate(states):
        funcs[f"get_{k}"] = t.rnn_state_get(shape, dtype).with_attr("global_symbol", f"get_{k}")
        funcs[f"set_{k}"] = t.rnn_state_set(shape, dtype).with_attr("global_symbol", f"set_{k}")
    return tvm.IRModule(funcs)


tvm.tirx.build(functions(t.states), target="llvm").export_library(os.path.join(out, "rnn_state_cpu.so"))
target = tvm.target.Target("opencl", host="llvm")
with target:
    float32_states = [(shape, "float32") for shape, _ in t.states]
    scheduled = dl.ApplyDefaultSchedule(dl.gpu.Fallback())(functions(float32_states))  # pylint: disable=not-callable
tvm.tirx.build(scheduled, target=target).export_library(os.path.join(out, "rnn_state_opencl.so"))
print("wrote", sorted(f for f in os.listdir(out) if f.startswith("rnn_state")))
