#!/usr/bin/env python3
"""Per config of each step, the paired rounds' log ratios with and without the order of the sides fitted out.

Usage: tools/order_effect.py [DIR] [--stat median|mean|min]
DIR holds a session's runs as `tools/evidence_junit.py` writes them (`<iteration>-round-<n>-<side>.xml`;
default: tests/data/rope-paired-h200, the H200 rope session of evidence/2026-12-04-h200-rope/2026-12-02-mean/; the sets
there keep each record's mean only, but rope-paired-h200-ticked, which keeps whole records, each file
gzip-compressed: `<name>.xml.gz`). Round n
runs the baseline first when n is odd (A B, B A, ...), as the tool does. For each config measured in four
rounds or more it prints: the rounds, each round's ratio (candidate over baseline, %), the plain mean and
standard deviation, and the least-squares fit with the order as a second term (`src/rules/verdict/`,
`Tally::fit`): the change, the residual standard deviation, and the order's effect (how much slower the
side measured second was, %).
"""
import ast
import glob
import gzip
import html
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def records(path, statistic):
    """{case name: value (ms)} of one JUnit file's benchmark records (cutile, forward)."""
    text = gzip.open(path, "rt").read() if path.endswith(".gz") else open(path).read()
    found = {}
    for case in re.finditer(r'<testcase[^>]*?\sname="([^"]*)"[^>]*>(.*?)</testcase>', text, re.S):
        prop = re.search(r'property name="benchmark" value="([^"]*)"', case.group(2))
        if prop:
            found[case.group(1)] = ast.literal_eval(html.unescape(prop.group(1)))["cutile"]["forward"][statistic]
    return found


def record_file(directory, name):
    """The path of run `name` in `directory`, `.xml` or `.xml.gz`; None where there is neither."""
    for path in (os.path.join(directory, name + ".xml"), os.path.join(directory, name + ".xml.gz")):
        if os.path.exists(path):
            return path
    return None


def fit(ratios, orders):
    """(change, residual sd, slowdown) of `ratio = change - slowdown * order` by least squares, `order` 1
    where the candidate ran first (the baseline second) and -1 where the baseline did."""
    n = len(ratios)
    mean, order_mean = sum(ratios) / n, sum(orders) / n
    spread = sum((s - order_mean) ** 2 for s in orders)
    order = sum((s - order_mean) * (d - mean) for s, d in zip(orders, ratios)) / spread
    change = mean - order * order_mean
    residual = sum((d - change - order * s) ** 2 for s, d in zip(orders, ratios))
    return change, math.sqrt(residual / (n - 2)), -order


def main():
    args = sys.argv[1:]
    statistic = "mean"
    if "--stat" in args:
        i = args.index("--stat")
        statistic = args[i + 1]
        del args[i : i + 2]
    directory = args[0] if args else os.path.join(ROOT, "tests", "data", "rope-paired-h200")
    iterations = sorted({os.path.basename(p).split("-")[0] for p in glob.glob(os.path.join(directory, "*-round-*.xml*"))})
    for iteration in iterations:
        by_config = {}
        for n in range(1, 100):
            paths = [record_file(directory, f"{iteration}-round-{n}-{side}") for side in ("baseline", "candidate")]
            if None in paths:
                break
            baseline, candidate = (records(p, statistic) for p in paths)
            # the candidate first in even rounds: +1; the baseline first: -1
            order = 1.0 if n % 2 == 0 else -1.0
            for name in baseline.keys() & candidate.keys():
                by_config.setdefault(name, []).append((math.log(candidate[name] / baseline[name]), order))
        print(f"iteration {iteration} ({statistic}):")
        for name, rounds in sorted(by_config.items()):
            if len(rounds) < 4:
                continue
            ratios = [100 * d for d, _ in rounds]
            orders = [s for _, s in rounds]
            mean = sum(ratios) / len(ratios)
            sd = math.sqrt(sum((d - mean) ** 2 for d in ratios) / (len(ratios) - 1))
            change, residual, slowdown = fit(ratios, orders)
            shown = " ".join(f"{d:+.1f}" for d in ratios)
            print(f"  {name}: {len(rounds)} rounds: {shown}")
            print(
                f"    plain {mean:+.2f}% sd {sd:.2f}%; with the order: {change:+.2f}% residual sd {residual:.2f}%, "
                f"the side measured second slower by {slowdown:+.2f}%"
            )


if __name__ == "__main__":
    main()
