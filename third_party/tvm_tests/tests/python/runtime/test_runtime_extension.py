# Licensed to the Apache Software Foundation (ASF) under one
# or more contributor license agreements.  See the NOTICE file
# distributed with this work for additional information
# regarding copyright ownership.  The ASF licenses this file
# to you under the Apache License, Version 2.0 (the
# "License"); you may not use this file except in compliance
# with the License.  You may obtain a copy of the License at
#
#   http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing,
# software distributed under the License is distributed on an
# "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
# KIND, either express or implied.  See the License for the
# specific language governing permissions and limitations
# under the License.
import numpy as np

import tvm
from tvm.script import ir as I
from tvm.script import tirx as T


def test_dltensor_compatible():
    @I.ir_module
    class Module:
        @T.prim_func(s_tir=True)
        def arange(A: T.handle):
            n = T.int32()
            Ab = T.match_buffer(A, (n,), "int64")
            for i in T.serial(n - 1):
                Ab[i + 1] = Ab[i] + T.int64(1)

    mod = Module
    f = tvm.compile(mod, target="llvm")
    a = tvm.runtime.tensor(np.zeros(10, dtype="int64"))
    f(a)
    np.testing.assert_equal(a.numpy(), np.arange(a.shape[0]))


if __name__ == "__main__":
    test_dltensor_compatible()
