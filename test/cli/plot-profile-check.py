#!/usr/bin/env python3
"""The ctest `plot-profile`: tools/plot-profile.py draws a CPU profile.

  plot-profile-check.py FUSEC PLOT_SCRIPT MODEL WORK_DIR

Profiles MODEL on the CPU (--profile-json), runs the plot script on it and
checks that it wrote a PNG of a readable size; and that it rejects a file
that is not a profile. Exits 77 (ctest: skipped) when the plot script says
matplotlib is missing.
"""
import os
import shutil
import struct
import subprocess
import sys

SKIPPED = 77


def run(command, expect_status=0):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode == SKIPPED and expect_status == 0:
        print("skipped: " + result.stderr.strip())
        sys.exit(SKIPPED)
    if result.returncode != expect_status:
        print("error: %s exited %d, expected %d\n%s%s" %
              (" ".join(command), result.returncode, expect_status,
               result.stdout, result.stderr))
        sys.exit(1)
    return result


def main():
    fusec, plot, model, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    profile = os.path.join(work, "profile.json")
    png = os.path.join(work, "roofline.png")
    run([fusec, model, "--target=cpu", "--run", "--profile=3",
         "--profile-json=" + profile])

    not_a_profile = os.path.join(work, "plan.json")
    with open(not_a_profile, "w") as file:
        file.write('{"kernels": []}')
    result = run([plot, not_a_profile, png], expect_status=1)
    assert "not a fusec --profile-json file" in result.stderr, result.stderr

    result = run([plot, profile, png])
    print(result.stdout.strip())
    with open(png, "rb") as file:
        header = file.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", header[16:24])
    assert width >= 1000 and height >= 600, (width, height)
    assert os.path.getsize(png) > 20000, os.path.getsize(png)
    print("png: %dx%d" % (width, height))


if __name__ == "__main__":
    main()
