#!/usr/bin/env python3
"""Checks the structure of a `fusec --trace` file (test/cli/trace.test).

  trace-check.py TRACE.json [--plan PLAN.json] [--runs N] [--compiled]
                 [--cache-hit] [--failed]

Always: the file is JSON with a `traceEvents` list; every complete event
("X") has name, ph, ts, dur, pid and tid; every track that has events is
named; the slices of one track nest; the import, pass and codegen slices
are there, and a compile slice (kernels loaded, compiled or found in the
cache).
--plan: (`fusec --emit=plan`) there are runs (exactly N with --runs), each
device slice lies inside a run, and the device slices of each run are the
plan's kernels and library calls, in step order.
--compiled: a host compile slice; --cache-hit: a kernel cache hit instant;
--failed: no run at all (a stage failed before).
Prints one summary line per check group for FileCheck.
"""
import argparse
import json
import sys

# Rounding of ts and dur to nanoseconds.
EPSILON_US = 0.002


def fail(message):
    print("trace-check: error: " + message, file=sys.stderr)
    sys.exit(1)


def expect(condition, message):
    if not condition:
        fail(message)


def inside(inner, outer):
    return (inner["ts"] >= outer["ts"] - EPSILON_US and
            inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + EPSILON_US)


def check_nesting(slices, track):
    """Slices of one track: each one ends before, or inside, the open one."""
    open_slices = []
    for event in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
        while open_slices and event["ts"] >= open_slices[-1]["ts"] + open_slices[-1]["dur"] - EPSILON_US:
            open_slices.pop()
        if open_slices:
            expect(inside(event, open_slices[-1]),
                   "on track %s, '%s' overlaps '%s' without nesting in it" %
                   (track, event["name"], open_slices[-1]["name"]))
        open_slices.append(event)


def plan_step_names(plan):
    names = []
    for step in plan["steps"]:
        if "kernel" in step:
            names.append(step["kernel"])
        elif "matmul" in step:
            names.append("matmul")
    return names


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--plan")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--compiled", action="store_true")
    parser.add_argument("--cache-hit", action="store_true")
    parser.add_argument("--failed", action="store_true")
    args = parser.parse_args()

    with open(args.trace) as file:
        try:
            trace = json.load(file)
        except json.JSONDecodeError as error:
            fail("%s is not JSON: %s" % (args.trace, error))
    expect(isinstance(trace, dict), "the trace is not a JSON object")
    events = trace.get("traceEvents")
    expect(isinstance(events, list), "no traceEvents list")

    number = (int, float)
    slices, instants, process_names, thread_names = [], [], {}, {}
    for event in events:
        expect(isinstance(event, dict) and "ph" in event,
               "an event without ph: %r" % (event,))
        phase = event["ph"]
        if phase == "M":
            expect(event.get("name") in ("process_name", "thread_name"),
                   "unexpected metadata %r" % (event,))
            names = process_names if event["name"] == "process_name" else thread_names
            key = event["pid"] if event["name"] == "process_name" else (event["pid"], event["tid"])
            names[key] = event["args"]["name"]
        elif phase == "X":
            for field, kind in (("name", str), ("ph", str), ("ts", number),
                                ("dur", number), ("pid", int), ("tid", int)):
                expect(isinstance(event.get(field), kind),
                       "complete event without a valid %s: %r" % (field, event))
            expect(event["dur"] >= 0, "negative duration: %r" % (event,))
            slices.append(event)
        elif phase == "i":
            for field, kind in (("name", str), ("ts", number), ("pid", int),
                                ("tid", int)):
                expect(isinstance(event.get(field), kind),
                       "instant event without a valid %s: %r" % (field, event))
            instants.append(event)
        else:
            fail("unexpected phase %r" % (phase,))

    device_pids = [pid for pid, name in process_names.items() if name == "device"]
    expect(len(device_pids) == 1, "no process named 'device'")
    device_pid = device_pids[0]
    tracks = {}
    for event in slices + instants:
        track = (event["pid"], event["tid"])
        expect(track in thread_names, "track %s has no thread_name" % (track,))
        tracks.setdefault(track, []).append(event)
    for track, track_events in tracks.items():
        check_nesting([e for e in track_events if e["ph"] == "X"], track)
    print("structure: %d slices, %d instants on %d tracks" %
          (len(slices), len(instants), len(tracks)))

    host = [e for e in slices if e["pid"] != device_pid]
    device = [e for e in slices if e["pid"] == device_pid]
    def named(name):
        return [e for e in host if e["name"] == name]
    def category(cat):
        return [e for e in host if e.get("cat") == cat]
    expect(named("import"), "no import slice")
    passes = category("pass")
    expect(passes, "no pass slices")
    expect(any(e["name"] == "fuse-form-fusion-regions" for e in passes),
           "no slice of fuse-form-fusion-regions")
    expect(named("codegen"), "no codegen slice")
    compiles = category("compile")
    expect(compiles, "no compile slice")
    print("stages: import, %d passes, codegen, %d compile slices" %
          (len(passes), len(compiles)))
    if args.compiled:
        expect(named("host compile"), "no host compile slice")
        print("compiled: host compile")
    if args.cache_hit:
        hits = [e for e in instants if e["name"].startswith("kernel cache hit")]
        expect(hits, "no kernel cache hit")
        expect(all(e["args"]["for"].startswith("kernels ") for e in hits),
               "a cache hit that names no kernels")
        # Groups compile on threads of their own: their hits come in any
        # order, so they print sorted.
        for described in sorted(e["args"]["for"] for e in hits):
            print("cache hit: %s" % described)

    runs = named("run")
    if args.failed:
        expect(not runs and not device, "a run in the trace of a failed compile")
        print("failed: no runs")
    if not args.plan:
        return
    with open(args.plan) as file:
        expected = plan_step_names(json.load(file))
    expect(runs, "no run slices")
    if args.runs is not None:
        expect(len(runs) == args.runs,
               "%d runs, expected %d" % (len(runs), args.runs))
    for event in device:
        expect(event.get("cat") in ("kernel", "library"),
               "device slice '%s' is neither a kernel nor a library call" % event["name"])
        expect(event["dur"] > 0, "device slice '%s' takes no time" % event["name"])
        expect(any(inside(event, run) for run in runs),
               "device slice '%s' at %s lies in no run" % (event["name"], event["ts"]))
    for run in runs:
        steps = sorted((e for e in device if inside(e, run)), key=lambda e: e["ts"])
        names = [e["name"] for e in steps]
        expect(names == expected,
               "the run at %s has device slices %s, the plan %s" %
               (run["ts"], names, expected))
    print("runs: %d, each with device slices %s" % (len(runs), " ".join(expected)))


if __name__ == "__main__":
    main()
