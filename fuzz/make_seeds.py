#!/usr/bin/env python3
"""Regenerates the seed corpora in fuzz/corpus/<target>/ (checked in; run from anywhere).

Seeds: the real files TVM 0.18 wrote (tests/data/tvm-0.18: graph.json, params.bin, mblob.bin;
large graphs re-serialised without whitespace to keep executions fast), plus small hand-made
inputs that reach features the real files do not (__nop / __copy / flatten_data nodes, several
outputs, device_index and storage_scope, unusual dtypes, zero-size and 0-d tensors, const_loader
and metadata_module blob entries, legacy blobs without an import tree). For the ELF check: hand-made
minimal library images and a tiny library built by the C compiler. For the Relax VM executable:
the executables inside the Relax libraries of tests/data/relax-0.18 (`__tvm_dev_mblob`) and
tests/data/relax-0.27 (`__tvm_ffi__library_bin`), and a small hand-made one with a loop.
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data", "tvm-0.18")
CORPUS = os.path.join(HERE, "corpus")
RELAX_027 = os.path.join(HERE, "..", "tests", "data", "relax-0.27")

NDARRAY_MAGIC = 0xDD5E40F096B4A13F
LIST_MAGIC = 0xF7E58D4F05049CB7
DTYPES = {  # name: (code, bits)
    "int8": (0, 8), "int32": (0, 32), "int64": (0, 64), "uint1": (1, 1), "uint8": (1, 8),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
}


def u64(v):
    return struct.pack("<Q", v)


def string(s):
    b = s.encode()
    return u64(len(b)) + b


def strings(v):
    return u64(len(v)) + b"".join(string(s) for s in v)


def record(dtype, shape, fill=1):
    code, bits = DTYPES[dtype]
    n = 1
    for d in shape:
        n *= d
    nbytes = n * ((bits + 7) // 8)
    out = u64(NDARRAY_MAGIC) + u64(0) + struct.pack("<iii", 1, 0, len(shape))
    out += struct.pack("<BBH", code, bits, 1)
    out += b"".join(struct.pack("<q", d) for d in shape)
    out += struct.pack("<q", nbytes) + bytes((fill + i) & 0xFF for i in range(nbytes))
    return out


def params(items):
    names = [n for n, _ in items]
    return u64(LIST_MAGIC) + u64(0) + strings(names) + u64(len(items)) + b"".join(r for _, r in items)


def blob(entries, tree=None):
    """entries: list of (type_key, payload bytes or None for _lib); tree: (row_ptr, children)."""
    body = b""
    count = len(entries) + (1 if tree else 0)
    for key, payload in entries:
        body += string(key) + (payload or b"")
    if tree:
        row_ptr, children = tree
        body += string("_import_tree")
        body += u64(len(row_ptr)) + b"".join(u64(x) for x in row_ptr)
        body += u64(len(children)) + b"".join(u64(x) for x in children)
    payload = u64(count) + body
    return u64(len(payload)) + payload


def graph(nodes, arg_nodes, heads, dltype, shape, storage_id=None, extra_attrs=None, **top):
    row_ptr = [0]
    for n in nodes:
        outs = int(n.get("attrs", {}).get("num_outputs", "1")) if n["op"] == "tvm_op" else 1
        row_ptr.append(row_ptr[-1] + outs)
    attrs = {
        "dltype": ["list_str", dltype],
        "storage_id": ["list_int", storage_id if storage_id is not None else list(range(len(dltype)))],
        "shape": ["list_shape", shape],
    }
    attrs.update(extra_attrs or {})
    g = {"nodes": nodes, "arg_nodes": arg_nodes, "node_row_ptr": row_ptr, "heads": heads, "attrs": attrs}
    g.update(top)
    return json.dumps(g, separators=(",", ":"))


def op(name, func, inputs, num_outputs=1, flatten=0, **extra):
    attrs = {"func_name": func, "num_inputs": str(len(inputs)), "num_outputs": str(num_outputs),
             "flatten_data": str(flatten)}
    attrs.update(extra)
    return {"op": "tvm_op", "name": name, "attrs": attrs, "inputs": [[i, k, 0] for i, k in inputs]}


def inp(name):
    return {"op": "null", "name": name, "inputs": []}


def hand_made_graphs():
    g = {}
    g["nop_alias"] = graph([inp("x"), op("alias", "__nop", [(0, 0)])], [0], [[1, 0, 0]],
                           ["float32", "float32"], [[2, 3], [2, 3]], storage_id=[0, 0])
    g["copy"] = graph([inp("x"), op("cp", "__copy", [(0, 0)])], [0], [[1, 0, 0]],
                      ["float32", "float32"], [[4], [4]])
    g["flatten_two_outputs"] = graph(
        [inp("a"), inp("b"), op("split", "fused_split", [(0, 0), (1, 0)], num_outputs=2, flatten=1,
                                hash="00ff"), op("tail", "fused_add", [(2, 1), (2, 0)])],
        [0, 1], [[2, 0, 0], [3, 0, 0], [2, 1]],
        ["float32", "float32", "float32", "float32", "float32"],
        [[2, 2], [2, 2], [2, 2], [4], [4]], storage_id=[0, 1, 2, 3, 2],
        extra_attrs={"device_index": ["list_int", [1, 1, 1, 1, 1]],
                     "storage_scope": ["list_str", ["global", "", "global", "global", ""]],
                     "func_name_hint": ["list_str", ["a", "b", "c", "d", "e"]]},
        metadata={"note": "hand-made"})
    g["dtypes"] = graph(
        [inp("i8"), inp("u1"), inp("f16"), inp("bf16"), inp("i64"),
         op("mix", "fused_mix", [(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)])],
        [0, 1, 2, 3, 4], [[5, 0, 0]],
        ["int8", "uint1", "float16", "bfloat16", "int64", "float32x4"],
        [[3], [8], [1, 1, 1], [], [0, 5], [2]])
    g["control_deps_attr_key"] = json.dumps({
        "nodes": [{"op": "null", "name": "x", "inputs": [], "attrs": {}},
                  {"op": "tvm_op", "name": "f", "attr": {"func_name": "f", "num_inputs": 1,
                                                         "num_outputs": 1, "flatten_data": 0},
                   "inputs": [[0, 0]], "control_deps": [0]}],
        "arg_nodes": [0], "node_row_ptr": [0, 1, 2], "heads": [[1, 0]],
        "attrs": {"dltype": ["list_str", ["uint8", "uint8"]], "storage_id": ["list_int", [0, 1]],
                  "shape": ["list_shape", [[16], [16]]]}}, separators=(",", ":"))
    g["no_ops"] = graph([inp("x")], [0], [[0, 0, 0]], ["float64"], [[1]])
    return g


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def elf_image(big_endian=False, extended_count=False):
    """A minimal ELF64 x86-64 shared library image as the runtime's check reads it: header, a load
    segment over the whole file, a dynamic segment inside it, one section header at the end
    (with extended_count: e_shnum 0 and the count in that entry's sh_size)."""
    e = ">" if big_endian else "<"
    size = 64 + 2 * 56 + 64 + 64
    shoff = size - 64
    header = b"\x7fELF" + bytes([2, 2 if big_endian else 1, 1]) + bytes(9)
    header += struct.pack(e + "HHIQQQIHHHHHH", 3, 62, 1, 0, 64, shoff, 0, 64, 56, 2, 64,
                          0 if extended_count else 1, 0)
    load = struct.pack(e + "IIQQQQQQ", 1, 5, 0, 0, 0, size, size + 100, 0x1000)
    dynamic = struct.pack(e + "IIQQQQQQ", 2, 6, 176, 176, 176, 64, 64, 8)
    section = bytearray(64)
    if extended_count:
        section[32:40] = struct.pack(e + "Q", 1)
    return header + load + dynamic + bytes(64) + bytes(section)


def compiled_library():
    """A tiny shared library built by the C compiler (None when there is none)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "tiny.c"), os.path.join(d, "tiny.so")
        with open(src, "w") as f:
            f.write("int tiny(int x) { return x + 1; }\n")
        flags = ["-shared", "-fPIC", "-O2", "-nostdlib", "-s", "-Wl,--build-id=none",
                 "-Wl,-z,max-page-size=4096", "-Wl,-z,noseparate-code"]
        try:
            subprocess.run([os.environ.get("CC", "cc"), *flags, src, "-o", out], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print("no compiled ELF seed:", e)
            return None
        with open(out, "rb") as f:
            return f.read()


def elf_symbol(image, name):
    """The bytes of dynamic symbol `name` of a little-endian ELF64 image."""
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", image, 0x3A)
    secs = [struct.unpack_from("<IIQQQQI", image, shoff + i * shentsize + 0) for i in range(shnum)]
    # (name, type, flags, addr, offset, size, link)
    dynsym = next(x for x in secs if x[1] == 11)
    strtab = secs[dynsym[6]][4]
    for k in range(dynsym[5] // 24):
        st_name, _, _, _, st_value, st_size = struct.unpack_from("<IBBHQQ", image, dynsym[4] + 24 * k)
        end = image.index(b"\0", strtab + st_name)
        if image[strtab + st_name:end] == name.encode():
            sec = next(x for x in secs if x[3] <= st_value < x[3] + x[5] and x[1] != 8)
            off = sec[4] + st_value - sec[3]
            return image[off:off + st_size]
    return None


def read_str(b, pos):
    n, = struct.unpack_from("<Q", b, pos)
    return b[pos + 8:pos + 8 + n], pos + 8 + n


def relax_executable(lib):
    """The executable bytes inside a Relax library of either generation."""
    with open(lib, "rb") as f:
        image = f.read()
    blob = elf_symbol(image, "__tvm_dev_mblob")
    if blob is not None:  # TVM 0.18: <nbytes> <count> then (key, payload) entries
        pos = 16
        while True:
            key, pos = read_str(blob, pos)
            if key == b"_lib":
                continue
            code, pos = read_str(blob, pos)
            if key == b"relax.Executable":
                return code
    lb = elf_symbol(image, "__tvm_ffi__library_bin")
    pos = 8
    for _ in range(2):  # the import tree's indptr and child indices
        n, = struct.unpack_from("<Q", lb, pos)
        pos += 8 + 8 * n
    while True:
        key, pos = read_str(lb, pos)
        if key == b"_lib":
            continue
        code, pos = read_str(lb, pos)
        if key == b"relax.VMExecutable":
            return code


def hand_made_executable():
    """`main(x)`: a counter loop (If / Goto) around a builtin call, then `ret %0`."""
    def func(kind, name, start, end, nargs, regs, params):
        return struct.pack("<i", kind) + string(name) + struct.pack("<qqqq", start, end, nargs, regs) + strings(params)
    void = 1 << 54
    words = [1, void, 1, 0,  # call null_value
             4, 0, 2,        # If %0 else jump by 2 (to the ret)
             3, -2,          # goto back to the If
             2, 0]           # ret %0
    offsets = [0, 4, 7, 9]
    return (u64(0xD225DE2F4214151D) + string("0.14") + u64(2)
            + func(1, "main", 0, 4, 1, 2, ["x"]) + func(0, "vm.builtin.null_value", 0, 0, -2, 0, [])
            + u64(2) + struct.pack("<i", 4) + struct.pack("<q", 7) + struct.pack("<i", 2) + u64(2) + struct.pack("<qq", 4, 8)
            + u64(len(offsets)) + b"".join(struct.pack("<q", o) for o in offsets)
            + u64(len(words)) + b"".join(struct.pack("<q", w) for w in words))


def rpc_sessions():
    """Packet streams as a TVM 0.18 host sends them (protocol 0.8.0)."""
    def seq(*values):  # (type code, payload bytes) pairs
        return struct.pack("<i", len(values)) + b"".join(struct.pack("<i", c) for c, _ in values) + b"".join(
            v for _, v in values)

    def s(text):
        return (11, struct.pack("<Q", len(text)) + text)

    def tensor(data, shape, offset=0):
        return (struct.pack("<Qiii", data, 1, 0, len(shape)) + bytes([2, 32, 1, 0])
                + b"".join(struct.pack("<q", d) for d in shape) + struct.pack("<Q", offset))

    init = struct.pack("<iQ", 2, 5) + b"0.8.0" + seq()
    cpu = (6, struct.pack("<ii", 1, 0))
    alloc = struct.pack("<i", 13) + seq(cpu, (0, struct.pack("<q", 64)), (0, struct.pack("<q", 64)),
                                        (5, bytes([2, 32, 1, 0]) + b"\0" * 4))
    return {
        "files.bin": [init, struct.pack("<i", 9) + seq(s(b"tvm.rpc.server.upload")),
                      struct.pack("<iQ", 3, 0x100000) + seq(s(b"a.bin"), (12, struct.pack("<Q", 3) + b"abc")),
                      struct.pack("<i", 9) + seq(s(b"tvm.rpc.server.download")),
                      struct.pack("<iQ", 3, 0x100010) + seq(s(b"a.bin")),
                      struct.pack("<i", 10) + seq((3, struct.pack("<Q", 0x100000)), (0, struct.pack("<q", 10))),
                      struct.pack("<i", 1)],
        "buffers.bin": [init, alloc,
                        struct.pack("<i", 7) + tensor(0, [4, 4]) + struct.pack("<Q", 4) + b"wxyz",
                        struct.pack("<i", 6) + tensor(0, [4, 4], 8) + struct.pack("<Q", 8),
                        struct.pack("<i", 12) + seq(cpu, (0, struct.pack("<q", 0))),
                        struct.pack("<i", 14) + seq(cpu, (3, struct.pack("<Q", 0)))],
        "no_init.bin": [struct.pack("<i", 9) + seq(s(b"x")), struct.pack("<i", 3) + struct.pack("<Q", 1) + seq()],
        "ffi_files.bin": ffi_session(init),
    }


def ffi_session(init):
    """The files session as an apache-tvm 0.2x host sends it: tvm-ffi type indices, each right
    before its value; bytes in the object form (66, u32 66, length, data); one-argument FreeHandle."""
    def seq(*values):  # (type index, payload bytes) pairs, interleaved
        return struct.pack("<i", len(values)) + b"".join(struct.pack("<i", c) + v for c, v in values)

    def s(text):
        return (8, struct.pack("<Q", len(text)) + text)

    return [init, struct.pack("<i", 12) + seq((6, struct.pack("<ii", 2, 0)), (1, struct.pack("<q", 0))),
            struct.pack("<i", 9) + seq(s(b"tvm.rpc.server.upload")),
            struct.pack("<iQ", 3, 0x100000) + seq(s(b"a.bin"), (66, struct.pack("<IQ", 66, 3) + b"abc")),
            struct.pack("<i", 9) + seq(s(b"tvm.rpc.server.download")),
            struct.pack("<iQ", 3, 0x100010) + seq(s(b"a.bin")),
            struct.pack("<i", 10) + seq((4, struct.pack("<Q", 0x100000))),
            struct.pack("<i", 1)]


def main():
    for t in ("graph_json", "params", "blob", "elf", "relax_exec", "library_bin"):
        shutil.rmtree(os.path.join(CORPUS, t), ignore_errors=True)
    # Real files from TVM 0.18.
    for model in ("mlp", "seed000", "seed004"):
        with open(os.path.join(DATA, model, "graph.json"), "rb") as f:
            write("graph_json", f"tvm_{model}.json", f.read())
    for model in ("resnet18", "inception_v3"):
        with open(os.path.join(DATA, model, "graph.json")) as f:
            write("graph_json", f"tvm_{model}_compact.json", json.dumps(json.load(f), separators=(",", ":")))
    for model in ("mlp", "seed000", "seed004", "chain500"):
        with open(os.path.join(DATA, model, "params.bin"), "rb") as f:
            write("params", f"tvm_{model}.bin", f.read())
    for model in ("mlp", "seed000", "seed004"):
        with open(os.path.join(DATA, model, "mblob.bin"), "rb") as f:
            write("blob", f"tvm_{model}.bin", f.read())

    # Library bins of the tvm-ffi releases (apache-tvm 0.27 files).
    for model in sorted(os.listdir(RELAX_027)):
        lib = os.path.join(RELAX_027, model, "lib.so")
        if os.path.isfile(lib):
            with open(lib, "rb") as f:
                write("library_bin", f"tvm027_{model}.bin", elf_symbol(f.read(), "__tvm_ffi__library_bin"))

    # Hand-made graphs.
    for name, text in hand_made_graphs().items():
        write("graph_json", f"hand_{name}.json", text)

    # Hand-made params.
    write("params", "hand_empty.bin", params([]))
    write("params", "hand_dtypes.bin", params([
        ("i8", record("int8", [3])), ("u1", record("uint1", [5])), ("f16", record("float16", [2, 2])),
        ("bf16", record("bfloat16", [1])), ("i64", record("int64", [2])), ("f64", record("float64", [1, 1, 1])),
    ]))
    write("params", "hand_scalar_and_empty.bin", params([("s", record("float32", [])), ("z", record("int32", [0, 7]))]))
    write("params", "hand_duplicate_names.bin", params([("w", record("uint8", [4])), ("w", record("uint8", [2]))]))

    # Hand-made blobs.
    factory = string(json.dumps(json.loads(hand_made_graphs()["copy"]))) + u64(1) + strings(["x"]) \
        + record("float32", [4]) + string("default")
    const_loader = strings(["c0", "c1"]) + u64(2) + record("float32", [2]) + record("int8", [3]) \
        + strings(["sym_a", "sym_b"]) + u64(2) + strings(["c0"]) + strings(["c0", "c1"])
    write("blob", "hand_lib_only.bin", blob([("_lib", None)]))
    write("blob", "hand_factory_tree.bin",
          blob([("_lib", None), ("GraphExecutorFactory", factory)], ([0, 1, 1], [1])))
    write("blob", "hand_factory_root.bin",
          blob([("GraphExecutorFactory", factory), ("_lib", None)], ([0, 1, 1], [1])))
    write("blob", "hand_const_loader.bin",
          blob([("_lib", None), ("const_loader", const_loader), ("metadata_module", b"")],
               ([0, 1, 2, 2], [1, 2])))
    write("blob", "hand_legacy_no_tree.bin", blob([("GraphRuntimeFactory", factory), ("metadata", const_loader)]))

    # ELF libraries (the check before dlopen).
    write("elf", "hand_minimal.so", elf_image())
    write("elf", "hand_big_endian.so", elf_image(big_endian=True))
    write("elf", "hand_extended_section_count.so", elf_image(extended_count=True))
    tiny = compiled_library()
    if tiny is not None:
        write("elf", "cc_tiny.so", tiny)

    # Relax VM executables of both generations.
    for version in ("relax-0.18", "relax-0.27"):
        root = os.path.join(HERE, "..", "tests", "data", version)
        for model in sorted(os.listdir(root)):
            lib = os.path.join(root, model, "lib.so")
            if os.path.isfile(lib):
                write("relax_exec", f"tvm{version[6:].replace('.', '')}_{model}.bin", relax_executable(lib))
    write("relax_exec", "hand_loop.bin", hand_made_executable())

    # RPC sessions: streams of TVM 0.18 host packets.
    for name, packets in rpc_sessions().items():
        write("rpc_session", name, b"".join(struct.pack("<Q", len(p)) + p for p in packets))


if __name__ == "__main__":
    main()
