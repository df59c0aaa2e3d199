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
import tvm
import tvm.runtime._ffi_api
import tvm.target._ffi_api
from tvm import te


def checker(mod, expected):
    assert mod.is_binary_serializable() == expected["is_binary_serializable()"]
    assert mod.is_runnable() == expected["is_runnable"]
    assert mod.is_compilation_exportable() == expected["is_compilation_exportable()"]


def create_csource_module():
    return tvm.runtime._ffi_api.CSourceModuleCreate("", "cc", [], None)


def create_llvm_module():
    A = te.placeholder((1024,), name="A")
    B = te.compute(A.shape, lambda *i: A(*i) + 1.0, name="B")
    return tvm.tirx.build(te.create_prim_func([A, B]), target="llvm")


def test_property():
    checker(
        create_csource_module(),
        expected={
            "is_binary_serializable()": True,
            "is_runnable": False,
            "is_compilation_exportable()": True,
        },
    )

    checker(
        create_llvm_module(),
        expected={
            "is_binary_serializable()": False,
            "is_runnable": True,
            "is_compilation_exportable()": True,
        },
    )


if __name__ == "__main__":
    tvm.testing.main()
