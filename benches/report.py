#!/usr/bin/env python3
"""Print the results of `cargo bench --bench compare` as a markdown table.

Reads target/criterion/*/*/new/{benchmark,estimates}.json (the latest run of
each benchmark), divides each estimate by the group's throughput (elements
per iteration) to get ns per operation, and prints one row per workload and
one column per peer, each with its ratio to tickwheel, or to the peer
--baseline names (> 1 means slower than the baseline). The machine line recorded by the run (target/criterion/
machine.txt) is printed above the table, and the interleaved rounds
(target/criterion/interleaved.txt: per workload, one heap/tickwheel line for
binary_heap and one lean_heap/tickwheel line) below it. If
`cargo bench --bench tail` has run, its per-operation tail latency table
(target/criterion/tail.txt, with its own machine line) follows.

Usage: python3 benches/report.py [--criterion-dir DIR] [--stat mean|median]
                                 [--ci] [--baseline PEER]

Standard library only.
"""

import argparse
import glob
import json
import os
import sys

# Column order; peers not listed here follow in alphabetical order.
PEERS = [
    "tickwheel",
    "binary_heap",
    "lean_heap",
    "btree_map",
    "tokio_delay_queue",
    "hhwt",
    "nexus_timer",
    "bitwheel",
]


def default_dir():
    if os.environ.get("CRITERION_HOME"):
        return os.environ["CRITERION_HOME"]
    target = os.environ.get("CARGO_TARGET_DIR")
    if not target:
        # benches/report.py -> the package root's target/
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        target = os.path.join(root, "target")
    return os.path.join(target, "criterion")


def elements(throughput):
    """Operations per iteration, from criterion's throughput record."""
    if not throughput:
        return None
    for kind in ("Elements", "ElementsAndBytes", "Bytes", "BytesDecimal"):
        if kind in throughput:
            value = throughput[kind]
            if isinstance(value, dict):  # ElementsAndBytes {elements, bytes}
                value = value.get("elements")
            return value
    return None


def load(criterion_dir, stat):
    """{group: {peer: (ns_per_op, lower, upper)}}"""
    results = {}
    pattern = os.path.join(criterion_dir, "*", "*", "new", "benchmark.json")
    for bench_path in sorted(glob.glob(pattern)):
        estimates_path = os.path.join(os.path.dirname(bench_path), "estimates.json")
        try:
            with open(bench_path) as f:
                bench = json.load(f)
            with open(estimates_path) as f:
                estimates = json.load(f)
        except (OSError, ValueError) as err:
            print(f"skipping {bench_path}: {err}", file=sys.stderr)
            continue
        group = bench.get("group_id")
        peer = bench.get("function_id") or bench.get("value_str")
        ops = elements(bench.get("throughput")) or 1
        est = estimates.get(stat)
        if not group or not peer or not est:
            continue
        ci = est.get("confidence_interval", {})
        results.setdefault(group, {})[peer] = (
            est["point_estimate"] / ops,
            ci.get("lower_bound", est["point_estimate"]) / ops,
            ci.get("upper_bound", est["point_estimate"]) / ops,
        )
    return results


def fmt_ns(ns):
    if ns >= 100:
        return f"{ns:,.0f}"
    if ns >= 10:
        return f"{ns:.1f}"
    return f"{ns:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--criterion-dir", default=default_dir())
    parser.add_argument("--stat", choices=["mean", "median"], default="mean")
    parser.add_argument("--ci", action="store_true", help="add the 95%% confidence interval")
    parser.add_argument(
        "--baseline",
        default="tickwheel",
        help="the peer the ratios divide by (tickwheel; lean_heap for issue 25's tables)",
    )
    args = parser.parse_args()

    results = load(args.criterion_dir, args.stat)
    tail = os.path.join(args.criterion_dir, "tail.txt")
    if not results:
        print(f"no criterion results under {args.criterion_dir}", file=sys.stderr)
        if not os.path.exists(tail):
            return 1
        print_tail(tail)
        return 0

    machine = os.path.join(args.criterion_dir, "machine.txt")
    if os.path.exists(machine):
        with open(machine) as f:
            for line in f.read().splitlines():
                print(f"> {line}  ")
        print()

    seen = {peer for peers in results.values() for peer in peers}
    peers = [p for p in PEERS if p in seen] + sorted(seen - set(PEERS))

    baseline = args.baseline
    print(f"ns per operation ({args.stat} of 10 samples; ratio to {baseline}, > 1× is slower)")
    print()
    print("| workload | " + " | ".join(peers) + " |")
    print("|---|" + "---:|" * len(peers))
    for group in sorted(results):
        row = results[group]
        base = row.get(baseline, (None,))[0]
        cells = []
        for peer in peers:
            if peer not in row:
                cells.append("—")
                continue
            ns, lower, upper = row[peer]
            cell = f"{fmt_ns(ns)} ns"
            if args.ci:
                cell += f" [{fmt_ns(lower)}–{fmt_ns(upper)}]"
            if base:
                cell += f" ({ns / base:.2f}×)"
            cells.append(cell)
        print(f"| `{group}` | " + " | ".join(cells) + " |")

    interleaved = os.path.join(args.criterion_dir, "interleaved.txt")
    if os.path.exists(interleaved):
        print()
        print(
            "Interleaved rounds (W1-W4: tickwheel, binary_heap and lean_heap taking"
            " turns; server loops: tickwheel, lean_heap, nexus_timer and bitwheel;"
            " then w1_insert_held in fresh processes), ns per operation:"
        )
        print()
        with open(interleaved) as f:
            for line in f.read().splitlines():
                print(f"- {line}")
    if os.path.exists(tail):
        print()
        print_tail(tail)
    return 0


def print_tail(path):
    """The table of `cargo bench --bench tail`: its header lines (machine,
    load, clock) as a quote, then the table as written."""
    print("Per-operation tail latency (`cargo bench --bench tail`):")
    print()
    with open(path) as f:
        lines = f.read().splitlines()
    blank = lines.index("") if "" in lines else 0
    for line in lines[:blank]:
        print(f"> {line}  ")
    for line in lines[blank:]:
        print(line)


if __name__ == "__main__":
    sys.exit(main())
