#!/usr/bin/python3
"""Draws a roofline chart from `fusec --profile-json`.

  tools/plot-profile.py PROFILE.json OUT.png [--title TEXT] [--labels N]

Each kernel and library call with known FLOPs is a point at its arithmetic
intensity (FLOPs per byte moved) and its achieved FLOP rate, under the
device's copy ceiling (a diagonal: bandwidth x intensity) and the peak FLOP
rates of the dtypes and units the steps use (horizontal lines), log-log.
A point's area is its share of the steps' time. Points that lie on one
another (repeated layers) share a label of their step indices; the N labels
with the most time also name their longest step. Layout kernels only move
data (no FLOPs) and are listed under the chart instead.

Runs on Debian's python3 with python3-matplotlib (scripts/install-deps.sh
installs it).
"""
import argparse
import json
import math
import sys

# Exit status when matplotlib is missing (ctest reports it as skipped).
EXIT_NO_MATPLOTLIB = 77

# The hues of `fusec --emit=dot`'s fills, by schedule; library calls red.
SCHEDULE_COLOURS = {
    "pointwise": "#3b82f6",
    "row-reduction": "#f59e0b",
    "column-reduction": "#d97706",
    "layout": "#22a06b",
    "contraction": "#8b5cf6",
    "library": "#dc2626",
}
OTHER_COLOUR = "#6b7280"
# Labels stay legible over the roofs and the grid (and under the points).
LABEL_BOX = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none",
             "alpha": 0.75}
CEILING_COLOURS = ["#111827", "#4b5563", "#9ca3af", "#7c3aed", "#0891b2"]


def fail(message, status=1):
    print("plot-profile.py: error: " + message, file=sys.stderr)
    sys.exit(status)


def load_profile(path):
    try:
        with open(path) as file:
            profile = json.load(file)
    except OSError as error:
        fail("cannot read %s: %s" % (path, error.strerror))
    except json.JSONDecodeError as error:
        fail("%s is not JSON: %s" % (path, error))
    if not isinstance(profile, dict) or "steps" not in profile or "limits" not in profile:
        fail("%s is not a fusec --profile-json file (no steps or limits)" % path)
    return profile


def rate_unit(peak_flops):
    """FLOP/s scale and name that keep the chart's numbers readable."""
    if peak_flops >= 1e12:
        return 1e12, "TFLOP/s"
    return 1e9, "GFLOP/s"


def ceilings(profile):
    """(FLOP/s, label) of each distinct peak the steps are held to."""
    limits = profile["limits"]
    used = {}
    for step in profile["steps"]:
        table = "matmul_peak_TFLOPs" if step.get("kind") == "library" else "kernel_peak_TFLOPs"
        peak = (limits.get(table) or {}).get(step.get("dtype"))
        if not peak:
            continue
        unit = "matmuls" if table.startswith("matmul") else "kernels"
        used.setdefault(peak * 1e12, set()).add("%s %s" % (step["dtype"], unit))
    result = []
    for flops, users in sorted(used.items(), reverse=True):
        result.append((flops, ", ".join(sorted(users))))
    return result


def short_name(name, limit=34):
    return name if len(name) <= limit else name[:limit - 3] + "..."


def step_micros(step):
    return step.get("median_us") or 0


def marker_area(step):
    """A point's area in points^2: grows with the step's share of time."""
    return 30 + 900 * (step.get("share") or 0)


def label_clusters(axes, points, scale, named_count):
    """Labels the points, one label per cluster of points that lie on one
    another (a model's layers repeat the same steps): the clustered steps'
    indices, and for the `named_count` clusters with the most time the name
    of their longest step."""
    (x_low, x_high), (y_low, y_high) = axes.get_xlim(), axes.get_ylim()
    x_near = 0.012 * math.log10(x_high / x_low)
    y_near = 0.012 * math.log10(y_high / y_low)
    clusters = []  # [log x, log y, steps], the longest step first
    for intensity, rate, step in sorted(points, key=lambda point: -step_micros(point[2])):
        x, y = math.log10(intensity), math.log10(rate / scale)
        for cluster in clusters:
            if abs(cluster[0] - x) <= x_near and abs(cluster[1] - y) <= y_near:
                cluster[2].append(step)
                break
        else:
            clusters.append([x, y, [step]])
    clusters.sort(key=lambda cluster: -sum(step_micros(step) for step in cluster[2]))
    for rank, (x, y, steps) in enumerate(clusters):
        indices = ", ".join(str(step["step"]) for step in sorted(steps, key=lambda s: s["step"]))
        longest = steps[0]
        where = (10 ** x, 10 ** y)
        # Beside the largest marker of the cluster, not on it.
        radius = max(math.sqrt(marker_area(step)) / 2 for step in steps)
        if rank < named_count:
            text = indices + "  " + short_name(longest["name"])
            if longest.get("call"):
                text += " " + longest["call"]
            axes.annotate(text, where, xytext=(radius + 4, 0), textcoords="offset points",
                          fontsize=8, va="center", zorder=2.5, bbox=LABEL_BOX)
        else:
            axes.annotate(indices, where, xytext=(radius + 2, -radius - 2),
                          textcoords="offset points", fontsize=7, va="top",
                          color="#4b5563", zorder=2.5, bbox=LABEL_BOX)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="a fusec --profile-json file")
    parser.add_argument("output", help="the PNG to write")
    parser.add_argument("--title", help="the chart's title (default: model, device, runs)")
    parser.add_argument("--labels", type=int, default=6,
                        help="name this many labels, those of the most time (default 6)")
    args = parser.parse_args()
    profile = load_profile(args.profile)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
    except ImportError:
        fail("matplotlib is missing: install Debian's python3-matplotlib "
             "(scripts/install-deps.sh does) and run this script with "
             "/usr/bin/python3", EXIT_NO_MATPLOTLIB)

    limits = profile["limits"]
    copy_bytes_per_second = (limits.get("copy_GBps") or 0) * 1e9
    roofs = ceilings(profile)
    points, unplotted = [], []
    for step in profile["steps"]:
        flops, seconds = step.get("flops"), (step.get("median_us") or 0) * 1e-6
        if not flops or not step.get("bytes") or seconds <= 0:
            unplotted.append(step)
            continue
        points.append((flops / step["bytes"], flops / seconds, step))
    if not points and not roofs:
        fail("%s has no step with FLOPs and no peak rate: nothing to plot" % args.profile)

    top_rate = max([flops for flops, _ in roofs] + [rate for _, rate, _ in points])
    scale, unit = rate_unit(top_rate)
    intensities = [intensity for intensity, _, _ in points]
    ridges = [flops / copy_bytes_per_second for flops, _ in roofs if copy_bytes_per_second]
    x_low = min(intensities + ridges + [1.0]) / 8
    x_high = max(intensities + ridges + [1.0]) * 8
    rates = [rate / scale for _, rate, _ in points]
    y_high = top_rate / scale * 3
    y_low = min(rates + [copy_bytes_per_second * x_low / scale if copy_bytes_per_second else y_high / 1e4]) / 3

    figure, axes = plt.subplots(figsize=(12, 7.5), dpi=130)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(x_low, x_high)
    axes.set_ylim(y_low, y_high)
    axes.grid(True, which="major", color="#e5e7eb", linewidth=0.8)
    axes.grid(True, which="minor", color="#f3f4f6", linewidth=0.5)
    axes.set_axisbelow(True)

    # The roofs: bandwidth x intensity up to each ceiling, then the ceiling.
    if copy_bytes_per_second:
        top = roofs[0][0] if roofs else y_high * scale
        ridge = top / copy_bytes_per_second
        axes.plot([x_low, ridge], [copy_bytes_per_second * x_low / scale, top / scale],
                  color=CEILING_COLOURS[0], linewidth=2,
                  label="copy ceiling %.4g GB/s (%s)" % (
                      limits["copy_GBps"],
                      "measured" if limits.get("copy_source") == "measured" else "cached"))
    for index, (flops, users) in enumerate(roofs):
        start = flops / copy_bytes_per_second if copy_bytes_per_second else x_low
        axes.plot([start, x_high], [flops / scale] * 2,
                  color=CEILING_COLOURS[index % len(CEILING_COLOURS)], linewidth=2,
                  linestyle="-" if index == 0 else "--",
                  label="peak %.4g %s: %s" % (flops / scale, unit, users))

    # The steps: area by share of time, colour by schedule.
    for intensity, rate, step in points:
        schedule = step.get("schedule") or "other"
        axes.scatter([intensity], [rate / scale], s=marker_area(step),
                     color=SCHEDULE_COLOURS.get(schedule, OTHER_COLOUR), alpha=0.75,
                     edgecolors="white", linewidths=0.8,
                     marker="s" if schedule == "library" else "o", zorder=3)
    label_clusters(axes, points, scale, args.labels)
    handles, _ = axes.get_legend_handles_labels()
    for schedule in sorted({step.get("schedule") or "other" for _, _, step in points}):
        handles.append(Line2D([], [], linestyle="", markersize=7, alpha=0.75,
                              marker="s" if schedule == "library" else "o",
                              color=SCHEDULE_COLOURS.get(schedule, OTHER_COLOUR),
                              label="library call" if schedule == "library"
                              else schedule + " kernel"))

    axes.set_xlabel("arithmetic intensity (FLOPs / byte moved)")
    axes.set_ylabel("achieved " + unit)
    title = args.title or "roofline of '%s' on %s (%s), median of %s runs" % (
        profile.get("model", "?"), profile.get("target", "?"),
        profile.get("device", "?"), profile.get("runs", "?"))
    axes.set_title(title, fontsize=11)
    axes.legend(handles=handles, loc="upper left", fontsize=8, framealpha=0.92)
    notes = ["point area: share of the steps' time; labels: step indices (steps that "
             "lie on one another share one), with a name for the %d with the most time"
             % args.labels]
    if limits.get("peak_source"):
        notes.append("peaks: " + limits["peak_source"])
    if unplotted:
        names = sorted({short_name(step.get("name", "?"), 28) for step in unplotted})
        listed = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        notes.append("not plotted (no FLOPs: data movement only): %d steps (%s)" %
                     (len(unplotted), listed))
    figure.text(0.01, 0.01, "\n".join(notes), fontsize=7.5, color="#374151",
                va="bottom", ha="left")
    figure.tight_layout(rect=(0, 0.02 + 0.022 * len(notes), 1, 1))
    try:
        figure.savefig(args.output)
    except OSError as error:
        fail("cannot write %s: %s" % (args.output, error.strerror))
    print("wrote %s: %d steps plotted, %d without FLOPs" % (args.output, len(points), len(unplotted)))


if __name__ == "__main__":
    main()
