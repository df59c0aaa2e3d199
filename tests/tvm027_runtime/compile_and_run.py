"""apache-tvm 0.27's compiler on whichever libtvm_ffi.so its tvm_ffi package holds: TVM's own
C++ (its passes, tensor expressions, LLVM code generation, the VM's linker) over that library's
objects, containers, reflection and structural mutation, then the result run by 0.27's VM.

    python compile_and_run.py ours|real [TRACE_FILE]

Each case is built with `tvm.compile` from Relax (a matmul, a tuple, a convolution with
pooling, a dynamic shape, calls back into Python functions, one of which raises) or from a
tensor expression (`te.create_prim_func`, also scheduled by hand), run on the CPU, and compared
with numpy; the compiled module's import tree (`Module.imports`, the reflected `imports_`
field) is walked as `relax.VirtualMachine` does. With TRACE_FILE, tvm-ffi's structural walks
and mutations over TVM's IR are traced too: the real library's trace is written there and ours
must equal it. Prints a line per case; exits non-zero on any failure.
"""

import json
import sys
import traceback

import numpy as np
import tvm
import tvm_ffi
from tvm import relax, te, topi
from tvm.script import ir as I
from tvm.script import relax as R

from run_relax_cases import library_in_use


@I.ir_module
class MatmulRelu:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 3), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.matmul(x, w))
            R.output(y)
        return y


@I.ir_module
class AddTuple:
    @R.function
    def main(x: R.Tensor((2, 5), "float32"), y: R.Tensor((2, 5), "float32")):
        with R.dataflow():
            s = R.add(x, y)
            m = R.multiply(s, x)
            R.output(s, m)
        return (s, m)


@I.ir_module
class ConvPool:
    @R.function
    def main(x: R.Tensor((1, 3, 8, 8), "float32"), w: R.Tensor((4, 3, 3, 3), "float32")):
        with R.dataflow():
            y = R.nn.relu(R.nn.conv2d(x, w, padding=1))
            p = R.nn.max_pool2d(y, pool_size=[2, 2], strides=[2, 2])
            R.output(p)
        return p


@I.ir_module
class DynamicRows:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32")):
        with R.dataflow():
            s = R.sum(R.exp(x), axis=1)
            R.output(s)
        return s


def run_relax(mod, inputs):
    ex = tvm.compile(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in inputs])
    kinds = sorted(m.kind for m in ex.mod.imports)
    outs = [out] if hasattr(out, "numpy") else list(out)
    return [o.numpy() for o in outs], kinds


def case_matmul_relu(rng):
    x, w = rng.standard_normal((4, 8), "float32"), rng.standard_normal((8, 3), "float32")
    outs, kinds = run_relax(MatmulRelu, [x, w])
    return [np.maximum(x @ w, 0)], outs, kinds == ["llvm"]


def case_tuple_output(rng):
    x, y = rng.standard_normal((2, 5), "float32"), rng.standard_normal((2, 5), "float32")
    outs, kinds = run_relax(AddTuple, [x, y])
    return [x + y, (x + y) * x], outs, kinds == ["llvm"]


def case_conv_pool(rng):
    x, w = rng.standard_normal((1, 3, 8, 8), "float32"), rng.standard_normal((4, 3, 3, 3), "float32")
    outs, kinds = run_relax(ConvPool, [x, w])
    padded = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    conv = np.zeros((4, 8, 8), "float32")
    for i in range(8):
        for j in range(8):
            conv[:, i, j] = np.tensordot(w, padded[:, i : i + 3, j : j + 3], axes=([1, 2, 3], [0, 1, 2]))
    pooled = np.maximum(conv, 0).reshape(4, 4, 2, 4, 2).max(axis=(2, 4))
    return [pooled[None]], outs, kinds == ["llvm"]


def case_dynamic_shape(rng):
    ex = tvm.compile(DynamicRows, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    xs = [rng.standard_normal((n, 4), "float32") for n in (1, 5)]
    outs = [vm["main"](tvm.runtime.tensor(x)).numpy() for x in xs]
    return [np.exp(x).sum(axis=1) for x in xs], outs, True


def case_tensor_expression(rng):
    a = te.placeholder((6, 4), "float32", name="a")
    b = topi.nn.relu(topi.add(a, te.const(1.0, "float32")))
    func = te.create_prim_func([a, b])
    lib = tvm.compile(func, target="llvm")
    x = rng.standard_normal((6, 4), "float32")
    out = tvm.runtime.tensor(np.zeros((6, 4), "float32"))
    lib["main"](tvm.runtime.tensor(x), out)
    return [np.maximum(x + 1, 0)], [out.numpy()], True


def structure_trace():
    """What tvm-ffi's structural walks and mutations do over TVM's IR: the kinds of node a walk
    meets, in order, both ways, the integers of a module whose int64 8s a mutation turned into
    9s (through TVM's own types' native hooks as well as the containers'), the access paths
    an error's visit context resolves to, and a failing pass's report."""
    legalized = relax.transform.LegalizeOps()(ConvPool)
    trace = {}
    for order in ("pre", "post"):
        seen = []
        tvm_ffi.structural_walk(legalized, lambda v: seen.append(type(v).__name__), order=order)
        trace[f"walk_{order}"] = seen

    def nine(v, _mutator):
        if v.value == 8 and str(v.ty) == str(tvm.tirx.IntImm("int64", 8).ty):
            return tvm.tirx.IntImm("int64", 9)
        return v

    trace["unchanged_is_same"] = tvm_ffi.structural_mutate(legalized, []).same_as(legalized)
    mutated = tvm_ffi.structural_mutate(legalized, [(tvm.tirx.IntImm, nine)])
    ints = []
    tvm_ffi.structural_walk(mutated, [(tvm.tirx.IntImm, lambda v: ints.append(v.value))], order="pre")
    trace["mutated_ints"] = ints
    trace["access_paths"] = access_paths()
    trace["pass_error"] = pass_error()
    return trace


def pass_error():
    """How a failing pass reports its error: an add with one argument, which Normalize rejects
    (TVM's type inference raises it inside a visit), reported at its access path and
    underlined in the printed function."""
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    y = relax.Var("y")
    bad = relax.Call(tvm.ir.Op.get("relax.add"), [x])
    body = relax.SeqExpr([relax.BindingBlock([relax.VarBinding(y, bad)])], y)
    mod = tvm.IRModule({"main": relax.Function([x], body, relax.TensorType((2, 3), "float32"))})
    try:
        relax.transform.Normalize()(mod)
    except Exception as e:  # noqa: BLE001 - the report is what is compared
        text = str(e)
        return text[text.find("Error in pass") :]
    return "no error"


def access_paths():
    """Where an error raised in a visit of TVM's IR is reported: the paths
    `ffi.VisitErrorContext.FindAccessPaths` finds for a chain of visited nodes (a whole chain,
    the same as a prefix, and a broken one as a prefix), written as tvm-ffi writes paths."""
    find = tvm_ffi.get_global_func("ffi.VisitErrorContext.FindAccessPaths")
    make = tvm_ffi.get_global_func("ffi.MakeObjectFromPackedArgs")
    func = AddTuple["main"]
    block = func.body.blocks[0]
    binding = block.bindings[1]

    def context(*innermost_first):
        pattern = tvm_ffi.List(list(innermost_first))
        return make("ffi.VisitErrorContext", "reverse_visit_pattern", pattern, "prev_error_context", None)

    chain = context(binding.value, binding, binding, block)
    cases = [(chain, False), (chain, True), (context(binding.value, func), True)]
    return [[str(p) for p in find(AddTuple, ctx, prefix)] for ctx, prefix in cases]


def compare_structure(want, trace_file):
    """Writes the trace (real library) or compares with the one written (ours)."""
    trace = structure_trace()
    if want == "real":
        with open(trace_file, "w") as f:
            json.dump(trace, f)
        return True
    with open(trace_file) as f:
        return json.load(f) == trace


def case_schedule(rng):
    """A reduction scheduled by hand (split, reorder, parallel) before it is built."""
    from tvm import s_tir

    a, b = te.placeholder((32, 32), "float32", name="a"), te.placeholder((32, 32), "float32", name="b")
    k = te.reduce_axis((0, 32), "k")
    c = te.compute((32, 32), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    sch = s_tir.Schedule(te.create_prim_func([a, b, c]))
    i, j, _ = sch.get_loops(sch.get_sblock("c"))
    outer, inner = sch.split(i, [None, 8])
    sch.reorder(outer, j, inner)
    sch.parallel(outer)
    lib = tvm.compile(sch.mod, target="llvm")
    x, y = rng.standard_normal((32, 32), "float32"), rng.standard_normal((32, 32), "float32")
    out = tvm.runtime.tensor(np.zeros((32, 32), "float32"))
    lib(tvm.runtime.tensor(x), tvm.runtime.tensor(y), out)
    return [x @ y], [out.numpy()], True


def vm_of_calls(body):
    """A VM of `main(x: float32[3])`, whose result `body(bb, x, ty)` emits (calls of Python
    functions registered as globals)."""
    ty = relax.TensorType((3,), "float32")
    bb = relax.BlockBuilder()
    x = relax.Var("x", ty)
    with bb.function("main", [x]):
        bb.emit_func_output(body(bb, x, ty))
    return relax.VirtualMachine(tvm.compile(bb.get(), target="llvm"), tvm.cpu())


def case_python_callbacks(rng):
    """Relax calling back into Python functions registered as globals, both conventions."""

    def double(t):
        return tvm.runtime.tensor(t.numpy() * 2)

    def add_one(t, out):
        out.copyfrom(t.numpy() + 1)

    tvm.register_global_func("test.compile_and_run.double", double, override=True)
    tvm.register_global_func("test.compile_and_run.add_one", add_one, override=True)

    def body(bb, x, ty):
        y = bb.emit(relax.op.call_pure_packed("test.compile_and_run.double", x, ty_args=ty))
        return bb.emit(relax.op.call_dps_packed("test.compile_and_run.add_one", (y,), out_ty=ty))

    vm = vm_of_calls(body)
    v = rng.standard_normal(3, "float32")
    return [v * 2 + 1], [vm["main"](tvm.runtime.tensor(v)).numpy()], True


def case_kernel_calls_packed(rng):
    """A TIR kernel calling a Python global (`T.call_packed`), compiled and run in-process: the
    kernel lives in apache-tvm's LLVM JIT module, a module C++ code made, which passes itself to
    `TVMFFIEnvModLookupFromImports` as a C++ `ModuleObj*`."""
    from tvm.script import tirx as T

    def add_one_into(x, y):
        y.copyfrom(x.numpy() + 1)

    tvm.register_global_func("test.compile_and_run.add_one_into", add_one_into, override=True)

    @T.prim_func
    def main(a: T.handle, b: T.handle):
        x = T.match_buffer(a, (5,), "float32")
        y = T.match_buffer(b, (5,), "float32")
        T.evaluate(T.call_packed("test.compile_and_run.add_one_into", x, y))

    lib = tvm.compile(main, target="llvm")
    v = rng.standard_normal(5, "float32")
    out = tvm.runtime.tensor(np.zeros(5, "float32"))
    for _ in range(2):  # the second call finds the function in the module's lookup cache
        lib["main"](tvm.runtime.tensor(v), out)
    return [v + 1], [out.numpy()], True


def case_callback_error(rng):
    """A Python function the VM calls raises: the caller gets that exception, with the frames of
    the code that raised it (the error object goes through the runtime as it was raised)."""

    def fail_deep():
        raise ValueError("callback failed on purpose")

    def fail(t):
        fail_deep()

    tvm.register_global_func("test.compile_and_run.fail", fail, override=True)
    call = relax.op.call_pure_packed
    vm = vm_of_calls(lambda bb, x, ty: bb.emit(call("test.compile_and_run.fail", x, ty_args=ty)))
    try:
        vm["main"](tvm.runtime.tensor(rng.standard_normal(3, "float32")))
    except ValueError as e:
        frames = "".join(traceback.format_exception(e))
        return [], [], str(e).endswith("callback failed on purpose") and "in fail_deep" in frames
    return [], [], False


def main():
    want = sys.argv[1]
    have = library_in_use()
    if have != want:
        print(f"expected the {want} libtvm_ffi.so, found the {have} one")
        return 1
    rng = np.random.default_rng(7)
    failed = 0
    cases = [
        ("matmul_relu", case_matmul_relu),
        ("tuple_output", case_tuple_output),
        ("conv_pool", case_conv_pool),
        ("dynamic_shape", case_dynamic_shape),
        ("tensor_expression", case_tensor_expression),
        ("schedule", case_schedule),
        ("python_callbacks", case_python_callbacks),
        ("callback_error", case_callback_error),
        ("kernel_calls_packed", case_kernel_calls_packed),
    ]
    total = len(cases)
    for name, case in cases:
        # A case returns what numpy computes, what TVM's build computed, and whether its other
        # checks (the import tree, an error's report) held.
        wants, outs, checks_ok = case(rng)
        ok = checks_ok and len(wants) == len(outs)
        ok = ok and all(np.allclose(o, w, rtol=1e-5, atol=1e-5) for o, w in zip(outs, wants))
        print(f"{name}: {'ok' if ok else 'MISMATCH'}")
        failed += not ok
    if len(sys.argv) > 2:
        total += 1
        ok = compare_structure(want, sys.argv[2])
        print(f"structural walks and mutations of TVM's IR: {'ok' if ok else 'MISMATCH'}")
        failed += not ok
    print(f"{total - failed} of {total} compiled cases match")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
