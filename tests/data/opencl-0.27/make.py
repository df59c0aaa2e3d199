"""OpenCL kernel libraries written by apache-tvm 0.27 (PyPI, which builds them without OpenCL):
`python make.py <this folder>`. Host code for llvm, kernels as OpenCL C source."""
import os
import sys

import tvm
from tvm import te

out = sys.argv[1]
target = tvm.target.Target("opencl", host="llvm")


def bind_1d(sch, block, threads):
    bx, tx = sch.split(sch.get_loops(block)[0], factors=[None, threads])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")


def add_one():
    a = te.placeholder((1024,), "float32", name="A")
    b = te.compute(a.shape, lambda i: a[i] + 1.0, name="B")
    sch = tvm.s_tir.Schedule(te.create_prim_func([a, b]).with_attr("global_symbol", "add_one"))
    bind_1d(sch, sch.get_sblock("B"), 64)
    return sch.mod


def matmul():
    n = 64
    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), "k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    sch = tvm.s_tir.Schedule(te.create_prim_func([a, b, c]).with_attr("global_symbol", "matmul"))
    i, j, _ = sch.get_loops(sch.get_sblock("C"))
    by, ty = sch.split(i, factors=[None, 8])
    bx, tx = sch.split(j, factors=[None, 8])
    sch.reorder(by, bx, ty, tx)
    for loop, tag in [(by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x")]:
        sch.bind(loop, tag)
    return sch.mod


def scale_dyn():
    n = te.var("n")
    a = te.placeholder((n,), "float32", name="A")
    b = te.compute((n,), lambda i: a[i] * 2.0 + 0.5, name="B")
    sch = tvm.s_tir.Schedule(te.create_prim_func([a, b]).with_attr("global_symbol", "scale_dyn"))
    bind_1d(sch, sch.get_sblock("B"), 32)
    return sch.mod


for name, mod in [("add_one", add_one()), ("matmul", matmul()), ("scale_dyn", scale_dyn())]:
    tvm.compile(mod, target=target).export_library(os.path.join(out, name + ".so"))
