"""Hostile values through tvm-ffi's Python package on whichever libtvm_ffi.so it loads (run by
scripts/tvm_ffi_suite.sh with this runtime's in place): object graphs with cycles, lists and dicts
that hold themselves, and containers nested 100 000 deep. Each case runs in its own interpreter,
which must end normally: with the value, or with a ValueError naming what was wrong (tvm-ffi's own
library ends with a segmentation fault on most of them)."""

import subprocess
import sys

import pytest

LOAD = 'tvm_ffi.get_global_func("ffi.FromJSONGraphString")'
DEEP = "l = tvm_ffi.List()\nfor i in range(100000):\n    l = tvm_ffi.List([l])\n"
SELF = "l = tvm_ffi.List([1]); l.append(l)\n"

CASES = {
    # (code, expected: "ok" or a ValueError message fragment)
    "graph_cycle": (
        LOAD + """('{"root_index":3,"nodes":[{"type":"ffi.String","data":"k"},{"type":"int","data":1},'
        '{"type":"ffi.Map","data":[0,3]},{"type":"ffi.Array","data":[2,2,2]}]}')""",
        "node 3 refers to node 2, which contains it (a cycle)",
    ),
    "graph_map_holds_itself": (
        LOAD + """('{"root_index":2,"nodes":[{"type":"ffi.String","data":"k"},{"type":"int","data":1},'
        '{"type":"ffi.Map","data":[2,1]}]}')""",
        "node 2 refers to node 2, which contains it (a cycle)",
    ),
    "json_nested_100000": ('tvm_ffi.get_global_func("ffi.json.Parse")("[" * 100000 + "]" * 100000)', "nesting too deep"),
    "self_list_hash": (SELF + "tvm_ffi.structural_hash(l)", "contains itself (a cycle)"),
    "self_list_equal": (SELF + "tvm_ffi.structural_equal(l, l)", "contains itself (a cycle)"),
    "self_list_repr": (SELF + "assert '...' in repr(l)", "ok"),
    "deep_hash_equal": (DEEP + "m = l\nassert tvm_ffi.structural_equal(l, m)\ntvm_ffi.structural_hash(l)", "ok"),
    "deep_repr_copy": (DEEP + 'repr(l)\ntvm_ffi.get_global_func("ffi.DeepCopy")(l)', "ok"),
    "deep_graph_round_trip": (
        DEEP + 's = tvm_ffi.get_global_func("ffi.ToJSONGraphString")(l, None)\n' + LOAD + "(s)",
        "ok",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_values_end_in_a_value_or_a_value_error(name):
    code, expected = CASES[name]
    script = (
        "import tvm_ffi\ntry:\n    "
        + code.replace("\n", "\n    ")
        + "\n    print('ok')\nexcept ValueError as e:\n    print('ValueError:', e)\n"
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{name}: the interpreter died (exit {r.returncode}): {r.stderr[-2000:]}"
    out = r.stdout.strip()
    if expected == "ok":
        assert out == "ok", f"{name}: {out}"
    else:
        assert out.startswith("ValueError:") and expected in out, f"{name}: {out}"
