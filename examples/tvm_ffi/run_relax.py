"""A Relax model (tests/data/relax-0.27/mlp, built by apache-tvm 0.27's tvm.compile) run by apache-tvm's
own Python, on whichever libtvm_ffi.so its tvm_ffi package loads: the same before and after
`tvm-rt ffi-swap`. Run from the root of the checkout."""
import numpy as np
import tvm

lib = tvm.runtime.load_module("tests/data/relax-0.27/mlp/lib.so")
vm = tvm.relax.VirtualMachine(lib, tvm.cpu())
x = np.fromfile("tests/data/relax-0.27/mlp/main0_in0.bin", dtype="float32").reshape(4, 32)
print(np.round(vm["main"](tvm.runtime.tensor(x)).numpy(), 4))
