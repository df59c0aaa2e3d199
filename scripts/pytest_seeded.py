"""pytest plugin: numpy's and Python's global random generators seeded before every test.

apache/tvm's tests draw inputs from unseeded generators and compare float32 kernels with numpy at
rtol=1e-7, so some draws fail on any library (test_vm_multi_device.py::test_multi_cpu fails on
about 3% of draws, on the wheel's libraries and on ours alike). Seeded, every test sees the same
inputs on both libraries, and a test lost on ours is lost for a reason of ours.
"""
import random

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seeded_random():
    random.seed(0)
    np.random.seed(0)
    yield
