"""A pytest plugin that runs apache/tvm's own test of the paged KV cache
(third_party/tvm_tests' test_runtime_builtin_paged_attention_kv_cache_cpu.py, unchanged)
runtime-only (TVM_USE_RUNTIME_LIB=1): its kernels come prebuilt (tests/data/lm-0.27/
make_paged_kv.py, whose manifest the environment variable PAGED_KV_KERNELS names) into the test's
own kernel cache, and the compiler modules it imports for building them, which a runtime-only
process lacks, are stand-ins (only `AttnKind`, an enum, is used from them otherwise).

    PAGED_KV_KERNELS=DIR/manifest.json TVM_USE_RUNTIME_LIB=1 \
        python -m pytest -p paged_kv_runtime_only third_party/.../test_runtime_builtin_paged_attention_kv_cache_cpu.py
"""
import enum
import json
import os
import sys
import types

import tvm


class AttnKind(enum.IntEnum):
    """apache-tvm's `relax.frontend.nn.llm.kv_cache.AttnKind`."""

    MHA = 0
    MLA = 1
    MHA_SLIDING = 3


def _not_here(*_args, **_kwargs):
    raise RuntimeError("a kernel builder: the kernels of a runtime-only run come prebuilt")


def _stand_ins():
    kv_cache = types.ModuleType("tvm.relax.frontend.nn.llm.kv_cache")
    kv_cache.AttnKind = AttnKind
    for name in ("_attention_decode_cpu", "_attention_prefill_cpu", "_attention_prefill_ragged_cpu",
                 "_compact_kv_copy_cpu", "_copy_single_page_cpu", "_kv_cache_debug_get_kv",
                 "_kv_cache_transpose_append", "_merge_state_inplace_cpu", "llama_rope_with_position_map",
                 "tree_attn_cpu", "tree_attn_with_paged_kv_cache_cpu"):
        setattr(kv_cache, name, _not_here)
    dlight = types.ModuleType("tvm.s_tir.dlight")
    s_tir = types.ModuleType("tvm.s_tir")
    s_tir.dlight = dlight
    modules = {"tvm.s_tir": s_tir, "tvm.s_tir.dlight": dlight, "tvm.relax.frontend.nn.llm.kv_cache": kv_cache}
    for name in ("tvm.relax", "tvm.relax.frontend", "tvm.relax.frontend.nn", "tvm.relax.frontend.nn.llm"):
        modules[name] = types.ModuleType(name)
    for name, module in modules.items():
        sys.modules.setdefault(name, module)


_stand_ins()
with open(os.environ["PAGED_KV_KERNELS"]) as f:
    _manifest = json.load(f)
_folder = os.path.dirname(os.path.abspath(os.environ["PAGED_KV_KERNELS"]))
# The test keys its kernel cache by str(Target.from_device(device)), which needs the compiler.
tvm.target.Target.from_device = staticmethod(lambda _device: _manifest["target"])


def pytest_collection_finish(session):
    """Fills the test module's kernel cache with the prebuilt kernels."""
    del session
    module = sys.modules["test_runtime_builtin_paged_attention_kv_cache_cpu"]
    for kernel_set in _manifest["sets"]:
        functions = [tvm.runtime.load_module(os.path.join(_folder, lib))["main"] for lib in kernel_set["libraries"]]
        module._COMPILED_KERNEL_CACHE[tuple(kernel_set["key"])] = tuple(functions)
