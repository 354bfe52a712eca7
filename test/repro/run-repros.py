#!/usr/bin/env python3
"""Builds and runs the kernel repros `fusec --dump-kernels` writes.

For each model: fusec --target=TARGET --dump-kernels=WORK/<model>, then every
repro is built with the command its own header documents (the README's) and
run; each must print PASS and exit 0. Repros of kernels that differ only in
their name (repeated layers) are built once. Builds run in parallel.

The cuda target exits 77 (ctest's skip) without nvcc or a usable GPU.
Standard library only; any python3 >= 3.8.
"""

import argparse
import concurrent.futures
import ctypes
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

SKIP = 77


def gpu_unavailable_reason():
    """Why the CUDA repros cannot run here, or None."""
    if shutil.which("nvcc") is None and not os.path.exists(
            "/usr/local/cuda/bin/nvcc"):
        return "no nvcc"
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no CUDA driver (libcuda.so.1)"
    if cuda.cuInit(0) != 0:
        return "cuInit failed (no GPU?)"
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "no CUDA device"
    return None


def build_command(repro_path):
    """The `// Build:` line of a repro's header, as an argument list."""
    with open(repro_path) as f:
        for line in f:
            if line.startswith("// Build: "):
                return shlex.split(line[len("// Build: "):])
    raise RuntimeError(repro_path + ": no '// Build:' line")


def identity(directory, repro_name, kernel_name):
    """The code of the repro and of its kernel, without the kernel's name,
    comments and quoted names (buffer names differ between layers)."""
    digest = hashlib.sha256()
    source = repro_name.replace(".repro", "")
    for name in (repro_name, source):
        with open(os.path.join(directory, name)) as f:
            text = f.read().replace(kernel_name, "K")
        text = re.sub(r"^\s*//.*\n", "", text, flags=re.M)
        text = re.sub(r"'[^'\n]*'", "''", text)
        digest.update(text.encode())
    return digest.hexdigest()


def kind(directory, repro_name, kernel_name):
    """The kernel's schedule, ops and operand dtypes (not shapes): kernels
    of one kind differ only in sizes, perms, axes."""
    with open(os.path.join(directory, repro_name)) as f:
        text = f.read()
    header = re.search(r"\(schedule .*?\)", text, re.S).group(0)
    dtypes = re.findall(r"^\s*// (?:in|out)\d+: '[^']*', (\w+)\[", text,
                        re.M)
    return header + " " + " ".join(dtypes)


def host_compiler_command(nvcc_command):
    """A CUDA repro's nvcc command as g++: the repro is host code (NVRTC
    compiles the kernel when it runs), so g++ builds it against the
    toolkit's headers and stub libcuda into a small binary, to carry to a
    GPU machine that has no nvcc."""
    command = ["g++", "-x", "c++"]
    command += [arg for arg in nvcc_command[1:] if arg != "-Xcompiler"]
    return command + ["-I/usr/local/cuda/include", "-L/usr/local/cuda/lib64",
                      "-L/usr/local/cuda/lib64/stubs"]


def build(job, stub_driver=False):
    """Builds one repro; (binary or None, report)."""
    directory, repro = job
    command = build_command(os.path.join(directory, repro))
    if command[0] == "nvcc" and shutil.which("nvcc") is None:
        command[0] = "/usr/local/cuda/bin/nvcc"
    if stub_driver:
        command = host_compiler_command(command)
    built = subprocess.run(command, cwd=directory, capture_output=True,
                           text=True)
    if built.returncode != 0:
        return None, "build failed: %s\n%s%s" % (
            " ".join(command), built.stdout, built.stderr)
    return command[command.index("-o") + 1], ""


def run(directory, binary, runs, started):
    ran = subprocess.run(["./" + binary, "--runs=%d" % runs, "--warmup=1"],
                         cwd=directory, capture_output=True, text=True,
                         timeout=120)
    output = ran.stdout + ran.stderr
    passed = ran.returncode == 0 and re.search(r"^PASS ", ran.stdout, re.M)
    seconds = time.monotonic() - started
    return bool(passed), "%s (%.1f s)\n%s" % (
        os.path.join(os.path.basename(directory), binary), seconds, output)


def build_and_run(job, runs):
    started = time.monotonic()
    binary, report = build(job)
    if binary is None:
        return False, report
    return run(job[0], binary, runs, started)


def run_built(work, jobs, runs):
    """--run-built: runs the repros a --build-only call left in WORK."""
    with open(os.path.join(work, "built.txt")) as f:
        built = [line.split() for line in f if line.strip()]
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return tally(pool.map(
            lambda entry: run(os.path.join(work, entry[0]), entry[1], runs,
                              time.monotonic()), built), len(built))


def tally(results, count):
    """Prints each (passed, report) and the tally; the exit status."""
    failures = 0
    for passed, text in results:
        if not passed:
            failures += 1
            print("FAILED " + text)
        else:
            print(text.splitlines()[0] + ": PASS")
    print("%d of %d distinct repros passed" % (count - failures, count))
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fusec", help="the fusec binary (not for --run-built)")
    parser.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--work", required=True, help="scratch directory")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=3,
                        help="timed runs per repro")
    parser.add_argument(
        "--distinct", choices=["code", "kind"], default="code",
        help="build one repro per distinct code (kernels differing only in "
        "their names, as repeated layers) or per kind (schedule, ops and "
        "dtypes: faster, fewer shapes)")
    parser.add_argument(
        "--build-only", action="store_true",
        help="build without running (on a machine without a GPU), listing "
        "the binaries in WORK/built.txt for --run-built")
    parser.add_argument(
        "--run-built", action="store_true",
        help="run what --build-only built in WORK (no models, no compiler)")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()

    if args.run_built:
        return run_built(args.work, args.jobs, args.runs)
    if not args.models or not args.fusec:
        parser.error("--fusec and models are needed to dump the repros")
    if args.target == "cuda" and not args.build_only:
        reason = gpu_unavailable_reason()
        if reason:
            print("skipped: " + reason)
            return SKIP

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    jobs, seen, repros = [], set(), 0
    for model in args.models:
        # gpt2.onnx -> gpt2_onnx: models of one name in two formats differ.
        stem = os.path.basename(model).replace(".", "_")
        directory = os.path.join(args.work, stem)
        dumped = subprocess.run(
            [args.fusec, model, "--target=" + args.target,
             "--dump-kernels=" + directory], capture_output=True, text=True)
        if dumped.returncode != 0:
            print("fusec failed on %s:\n%s" % (model, dumped.stderr))
            return 1
        if not os.path.exists(os.path.join(directory, "README.md")):
            print("%s: no README.md in %s" % (model, directory))
            return 1
        for name in sorted(os.listdir(directory)):
            match = re.fullmatch(r"(.*)\.repro\.(cpp|cu)", name)
            if not match:
                continue
            repros += 1
            key = (identity if args.distinct == "code" else kind)(
                directory, name, match.group(1))
            if key not in seen:
                seen.add(key)
                jobs.append((directory, name))

    print("%d repros, %d distinct, from %d models" %
          (repros, len(jobs), len(args.models)))
    if args.build_only:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(
                lambda job: build(job, stub_driver=args.target == "cuda"),
                jobs))
        failed = [report for binary, report in results if binary is None]
        for report in failed:
            print("FAILED " + report)
        with open(os.path.join(args.work, "built.txt"), "w") as f:
            for (directory, _), (binary, _) in zip(jobs, results):
                if binary:
                    f.write("%s %s\n" % (os.path.basename(directory), binary))
        print("%d of %d distinct repros built" % (len(jobs) - len(failed),
                                                  len(jobs)))
        return 1 if failed else 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        return tally(
            pool.map(lambda job: build_and_run(job, args.runs), jobs),
            len(jobs))


if __name__ == "__main__":
    sys.exit(main())
