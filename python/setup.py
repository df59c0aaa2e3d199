"""Builds the Rust library (``cargo build`` of the crate one directory up, through setuptools-rust)
and ships it inside the package as ``tvmrt/libtvm_runtime.so``, so an installed ``tvmrt`` needs no
checkout and no environment variable. The version is the crate's: one number, from Cargo.toml."""

import os
import re
from pathlib import Path

from setuptools import setup
from setuptools_rust import Binding, RustExtension, Strip, build_rust
from wheel.bdist_wheel import bdist_wheel

CARGO_TOML = Path(__file__).resolve().parent.parent / "Cargo.toml"

# The wheel's library is built with other features (`--no-default-features`) than `cargo build`'s,
# so in cargo's own target directory each would rebuild the other's crates (and leave the other
# variant in target/release); the wheel gets a target directory of its own instead.
os.environ.setdefault("CARGO_TARGET_DIR", str(CARGO_TOML.parent / "target" / "python-cargo"))


def cargo_version() -> str:
    text = CARGO_TOML.read_text()
    package = text.split("[package]", 1)[1].split("\n[", 1)[0]
    match = re.search(r'^version\s*=\s*"([^"]+)"', package, re.M)
    if not match:
        raise RuntimeError(f"no version in the [package] table of {CARGO_TOML}")
    return match.group(1)


class BuildLibrary(build_rust):
    """Places the library as ``tvmrt/libtvm_runtime.so``, the name C programs and ``ldd`` know,
    not under a Python extension's name (``libtvm_runtime.cpython-311-....so``)."""

    def get_dylib_ext_path(self, ext: RustExtension, target_fname: str) -> str:
        folder = os.path.dirname(super().get_dylib_ext_path(ext, target_fname))
        for stale in Path(folder).glob("libtvm_runtime*"):  # an earlier build's, under any name
            stale.unlink()
        return os.path.join(folder, "libtvm_runtime.so")


class Py3Wheel(bdist_wheel):
    """One wheel per platform for every Python 3: the package loads the library with ctypes
    and uses no Python C API."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(
    version=cargo_version(),
    rust_extensions=[
        # A C library, not a Python extension: loaded with ctypes, so one build serves every
        # Python version (the wheel is tagged py3-none-<platform>). Only the library is built:
        # the command-line tool's dependencies (the default `cli` feature) are left out.
        RustExtension(
            "tvmrt.libtvm_runtime",
            path=str(CARGO_TOML),
            binding=Binding.NoBinding,
            args=["--no-default-features"],
            py_limited_api=False,
            # The release profile keeps debug info (for profiling); the wheel does not need it.
            strip=Strip.Debug,
        )
    ],
    cmdclass={"build_rust": BuildLibrary, "bdist_wheel": Py3Wheel},
    # Build outputs go under the crate's target/, beside cargo's, not into the source tree.
    options={"build": {"build_base": str(CARGO_TOML.parent / "target" / "python-build")}},
    zip_safe=False,
)
