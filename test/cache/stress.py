#!/usr/bin/env python3
"""The kernel cache under stress: 32 fusec processes compile overlapping
models into one cache directory while some are killed with SIGKILL (most of
them mid-compile), two evict most of the cache when they write, and a
vandal replaces entries with corrupt copies. Then:

  * every process that was not killed exits 0 with outputs byte-identical to
    a known-good run in a cache of its own (and, with --check, fused equal
    to unfused): no corrupt entry was ever used;
  * no compiler of a killed process survives it;
  * the cache is consistent afterwards: once one new miss swept the work
    files, tmp/ is empty, every entry's trailer (size and FNV-1a hash,
    checked here independently of fusec) matches its bytes but for entries
    the vandal damaged that no process read since, `fusec --cache-stats`
    finds the same corrupt entries and no work file; an entry damaged then
    is reported, rebuilt and gives the same outputs.

usage: stress.py FUSEC WORKDIR FRESH_MODEL EVICTOR_MODEL MODEL...
"""
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

PROCESSES = 32
COMPILE_KILLS = 6  # processes killed while their compile runs
RANDOM_KILLS = 4  # processes killed at a random moment
# Processes that compile a model of their own under a limit of about three
# entries: their write evicts most of the cache while the others read it.
EVICTORS = (5, 22)
EVICTOR_LIMIT = "60k"
VANDALISMS = 2  # entries replaced by corrupt copies during the storm

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, flush=True)


def environment(extra=None):
    env = dict(os.environ)
    env.pop("FUSEC_CACHE_DIR", None)
    env.pop("FUSEC_CACHE_MAX_SIZE", None)
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra or {})
    return env


def fnv1a(data):
    value = 0xCBF29CE484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def entry_problem(path):
    """Why the entry at `path` is not valid, or None (independent check)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return "truncated"
    size, digest = struct.unpack("<QQ", data[-24:-8])
    if data[-8:] != b"FUSECSO1":
        return "no trailer"
    if size != len(data) - 24:
        return "size mismatch"
    if fnv1a(data[:size]) != digest:
        return "hash mismatch"
    return None


def outputs_of(directory):
    files = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            files[name] = f.read()
    return files


def run_model(fusec, model, cache, outputs, check, extra_env=None):
    args = [fusec, model, "--target=cpu", "--run", "--cache-dir=" + cache,
            "--outputs-dir=" + outputs]
    if check:
        args.append("--check")
    return subprocess.run(args, env=environment(extra_env),
                          capture_output=True, text=True)


def cache_stats(fusec, cache):
    result = subprocess.run([fusec, "--cache-stats", "--cache-dir=" + cache],
                            env=environment(), capture_output=True, text=True)
    if result.returncode != 0:
        fail("--cache-stats failed: " + result.stderr)
    return result.stdout


def stat_number(stats, label):
    match = re.search(r"^" + label + r"\s+(\d+)", stats, re.M)
    return int(match.group(1)) if match else -1


def compiling_pids(tmp):
    """PIDs that own a work directory in tmp/ (their compile is running)."""
    pids = set()
    try:
        names = os.listdir(tmp)
    except FileNotFoundError:
        return pids
    for name in names:
        parts = name.split(".")
        if len(parts) == 3 and "-" in parts[1]:
            pids.add(int(parts[1].split("-")[0]))
    return pids


def vandalize(cache, rng, log):
    host = os.path.join(cache, "host")
    try:
        names = sorted(os.listdir(host))
    except FileNotFoundError:
        names = []
    if not names:
        return
    victim = os.path.join(host, rng.choice(names))
    try:
        with open(victim, "rb") as f:
            data = bytearray(f.read())
    except FileNotFoundError:
        return
    if rng.random() < 0.5:
        data = data[: len(data) // 2]
    else:
        data[len(data) // 3] ^= 0x5A
    # As a damaged disk would present it, but replaced atomically: readers
    # never see a file change under them.
    temp = os.path.join(cache, "vandal.tmp")
    with open(temp, "wb") as f:
        f.write(data)
    os.rename(temp, victim)
    log.append(os.path.basename(victim))


def compilers_of(cache):
    """Processes whose command line names the cache's tmp/ (compilers)."""
    marker = os.path.join(cache, "tmp").encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def main():
    fusec, work, fresh_model, evictor_model = sys.argv[1:5]
    models = sys.argv[5:]
    rng = random.Random(int(os.environ.get("FUSEC_STRESS_SEED", "9")))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cache = os.path.join(work, "cache")
    started = time.monotonic()

    # The known-good outputs: each model alone in a cache of its own.
    reference = {}
    for folder in ("ref", "out", "again"):
        os.makedirs(os.path.join(work, folder))
    for i, model in enumerate(models):
        out = os.path.join(work, "ref", str(i))
        result = run_model(fusec, model, os.path.join(work, "ref-cache"), out,
                           check=False)
        if result.returncode != 0:
            fail("reference run of %s: %s" % (model, result.stderr))
            return
        reference[i] = outputs_of(out)
    reference_time = time.monotonic() - started

    # The storm.
    processes = []
    storm_start = time.monotonic()
    for k in range(PROCESSES):
        extra = {"FUSEC_CACHE_MAX_SIZE": EVICTOR_LIMIT} \
            if k in EVICTORS else None
        model = evictor_model if k in EVICTORS else models[k % len(models)]
        args = [fusec, model, "--target=cpu", "--run",
                "--cache-dir=" + cache,
                "--outputs-dir=" + os.path.join(work, "out", str(k))]
        if k % 2 == 1:
            args.append("--check")
        processes.append(subprocess.Popen(
            args, env=environment(extra), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    killed = {}  # k -> "compile" | "random"
    random_victims = rng.sample(
        [k for k in range(PROCESSES) if k not in EVICTORS], RANDOM_KILLS)
    random_deadline = {k: rng.uniform(0.05, 2.0) for k in random_victims}
    vandalized = []
    last_vandalism = 0.0
    pid_index = {p.pid: k for k, p in enumerate(processes)}
    tmp = os.path.join(cache, "tmp")
    compile_kills = 0
    while any(p.poll() is None for p in processes):
        now = time.monotonic() - storm_start
        if compile_kills < COMPILE_KILLS:
            for pid in compiling_pids(tmp):
                k = pid_index.get(pid)
                if k is None or k in killed or k in EVICTORS:
                    continue
                if processes[k].poll() is None:
                    processes[k].send_signal(signal.SIGKILL)
                    killed[k] = "compile"
                    compile_kills += 1
                    break
        for k, deadline in random_deadline.items():
            if k not in killed and now >= deadline and \
                    processes[k].poll() is None:
                processes[k].send_signal(signal.SIGKILL)
                killed[k] = "random"
        if len(vandalized) < VANDALISMS and now >= last_vandalism + 0.3:
            vandalize(cache, rng, vandalized)
            if vandalized:
                last_vandalism = now
        time.sleep(0.005)
    storm_time = time.monotonic() - storm_start

    corrupt_warnings = 0
    for k, p in enumerate(processes):
        stdout, stderr = p.communicate()
        model = evictor_model if k in EVICTORS else models[k % len(models)]
        if k in killed:
            if p.returncode not in (-signal.SIGKILL, 0):
                fail("process %d (%s) killed: exit %d\n%s" %
                     (k, model, p.returncode, stderr))
            continue
        if p.returncode != 0:
            fail("process %d (%s) exited %d\n%s%s" %
                 (k, model, p.returncode, stdout, stderr))
            continue
        unexpected = [line for line in stderr.splitlines()
                      if "is corrupt" not in line]
        corrupt_warnings += len(stderr.splitlines()) - len(unexpected)
        if unexpected:
            fail("process %d (%s) wrote to stderr:\n%s" %
                 (k, model, "\n".join(unexpected)))
        if k % 2 == 1 and ("FAILED" in stdout or " ok" not in stdout):
            fail("process %d (%s): --check failed\n%s" % (k, model, stdout))
        if k in EVICTORS:
            continue
        got = outputs_of(os.path.join(work, "out", str(k)))
        if got != reference[k % len(models)]:
            fail("process %d (%s): outputs differ from the reference run" %
                 (k, model))
    if compile_kills == 0:
        fail("no process was killed mid-compile")

    # No compiler outlives the process that started it.
    deadline = time.monotonic() + 5
    while compilers_of(cache) and time.monotonic() < deadline:
        time.sleep(0.05)
    if compilers_of(cache):
        fail("compilers of killed processes still run: %s" %
             compilers_of(cache))

    # Whatever the storm left, every process sees it as dead.
    stats = cache_stats(fusec, cache)
    storm_misses = stat_number(stats, "misses")
    storm_evictions = stat_number(stats, "evictions")
    if not re.search(r"^work files\s+0 of running compiles", stats, re.M):
        fail("work files of running compiles after the storm:\n" + stats)

    # A new model: its miss sweeps the work files of the killed processes.
    # Then its entry is damaged: the next run reports it, rebuilds it and
    # gets the same outputs.
    host = os.path.join(cache, "host")
    before = set(os.listdir(host))
    fresh = [run_model(fusec, fresh_model, cache,
                       os.path.join(work, "fresh0"), check=True)]
    new = sorted(set(os.listdir(host)) - before)
    if not new or fresh[0].returncode != 0:
        fail("%s after the storm: entries %s, exit %d\n%s" %
             (fresh_model, new, fresh[0].returncode, fresh[0].stderr))
    else:
        damaged = os.path.join(host, new[0])
        with open(damaged, "rb") as f:
            data = f.read()
        with open(os.path.join(cache, "vandal.tmp"), "wb") as f:
            f.write(data[: len(data) - 100])
        os.rename(os.path.join(cache, "vandal.tmp"), damaged)
        again = run_model(fusec, fresh_model, cache,
                          os.path.join(work, "fresh1"), check=True)
        if again.returncode != 0 or "is corrupt" not in again.stderr or \
                outputs_of(os.path.join(work, "fresh0")) != \
                outputs_of(os.path.join(work, "fresh1")):
            fail("a damaged entry after the storm: exit %d\n%s" %
                 (again.returncode, again.stderr))
        if entry_problem(damaged):
            fail("the damaged entry was not rebuilt")

    # Consistent: every entry valid, but for those the vandal damaged during
    # the storm that no process read since (fusec's verification agreeing
    # with this script's), nothing in tmp/, no failed compile.
    invalid = []
    entries = 0
    for sub in ("host", "cuda"):
        folder = os.path.join(cache, sub)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) \
                else []:
            entries += 1
            problem = entry_problem(os.path.join(folder, name))
            if problem:
                invalid.append(name)
                if name not in vandalized:
                    fail("entry %s/%s is invalid: %s" % (sub, name, problem))
    leftovers = os.listdir(tmp) if os.path.isdir(tmp) else []
    if leftovers:
        fail("tmp/ is not empty: %s" % leftovers)
    stats = cache_stats(fusec, cache)
    if stat_number(stats, "entries") != entries:
        fail("--cache-stats counts %d entries, not %d:\n%s" %
             (stat_number(stats, "entries"), entries, stats))
    if stat_number(stats, "corrupt entries") != len(invalid) or \
            not re.search(r"^work files\s+0 of running compiles, 0 stale",
                          stats, re.M):
        fail("--cache-stats after cleanup:\n" + stats)
    if os.path.isdir(os.path.join(cache, "failed")) and \
            os.listdir(os.path.join(cache, "failed")):
        fail("failed compiles: %s" % os.listdir(os.path.join(cache, "failed")))

    print("%d processes over %d models: %d killed mid-compile, %d at random "
          "moments, %d evicting most entries (%d evictions); %d compiles; %d "
          "entries vandalized during it, %d corrupt entries reported and "
          "rebuilt, %d left unread" %
          (PROCESSES, len(models), compile_kills,
           sum(1 for v in killed.values() if v == "random"), len(EVICTORS),
           storm_evictions, storm_misses, len(vandalized), corrupt_warnings,
           len(invalid)))
    print("reference %.1f s, storm %.1f s, total %.1f s; final cache:\n%s" %
          (reference_time, storm_time, time.monotonic() - started, stats))
    if not failures:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok")
