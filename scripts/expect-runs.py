#!/usr/bin/env python3
"""The lit suite's CPU model runs with --expect, for a machine without
FileCheck (another CPU: the GPU machines' Xeons have AVX-512, which the
development machines lack; docs in README, "the suite's tolerance policy").

  scripts/expect-runs.py write stage/run-expect.sh
      a script that runs each `fusec ... --run --expect` RUN line of
      test/e2e and test/cli from stage/ (scripts/stage-device.sh) and writes
      each output to OUTDIR/<test>-<line>.txt (OUTDIR its argument)
  scripts/expect-runs.py check OUTDIR
      FileCheck each output here against its test's patterns (exact ones
      included); exits 1 if any fails

Run the first's script there under the OpenBLAS kernel and thread count to
test (OPENBLAS_CORETYPE, OMP_NUM_THREADS), bring OUTDIR back, then check.
Uses Debian's /usr/bin/python3 or any Python 3; no packages.
"""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILECHECK = "/usr/lib/llvm-22/bin/FileCheck"


def expect_runs():
    """(name, test file, FileCheck prefix, command run from stage/)."""
    runs = []
    tests = sorted(glob.glob(os.path.join(ROOT, "test/e2e/*.test")) +
                   glob.glob(os.path.join(ROOT, "test/cli/*.test")))
    for test in tests:
        with open(test) as f:
            for number, line in enumerate(f, 1):
                match = re.match(r"#\s*RUN:\s*fusec (.*)", line)
                if not match or "|" not in match.group(1):
                    continue
                command, filecheck = match.group(1).split("|", 1)
                # Runs on the CPU with expected outputs, nothing lit-only.
                if ("--expect" not in command or "%t" in command or
                        "--target=cuda" in command):
                    continue
                prefix = re.search(r"--check-prefix[= ](\S+)", filecheck)
                command = (command.replace("%models", "../test/models")
                           .replace("%examples", "../examples").strip())
                name = "%s-%d" % (os.path.basename(test)[:-5], number)
                runs.append((name, test, prefix.group(1) if prefix else
                             "CHECK", "bin/fusec " + command))
    return runs


def write(path):
    with open(path, "w") as f:
        f.write("#!/usr/bin/env bash\n"
                "# Written by scripts/expect-runs.py; run from anywhere.\n"
                "out=$(realpath -m \"$1\"); mkdir -p \"$out\"\n"
                "cd \"$(dirname \"$0\")\"\n")
        for name, _, _, command in expect_runs():
            f.write('%s > "$out/%s.txt" 2>&1; echo "%s rc=$?"\n' %
                    (command, name, name))
    os.chmod(path, 0o755)


def check(outdir):
    failed = 0
    runs = expect_runs()
    for name, test, prefix, _ in runs:
        result = subprocess.run(
            [FILECHECK, test, "--check-prefix=" + prefix,
             "--input-file=" + os.path.join(outdir, name + ".txt")],
            capture_output=True, text=True)
        if result.returncode != 0:
            failed += 1
            print("FAIL %s\n%s" % (name, result.stderr))
    print("%d passed, %d failed" % (len(runs) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
