#!/usr/bin/env python3
"""Writes fuzz-package's seeds (test/fuzz/corpus/package/) from packages the
built `fusec` compiles, so they follow the current package format
(docs/packages.md): the example, gemm_relu and linear_bias_gelu for the CPU
and softmax, a symbolic model and an unfused attention over a symbolic
sequence for CUDA (through NVRTC, no GPU needed), each with its code and
PTX sections cut to 64 bytes (the harness never loads code; small seeds
mutate faster) and the table, hashes and size rewritten to match; and the
first 2000 bytes of one, a truncated package.

    python3 test/fuzz/make_package_seeds.py [build/tools/fusec]
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The cache stress test's FNV-1a (runtime/cache/Hash.h), the packages' hash.
sys.path.insert(0, os.path.join(ROOT, "test", "cache"))
from stress import fnv1a  # noqa: E402
HEADER, ENTRY, ALIGN, CHECKSUM_AT = 64, 32, 64, 40
CODE, PTX = 3, 4
KEPT_CODE_BYTES = 64


def align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def shrink(package):
    """The package with its code and PTX sections cut, re-laid out."""
    count = struct.unpack_from("<I", package, 28)[0]
    sections = []
    for i in range(count):
        kind, index, offset, size, _ = struct.unpack_from(
            "<IIQQQ", package, HEADER + i * ENTRY)
        data = package[offset:offset + size]
        if kind in (CODE, PTX):
            data = data[:KEPT_CODE_BYTES]
        sections.append((kind, index, data))
    end = align(HEADER + count * ENTRY)
    table, offsets = b"", []
    for kind, index, data in sections:
        offsets.append(end)
        table += struct.pack("<IIQQQ", kind, index, end, len(data),
                             fnv1a(data))
        end = align(end + len(data))
    head = bytearray(package[:HEADER])
    struct.pack_into("<Q", head, 32, end)
    struct.pack_into("<Q", head, CHECKSUM_AT, 0)
    head += table
    struct.pack_into("<Q", head, CHECKSUM_AT, fnv1a(bytes(head)))
    out = bytearray(end)
    out[:len(head)] = head
    for offset, (_, _, data) in zip(offsets, sections):
        out[offset:offset + len(data)] = data
    return bytes(out)


def main():
    fusec = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "build", "tools", "fusec")
    models = [("seed-cpu", "examples/seed.json", "cpu", []),
              ("gemm-cpu", "test/models/gemm_relu.json", "cpu", []),
              ("linear-cpu", "test/models/linear_bias_gelu.json", "cpu", []),
              ("softmax-cuda", "test/models/softmax.json", "cuda", []),
              # A symbolic program: symbols, symbolic shapes, dynamic grids.
              ("symbolic-cuda", "test/models/symbolic_sequence.json", "cuda",
               ["--dim", "seq=1..64"]),
              # A derived symbol (a cache grown by concatenation): sums.
              ("derived-cpu", "test/models/concat_cache.json", "cpu",
               ["--dim", "past=1..64", "--dim", "seq=1..8"]),
              # Symbolic matmul sizes (n, k), rows and columns of symbolic
              # length.
              ("unfused-attention-cuda", "test/models/unfused_attention.json",
               "cuda", ["--no-fused-attention", "--dim", "batch=1..4",
                        "--dim", "seq=1..64"])]
    corpus = os.path.join(HERE, "corpus", "package")
    with tempfile.TemporaryDirectory() as work:
        for name, model, target, extra in models:
            path = os.path.join(work, name + ".fusec")
            subprocess.run([fusec, os.path.join(ROOT, model),
                            "--target=" + target, "--emit=package", "-o",
                            path] + extra, check=True)
            with open(path, "rb") as f:
                seed = shrink(f.read())
            with open(os.path.join(corpus, name), "wb") as f:
                f.write(seed)
            if name == "seed-cpu":
                with open(os.path.join(corpus, "truncated"), "wb") as f:
                    f.write(seed[:2000])
            print(f"{name}: {len(seed)} bytes")


if __name__ == "__main__":
    main()
