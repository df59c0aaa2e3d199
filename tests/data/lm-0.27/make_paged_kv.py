"""The paged KV cache's kernels of apache/tvm's own test (third_party/tvm_tests'
test_runtime_builtin_paged_attention_kv_cache_cpu.py), built by apache-tvm 0.27 (PyPI) as that
test builds them, into kernel libraries a runtime-only process loads:
`python make_paged_kv.py OUT_DIR` writes one library per kernel and `manifest.json`, the test's
kernel-cache keys with the libraries of each, in the test's order. The test's own `set_global_func`
compiles them (with `tvm.tirx.build` recorded), for every kernel set the test asks for: the
fixture's head sizes and dtypes, and the per-layer sliding window of 3. Run by
scripts/tvm027_runtime.sh (once; the output is kept under target/)."""
import json
import os
import sys

import tvm

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "third_party", "tvm_tests", "tests", "python", "relax"))
import test_runtime_builtin_paged_attention_kv_cache_cpu as t  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
built = []
real_build = tvm.tirx.build


def recording_build(*args, **kwargs):
    mod = real_build(*args, **kwargs)
    built.append(mod)
    return mod


tvm.tirx.build = recording_build
kernel_sets = [(64, "float32", 1024), (64, "float16", 1024), (128, "float32", 1024), (128, "float16", 1024), (64, "float32", 3)]
manifest = {"target": str(tvm.target.Target.from_device(t.device)), "sets": []}
for head_dim, dtype, window in kernel_sets:
    built.clear()
    before = set(t._COMPILED_KERNEL_CACHE)
    t.set_global_func(head_dim, dtype, window)
    (key,) = set(t._COMPILED_KERNEL_CACHE) - before
    libs = []
    for i, mod in enumerate(built):
        name = f"paged_kv_{head_dim}_{dtype}_{window}_{i}.so"
        mod.export_library(os.path.join(out, name))
        libs.append(name)
    manifest["sets"].append({"key": list(key), "libraries": libs})
with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
print("wrote", len(manifest["sets"]), "kernel sets of", len(libs), "kernels to", out)
