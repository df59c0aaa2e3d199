"""OpenCL kernel libraries and Relax VM models written by apache-tvm 0.27 (PyPI, which builds them
without OpenCL): `python make.py <this folder>`. Host code for llvm, kernels as OpenCL C source;
each model's input and expected output come from numpy (float64 arithmetic), never from TVM."""
import os
import sys

import numpy as np
import tvm
from tvm import relax, te

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


# ---- Relax VM models (tvm.compile's GPU pipeline, dlight schedules) ---------------------------
rng = np.random.default_rng(7)


def vm_mlp():
    """Dynamic batch n: relu(x @ w1 + b1) @ w2, softmax; weights are constants of the VM."""
    w1, b1, w2 = (rng.standard_normal(s, dtype=np.float32) * 0.2 for s in [(32, 64), (64,), (64, 10)])
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((tvm.tirx.Var("n", "int64"), 32), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(relax.op.nn.relu(relax.op.matmul(x, relax.const(w1)) + relax.const(b1)))
            y = bb.emit_output(relax.op.nn.softmax(relax.op.matmul(h, relax.const(w2))))
        bb.emit_func_output(y)

    def ref(x):
        z = np.maximum(x @ w1 + b1, 0) @ w2
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return bb.get(), ref, (5, 32)


def conv3x3(x, w):
    """NCHW by OIHW, stride 1, padding 1."""
    h, wd = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    taps = [np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j]) for i in range(3) for j in range(3)]
    return sum(taps)


def vm_cnn():
    """conv 3x3 (8 channels) + relu, 2x2 max pool, global mean, dense to 10."""
    w1 = rng.standard_normal((8, 3, 3, 3), dtype=np.float32) * 0.3
    w2 = rng.standard_normal((10, 8), dtype=np.float32) * 0.3
    bb = relax.BlockBuilder()
    x = relax.Var("data", relax.TensorType((1, 3, 16, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(x, relax.const(w1), padding=1)))
            p = bb.emit(relax.op.nn.max_pool2d(c, pool_size=2, strides=2))
            g = bb.emit(relax.op.mean(p, axis=[2, 3]))
            y = bb.emit_output(relax.op.matmul(g, relax.op.permute_dims(relax.const(w2))))
        bb.emit_func_output(y)

    def ref(x):
        c = np.maximum(conv3x3(x, w1.astype(np.float64)), 0)
        return c.reshape(1, 8, 8, 2, 8, 2).max(axis=(3, 5)).mean(axis=(2, 3)) @ w2.T

    return bb.get(), ref, (1, 3, 16, 16)


for name, (mod, ref, shape) in [("vm_mlp", vm_mlp()), ("vm_cnn", vm_cnn())]:
    tvm.compile(mod, target=target).export_library(os.path.join(out, name + ".so"))
    x = rng.standard_normal(shape, dtype=np.float32)
    x.tofile(os.path.join(out, name + ".input.bin"))
    ref(x.astype(np.float64)).astype(np.float32).tofile(os.path.join(out, name + ".output.bin"))
