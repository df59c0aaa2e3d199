"""Kernel libraries of plain TIR written by apache-tvm 0.27: `python make.py <this folder>`."""
import os
import sys

import tvm
from tvm import te
from tvm.script import tirx as T

out = sys.argv[1]


def parallel_matmul():
    n = 64
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    sch = tvm.s_tir.Schedule(te.create_prim_func([a, b, c]).with_attr("global_symbol", "matmul"))
    sch.parallel(sch.get_loops(sch.get_sblock("C"))[0])
    return sch.mod


@T.prim_func
def call_packed(a: T.handle):
    T.func_attr({"global_symbol": "call_packed"})
    A = T.match_buffer(a, (4,), "float32")
    T.evaluate(T.call_packed("testing.echo", A.data))


for name, mod in [("parallel_matmul", parallel_matmul()), ("call_packed", tvm.IRModule({"call_packed": call_packed}))]:
    tvm.compile(mod, target="llvm").export_library(os.path.join(out, name + ".so"))
# The form MetaSchedule's LocalBuilder uploads: a tar of object files, linked on the device.
tvm.compile(parallel_matmul(), target="llvm").export_library(os.path.join(out, "parallel_matmul.tar"))
