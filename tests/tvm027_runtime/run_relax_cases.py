"""apache-tvm 0.27's own Python runtime (`import tvm`, `tvm.runtime.load_module`,
`relax.VirtualMachine`) running every case of tests/data/relax-0.27 on whichever libtvm_ffi.so
its tvm_ffi package holds, outputs compared with the ones apache-tvm recorded.

    python run_relax_cases.py DATA_DIR ours|real

The second argument says which library must be in place (this runtime's is built by rustc, whose
version it carries in its `.comment` section, the real one by a C++ compiler), so a swap that did
not happen fails.
Prints a line per case; exits non-zero on any mismatch.
"""

import json
import os
import sys

import numpy as np
import tvm
import tvm_ffi
from tvm import relax


def library_in_use():
    path = os.path.join(os.path.dirname(tvm_ffi.__file__), "lib", "libtvm_ffi.so")
    with open(path, "rb") as f:
        return "ours" if b"rustc version" in f.read() else "real"


def tensors(root, name, specs, dev):
    load = lambda s: np.fromfile(os.path.join(root, name, s["file"]), dtype=s["dtype"]).reshape(s["shape"])
    return [load(s) if dev is None else tvm.runtime.tensor(load(s), dev) for s in specs]


def run_case(root, name, lib, case, dev):
    vm = relax.VirtualMachine(lib, dev)
    out = vm[case["func"]](*tensors(root, name, case["inputs"], dev))
    outs = list(out) if case["tuple"] else [out]
    wants = tensors(root, name, case["outputs"], None)
    if len(outs) != len(wants):
        return False
    return all(np.allclose(o.numpy(), w, rtol=1e-5, atol=1e-5) for o, w in zip(outs, wants))


def main():
    root, expected = sys.argv[1], sys.argv[2]
    used = library_in_use()
    if used != expected:
        sys.exit(f"expected {expected} libtvm_ffi.so in the tvm_ffi package, found {used}")
    manifest = json.load(open(os.path.join(root, "manifest.json")))
    dev, bad, total = tvm.cpu(), 0, 0
    for name, model in manifest["models"].items():
        lib = tvm.runtime.load_module(os.path.join(root, model["lib"]))
        for case in model["cases"]:
            ok = run_case(root, name, lib, case, dev)
            bad, total = bad + (not ok), total + 1
            print(f"  {name} {case['name']}: {'ok' if ok else 'MISMATCH'}")
    which = {"ours": "this runtime's", "real": "the wheel's own"}[used]
    print(f"apache-tvm {tvm.__version__} on {which} libtvm_ffi.so: {total - bad} of {total} cases match")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
