#!/usr/bin/env python3
"""Fits the noise model of src/rules/noise.rs from repeated benchmark runs of the same code.

Usage: tools/fit_noise.py [DIR ...]   (the repository's copies of the H200 data, and any DIR of
`test_<op>_<i>.xml` files of repeated runs, such as tools/noise_runs.sh writes)
Data: tests/data/tilegym-junit/noise-h200 (3 processes each of rms_norm, silu_and_mul, rope),
tests/data/h200-sessions/{rms_norm,matmul}/junit (iteration-0 + noise-2 + noise-3: 3 runs of one baseline) and
tests/data/rope-null-steps-h200 (7 null steps of rope, `step --json` outputs).
`cargo test --lib noise` checks that src/rules/noise.rs holds what this prints.

A group is one test file's runs of unchanged code. For each config (case x pass) it takes the run-to-run
variance of ln(median) and fits  var = FLOOR^2 + (JITTER_MS / latency_ms)^2  by least squares weighted by
degrees of freedom over the model's variance squared (iterated). The in-run rel_std is fitted as
rel_std = A * latency_ms^-B on log-log axes. Prints the constants as NAME = value lines
(rounded as src/rules/noise.rs holds them), and each config's fit on stderr.
"""
import ast
import glob
import html
import json
import math
import os
import re
import statistics
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")


def junit_records(path):
    """{(case, pass): record} of one JUnit file (cutile backend)."""
    text = open(path).read()
    out = {}
    for case in re.finditer(r'<testcase[^>]*?\sname="([^"]*)"[^>]*>(.*?)</testcase>', text, re.S):
        prop = re.search(r'property name="benchmark" value="([^"]*)"', case.group(2))
        if prop:
            for pass_, record in ast.literal_eval(html.unescape(prop.group(1)))["cutile"].items():
                out[(case.group(1), pass_)] = record
    return out


def groups(extra_dirs):
    """Lists of runs, each run {config: (median_ms, rel_std_pct or None)}."""
    found = defaultdict(list)
    dirs = [os.path.join(DATA, "tilegym-junit", "noise-h200")] + extra_dirs
    for directory in dirs:
        for path in sorted(glob.glob(os.path.join(directory, "*_*.xml"))):
            name = re.sub(r"_\d+\.xml$", "", os.path.basename(path))
            found[f"{os.path.relpath(directory, ROOT)}/{name}"].append(path)
    for example in ("rms_norm", "matmul"):
        junit = os.path.join(ROOT, "tests", "data", "h200-sessions", example, "junit")
        found["example/" + example] = [
            os.path.join(junit, f) for f in ("iteration-0.xml", "noise-2.xml", "noise-3.xml")
            if os.path.exists(os.path.join(junit, f))
        ]
    result = {}
    for name, paths in found.items():
        runs = []
        for p in paths:
            runs.append({k: (r["median"], r.get("rel_std")) for k, r in junit_records(p).items()})
        result[name] = runs
    steps = sorted(glob.glob(os.path.join(DATA, "rope-null-steps-h200", "null-*.json")))
    if steps:
        result["h200/rope-null-steps"] = [
            {(c["test"], c["pass"]): (c["value_ms"], None) for c in json.load(open(s))["configs"]}
            for s in steps
        ]
    return result


def main():
    points = []  # (latency_ms, variance of ln(median), dof)
    rel_stds = []  # (latency_ms, rel_std_pct)
    for name, runs in groups(sys.argv[1:]).items():
        if len(runs) < 2:
            continue
        for key in runs[0]:
            medians = [r[key][0] for r in runs if key in r]
            logs = [math.log(m) for m in medians]
            points.append((statistics.mean(medians), statistics.variance(logs), len(logs) - 1))
            rel_stds += [(r[key][0], r[key][1]) for r in runs if key in r and r[key][1]]
        print(f"{name}: {len(runs)} runs, {len(runs[0])} configs", file=sys.stderr)
    # var = f2 + k2 / L^2 is linear in (f2, k2). A sample variance with w degrees of freedom has variance
    # 2 var^2 / w, so the least squares is weighted by w / model^2, iterated from equal weights.
    f2, k2 = 1.0, 0.0
    for _ in range(50):
        weights = [w / (f2 + k2 / l**2) ** 2 for l, _, w in points]
        s11 = sum(q for q in weights)
        s12 = sum(q / l**2 for q, (l, _, _) in zip(weights, points))
        s22 = sum(q / l**4 for q, (l, _, _) in zip(weights, points))
        b1 = sum(q * v for q, (_, v, _) in zip(weights, points))
        b2 = sum(q * v / l**2 for q, (l, v, _) in zip(weights, points))
        det = s11 * s22 - s12 * s12
        f2 = max((b1 * s22 - b2 * s12) / det, 1e-12)
        k2 = max((s11 * b2 - s12 * b1) / det, 0.0)
    xs = [math.log(l) for l, _ in rel_stds]
    ys = [math.log(r) for _, r in rel_stds]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    coef = math.exp(my - slope * mx)
    print(f"# {len(points)} configs, {sum(w for *_, w in points)} degrees of freedom")
    print(f"PROCESS_FLOOR = {math.sqrt(f2):.2e}")
    print(f"PROCESS_JITTER_MS = {math.sqrt(k2):.2e}")
    print(f"# in-run rel_std (percent) = IN_RUN_COEF * latency_ms^-IN_RUN_EXPONENT, {len(rel_stds)} records")
    print(f"IN_RUN_COEF = {coef:.2}")
    print(f"IN_RUN_EXPONENT = {-slope:.2}")
    for l, v, w in sorted(points):
        model = math.sqrt(f2 + k2 / l**2)
        print(f"  {l*1000:10.2f} us  observed {math.sqrt(v)*100:6.3f}%  model {model*100:6.3f}%  dof {w}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
