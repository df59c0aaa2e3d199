"""The Relax VM through tvmrt.relax.VirtualMachine: every recorded case of the TVM 0.18 and
apache-tvm 0.27 libraries in tests/data/relax-*, against TVM's own outputs; the stateful
interface, time_evaluator, and bad calls (errors with the runtime's message, the VM usable after)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tvmrt
from tvmrt.relax import VirtualMachine

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"
SETS = ["relax-0.18", "relax-0.25", "relax-0.27"]


def _manifest(name: str) -> dict:
    return json.loads((DATA / name / "manifest.json").read_text())


def _cases():
    for s in SETS:
        for model, m in _manifest(s)["models"].items():
            for case in m["cases"]:
                yield pytest.param(s, model, case, id=f"{s}-{model}-{case['name']}")


def _read(folder: Path, t: dict) -> np.ndarray:
    return np.fromfile(folder / t["file"], dtype=t["dtype"]).reshape(t["shape"])


def _lib(s: str, model: str) -> Path:
    path = DATA / s / _manifest(s)["models"][model]["lib"]
    _require_vm_loader(s, path)
    return path


_LOADS: dict = {}


def _require_vm_loader(s: str, path: Path) -> None:
    """Skip (saying why) where this build of the runtime does not read the set's executables as
    VM executables: apache-tvm 0.27's need the tvm-ffi library loader."""
    if s not in _LOADS:
        _LOADS[s] = tvmrt.load_module(path).type_key
    if _LOADS[s] not in tvmrt.graph_executor.VM_EXECUTABLE_KEYS:
        pytest.skip(f"this runtime loads {s}'s libraries as `{_LOADS[s]}` modules, not VM executables")


@pytest.fixture(scope="module")
def vms():
    cache = {}

    def get(s: str, model: str) -> VirtualMachine:
        if (s, model) not in cache:
            cache[(s, model)] = VirtualMachine(tvmrt.load_module(_lib(s, model)), tvmrt.cpu())
        return cache[(s, model)]

    return get


def _close(got, want: np.ndarray) -> None:
    assert isinstance(got, tvmrt.NDArray)
    g = got.numpy()
    assert g.shape == want.shape and g.dtype == want.dtype
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


def _check(result, case: dict, folder: Path) -> None:
    wants = [_read(folder, o) for o in case["outputs"]]
    if case["tuple"]:
        assert isinstance(result, (list, tuple)) and len(result) == len(wants)
        for got, want in zip(result, wants):
            _close(got, want)
    else:
        _close(result, wants[0])


@pytest.mark.parametrize("s,model,case", list(_cases()))
def test_every_recorded_case(vms, s, model, case):
    folder = _lib(s, model).parent
    inputs = [_read(folder, t) for t in case["inputs"]]
    vm = vms(s, model)
    _check(vm[case["func"]](*inputs), case, folder)  # numpy arrays
    _check(vm[case["func"]](*[tvmrt.nd.array(x) for x in inputs]), case, folder)  # NDArrays


@pytest.mark.parametrize("s,model,case", list(_cases()))
def test_stateful_interface(vms, s, model, case):
    folder = _lib(s, model).parent
    vm = vms(s, model)
    inputs = [_read(folder, t) for t in case["inputs"]]
    vm.set_input(case["func"], *inputs)
    vm.invoke_stateful(case["func"])
    _check(vm.get_outputs(case["func"]), case, folder)


@pytest.mark.parametrize("s", SETS)
def test_inputs_by_parameter_name_and_naive_allocator(s):
    vm = VirtualMachine(tvmrt.load_module(_lib(s, "two_funcs")), tvmrt.cpu(), memory_cfg="naive")
    case = next(c for c in _manifest(s)["models"]["two_funcs"]["cases"] if c["func"] == "second")
    folder = _lib(s, "two_funcs").parent
    a, b = [_read(folder, t) for t in case["inputs"]]
    names = [t["name"] for t in case["inputs"]]
    vm.set_input("second", **{names[1]: b, names[0]: a})
    vm.invoke_stateful("second")
    _check(vm.get_outputs("second"), case, folder)


@pytest.mark.parametrize("s", SETS)
def test_time_evaluator_returns_a_benchmark_result(vms, s):
    vm = vms(s, "mlp")
    x = np.random.default_rng(0).standard_normal((4, 32)).astype("float32")
    res = vm.time_evaluator("main", tvmrt.cpu(), number=3, repeat=4)(x)
    assert isinstance(res, tvmrt.BenchmarkResult)
    assert len(res.results) == 4 and all(r > 0 for r in res.results)
    assert res.min <= res.median <= res.max
    vm.set_input("main", x)
    stateful = vm.time_evaluator("main", tvmrt.cpu(), number=2, repeat=2, min_repeat_ms=1)()
    assert len(stateful.results) == 2 and stateful.mean > 0


@pytest.mark.parametrize("s", SETS)
def test_profile_reports_every_kernel_call(vms, s):
    vm = VirtualMachine(tvmrt.load_module(_lib(s, "mlp")), tvmrt.cpu(), profile=True)
    x = np.random.default_rng(1).standard_normal((4, 32)).astype("float32")
    report = vm.profile("main", x)
    assert isinstance(report, tvmrt.relax.Report)
    names = [c["Name"] for c in report.calls]
    # 0.27 runs six kernels (matmul, add, relu twice), 0.18 two fused ones
    assert len(names) in (2, 6) and any("matmul" in n for n in names), names
    assert all(c["Duration (us)"] > 0 and c["Count"] == 1 and c["Argument Shapes"].startswith("float32[")
               for c in report.calls), report.calls
    assert report.device_metrics["cpu0"]["Duration (us)"] >= sum(c["Duration (us)"] for c in report.calls)
    table = report.table()
    assert "Sum" in table and "Total" in table and "matmul" in table, table
    assert report.csv().splitlines()[0].split(",") == sorted(report.calls[0]), report.csv()
    assert json.loads(report.json())["calls"][0]["Count"] == {"count": 1}
    np.testing.assert_allclose(vm["main"](x).numpy(), vms(s, "mlp")["main"](x).numpy(), rtol=0, atol=0)
    with pytest.raises(tvmrt.TVMError, match="profile=True"):
        vms(s, "mlp").profile("main", x)


@pytest.mark.parametrize("s", SETS)
def test_describe_lists_functions_and_symbolic_shapes(s):
    lib = tvmrt.load_module(_lib(s, "dyn"))
    d = json.loads(lib["describe"]())
    assert d["format"] == ("tvm-0.18" if s == "relax-0.18" else "tvm-ffi")
    main = next(f for f in d["functions"] if f["name"] == "main")
    (x,) = main["params"]
    assert x["name"] == "x" and x["dtype"] == "float32"
    assert x["shape"][1] == 16 and isinstance(x["shape"][0], str)
    two = json.loads(tvmrt.load_module(_lib(s, "two_funcs"))["describe"]())
    assert {"main", "second"} <= {f["name"] for f in two["functions"]}


@pytest.mark.parametrize("s", SETS)
def test_bad_calls_raise_with_the_message_and_the_vm_still_works(vms, s):
    vm = vms(s, "mlp")
    folder = _lib(s, "mlp").parent
    case = _manifest(s)["models"]["mlp"]["cases"][0]
    x = _read(folder, case["inputs"][0])
    with pytest.raises(tvmrt.TVMError) as e:
        vm["main"]()  # wrong arity
    assert "main expects 1 arguments" in str(e.value)
    with pytest.raises(tvmrt.TVMError) as e:
        vm["main"](x, x)
    assert "main expects 1 arguments (x), but 2 arguments were provided" in str(e.value)
    with pytest.raises(tvmrt.TVMError) as e:
        vm["main"](np.zeros((5, 32), "float32"))  # wrong shape
    assert "shape[0] is 5 but 4 is required" in str(e.value)
    with pytest.raises(tvmrt.TVMError) as e:
        vm["main"](x.astype("float64"))  # wrong dtype
    assert "float32 but get float64" in str(e.value)
    with pytest.raises(tvmrt.TVMError) as e:
        vm["no_such_function"]
    assert "no_such_function" in str(e.value)
    with pytest.raises(tvmrt.TVMError):
        vm.get_outputs("no_such_function")
    _check(vm["main"](x), case, folder)


def test_a_vm_library_is_not_a_graph_factory():
    lib = tvmrt.load_module(_lib("relax-0.18", "mlp"))
    assert lib.type_key == "relax.Executable" and lib.is_vm_executable()
    with pytest.raises(tvmrt.TVMError, match="VirtualMachine"):
        lib["default"]
    with pytest.raises(tvmrt.TVMError, match="VirtualMachine"):
        tvmrt.create(lib, tvmrt.cpu())


def test_a_graph_factory_is_not_a_vm(demo_path):
    with pytest.raises(tvmrt.TVMError, match="GraphExecutorFactory"):
        VirtualMachine(tvmrt.load_module(demo_path), tvmrt.cpu())


def test_a_vm_from_a_path_and_the_vm_module_functions():
    vm = VirtualMachine(str(_lib("relax-0.18", "two_funcs")), tvmrt.cpu())
    assert vm.module["get_function_arity"]("second") == 2
    assert vm.module["get_function_param_name"]("second", 0) == "a"
    assert {"main", "second"} <= {f["name"] for f in vm.describe()["functions"]}


@pytest.mark.parametrize("s", SETS)
def test_save_function_binds_the_arguments(vms, s):
    vm = vms(s, "tuple")
    folder = _lib(s, "tuple").parent
    case = _manifest(s)["models"]["tuple"]["cases"][0]
    x, y = [_read(folder, t) for t in case["inputs"]]
    vm.save_function("main", "main_saved", x, y)
    _check(vm.module["main_saved"](), case, folder)
    res = vm.time_evaluator("main", tvmrt.cpu(), number=2, repeat=3)(x=x, y=y)
    assert len(res.results) == 3 and res.min > 0


def test_python_m_tvmrt_runs_a_vm_library(capsys):
    from tvmrt.__main__ import main

    assert main([str(_lib("relax-0.18", "tuple")), "--runs", "3"]) == 0
    out = capsys.readouterr().out
    assert "main(x: float32 [4, 8], y: float32 [4, 8])" in out
    assert "output 0 [4, 8] float32" in out and "output 1 [4] float32" in out and "3 runs: median" in out
    assert main([str(_lib("relax-0.18", "dyn"))]) == 0
    assert "symbolic or unknown shapes: not run" in capsys.readouterr().out


@pytest.mark.parametrize("s", SETS)
def test_threads_share_one_vm(vms, s):
    from concurrent.futures import ThreadPoolExecutor

    vm = vms(s, "dyn")
    folder = _lib(s, "dyn").parent
    cases = _manifest(s)["models"]["dyn"]["cases"]
    work = [(c, [_read(folder, t) for t in c["inputs"]]) for c in cases] * 20

    def one(item):
        case, inputs = item
        _check(vm["main"](*inputs), case, folder)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, work))


def test_lists_pass_as_runtime_arrays():
    # A model's packed parameters are passed as a list, as in TVM's Python.
    size, get = tvmrt.get_global_func("runtime.ArraySize"), tvmrt.get_global_func("runtime.ArrayGetItem")
    x, y = tvmrt.nd.array(np.arange(4, dtype="float32")), tvmrt.nd.array(np.ones(2, "int32"))
    items = [x, (y, x)]
    assert size(items) == 2
    assert get(items, 0).numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert [a.numpy().tolist() for a in get(items, 1)] == [[1, 1], [0.0, 1.0, 2.0, 3.0]]
    # As in TVM 0.18's runtime, an Array holds objects: a number in one is a TypeError.
    with pytest.raises(TypeError, match="runtime.Array"):
        size([x, 7])
