import numpy as np, tvm, os, sys, json
try:
    import tvm.tirx as tir  # apache-tvm 0.27
except ImportError:
    import tvm.tir as tir  # 0.25, 0.26
from tvm import relax
from tvm.script import ir as I, relax as R
out = sys.argv[1]
rng = np.random.default_rng(0)

def bb_mlp():
    w1 = rng.standard_normal((32, 16)).astype("float32"); b1 = rng.standard_normal((16,)).astype("float32")
    w2 = rng.standard_normal((16, 10)).astype("float32"); b2 = rng.standard_normal((10,)).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((4, 32), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.add(R.matmul(x, relax.const(w1)), relax.const(b1))))
            o = bb.emit_output(R.nn.relu(R.add(R.matmul(h, relax.const(w2)), relax.const(b2))))
        bb.emit_func_output(o)
    return bb.get()

@I.ir_module
class Tuple:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), y: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.sum(R.multiply(x, y), axis=1)
            R.output(a, b)
        return (a, b)

def bb_dyn():
    w = rng.standard_normal((16, 8)).astype("float32")
    bb = relax.BlockBuilder()
    n = tir.Var("n", "int64")
    x = relax.Var("x", R.Tensor((n, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            c = bb.emit(R.concat([x, R.multiply(x, R.const(0.5, "float32"))], axis=0))
            o = bb.emit_output(R.nn.relu(R.matmul(c, relax.const(w))))
        bb.emit_func_output(o)
    return bb.get()

@I.ir_module
class TwoFuncs:
    @R.function
    def main(x: R.Tensor((4, 8), "float32")):
        with R.dataflow():
            y = R.add(R.multiply(x, R.const(2.0, "float32")), R.const(1.0, "float32"))
            R.output(y)
        return y
    @R.function
    def second(a: R.Tensor((4, 8), "float32"), b: R.Tensor((8, 3), "float32")):
        cls = TwoFuncs
        m = cls.main(a)
        with R.dataflow():
            s = R.nn.softmax(R.matmul(m, b), axis=-1)
            R.output(s)
        return s

@I.ir_module
class One:
    @R.function
    def main(x: R.Tensor((4, 4), "float32"), y: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            z = R.add(x, y)
            R.output(z)
        return z

def bb_cnn():
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype("float32")
    w2 = (rng.standard_normal((16, 8, 3, 3)) * 0.3).astype("float32")
    wd = (rng.standard_normal((16 * 4 * 4, 10)) * 0.1).astype("float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", R.Tensor((1, 3, 16, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            h = bb.emit(R.nn.relu(R.nn.conv2d(x, relax.const(w1), padding=1)))
            h = bb.emit(R.nn.max_pool2d(h, pool_size=2, strides=2))
            h = bb.emit(R.nn.relu(R.nn.conv2d(h, relax.const(w2), padding=1)))
            h = bb.emit(R.nn.max_pool2d(h, pool_size=2, strides=2))
            h = bb.emit(R.reshape(h, (1, 256)))
            o = bb.emit_output(R.matmul(h, relax.const(wd)))
        bb.emit_func_output(o)
    return bb.get()

@I.ir_module
class IfCond:
    # The condition is a bool tensor a kernel computes: DLPack 1.x's kDLBool (code 6), which
    # TVM 0.18 used for its e4m3 floats.
    @R.function
    def main(x: R.Tensor((2, 4), "float32")):
        c = R.greater(R.sum(R.abs(x)), R.const(0.0, "float32"))
        if c:
            y = R.add(x, x)
        else:
            y = R.multiply(x, x)
        return y

    @R.function
    def other(x: R.Tensor((2, 4), "float32")):
        c = R.less(R.sum(R.abs(x)), R.const(0.0, "float32"))
        if c:
            y = R.add(x, x)
        else:
            y = R.multiply(x, x)
        return y

models = {
  "mlp": (bb_mlp(), {"main": [[("x", (4, 32))]]}),
  "tuple": (Tuple, {"main": [[("x", (4, 8)), ("y", (4, 8))]]}),
  "dyn": (bb_dyn(), {"main": [[("x", (1, 16))], [("x", (3, 16))], [("x", (8, 16))]]}),
  "two_funcs": (TwoFuncs, {"main": [[("x", (4, 8))]], "second": [[("a", (4, 8)), ("b", (8, 3))]]}),
  "one_kernel": (One, {"main": [[("x", (4, 4)), ("y", (4, 4))]]}),
  "cnn": (bb_cnn(), {"main": [[("x", (1, 3, 16, 16))]]}),
  "if_cond": (IfCond, {"main": [[("x", (2, 4))]], "other": [[("x", (2, 4))]]}),
}
manifest = {"tvm_version": tvm.__version__, "api": "tvm.compile", "target": "llvm", "numpy": np.__version__, "models": {}}
for name, (mod, funcs) in models.items():
    d = os.path.join(out, name); os.makedirs(d, exist_ok=True)
    ex = tvm.compile(mod, target="llvm")
    ex.export_library(os.path.join(d, "lib.so"))
    vm = relax.VirtualMachine(tvm.runtime.load_module(os.path.join(d, "lib.so")), tvm.cpu())
    cases = []
    for fname, calls in funcs.items():
        for ci, call in enumerate(calls):
            cname = f"{fname}{ci}"
            ins = []
            args = []
            for ii, (iname, shape) in enumerate(call):
                a = rng.standard_normal(shape).astype("float32")
                f = f"{cname}_in{ii}.bin"; a.tofile(os.path.join(d, f))
                ins.append({"name": iname, "dtype": "float32", "shape": list(shape), "file": f})
                args.append(tvm.runtime.tensor(a))
            r = vm[fname](*args)
            rs = list(r) if not hasattr(r, "numpy") else [r]
            outs = []
            for oi, o in enumerate(rs):
                o = o.numpy(); f = f"{cname}_out{oi}.bin"; o.tofile(os.path.join(d, f))
                outs.append({"dtype": str(o.dtype), "shape": list(o.shape), "file": f})
            cases.append({"name": cname, "func": fname, "tuple": not hasattr(r, "numpy"), "inputs": ins, "outputs": outs})
    manifest["models"][name] = {"lib": f"{name}/lib.so", "cases": cases}
json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"), indent=1)
print("ok")
