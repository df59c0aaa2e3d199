"""apache-tvm 0.27's own Python runtime running the OpenCL Relax models of tests/data/opencl-0.27
with `tvm.opencl()` as the device, as a user would: tensors made on the device, the VM called
directly and through set_input / invoke_stateful (host inputs, which the VM copies), results
against numpy's (make.py), read back from the device.

    python run_opencl.py DATA_DIR ours|real

`ours`: this runtime as both libraries (`tvm-rt ffi-swap --tvm-runtime`, TVM_USE_RUNTIME_LIB=1);
every model must match, or the script says it skipped where no OpenCL platform is installed.
`real`: the wheel's own libraries, which are built without OpenCL: loading the models must fail
naming the opencl module loader (the fact that makes this runtime the first to run them).
"""

import os
import sys

import numpy as np
import tvm
import tvm_ffi
from tvm.runtime.vm import VirtualMachine

MODELS = {"vm_mlp": (5, 32), "vm_cnn": (1, 3, 16, 16)}


def library_in_use():
    path = os.path.join(os.path.dirname(tvm_ffi.__file__), "lib", "libtvm_ffi.so")
    with open(path, "rb") as f:
        return "ours" if b"rustc version" in f.read() else "real"


def check_wheel_refuses(root):
    try:
        tvm.runtime.load_module(os.path.join(root, "vm_mlp.so"))
    except Exception as e:  # the loader's error, whatever its class
        if "opencl" not in str(e):
            sys.exit(f"the wheel failed for another reason: {e}")
        print("the wheel's own libraries cannot load an OpenCL model (no opencl module loader)")
        return
    sys.exit("the wheel's own libraries loaded an OpenCL model: update run_opencl.py's docstring")


def run_model(root, name, shape, dev):
    vm = VirtualMachine(tvm.runtime.load_module(os.path.join(root, name + ".so")), dev)
    x = np.fromfile(os.path.join(root, name + ".input.bin"), dtype="float32").reshape(shape)
    want = np.fromfile(os.path.join(root, name + ".output.bin"), dtype="float32")
    y = vm["main"](tvm.runtime.tensor(x, dev))
    if y.device != dev:
        sys.exit(f"{name}: the result is on {y.device}, not {dev}")
    vm.set_input("main", tvm.runtime.tensor(x))
    vm.invoke_stateful("main")
    errors = [np.abs(r.numpy().ravel() - want).max() for r in (y, vm.get_outputs("main"))]
    print(f"  {name} on {dev}: max error {max(errors):.2e} against numpy")
    return max(errors) < 1e-5


def main():
    root, expected = sys.argv[1], sys.argv[2]
    used = library_in_use()
    if used != expected:
        sys.exit(f"expected {expected} libtvm_ffi.so in the tvm_ffi package, found {used}")
    if used == "real":
        return check_wheel_refuses(root)
    dev = tvm.opencl()
    if not dev.exist:
        print("skipped: no OpenCL device (install an OpenCL platform, e.g. pocl-opencl-icd)")
        return
    print(f"  {dev}: {dev.device_name}, {dev.max_threads_per_block} threads per block, OpenCL {dev.compute_version}")
    if dev.max_threads_per_block < 1 or not dev.device_name:
        sys.exit("the device's attributes are missing")
    bad = [name for name, shape in MODELS.items() if not run_model(root, name, shape, dev)]
    print(f"apache-tvm {tvm.__version__} on this runtime, tvm.opencl(): {len(MODELS) - len(bad)} of {len(MODELS)} models match")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
