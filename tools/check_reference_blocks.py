#!/usr/bin/env python3
"""Run every ```python block of references/*.md and report PASS/FAIL/SKIP per block.

Fence info strings:
  ```python           runnable; must exit 0 (blocks print OK after their own checks)
  ```python wrong     the wrong side of a rule; PASS when it exits non-zero (compile
                      error, exception or failed comparison), FAIL when it runs cleanly
  ```python fragment  not runnable on its own; SKIP

Blocks run in parallel subprocesses (each a fresh interpreter, so environment variables
read by cuda.tile at import time behave as documented).
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, asdict
from pathlib import Path

FENCE = re.compile(r"^```(\S*)\s*(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
OUTPUT_TAIL = 4000  # characters of each block's output kept in the JSON report


@dataclass
class Block:
    file: str
    heading: str
    index: int  # 1-based position among the file's python blocks
    line: int  # line of the opening fence
    kind: str  # run | wrong | fragment
    code: str


@dataclass
class Result:
    file: str
    heading: str
    index: int
    line: int
    kind: str
    status: str  # PASS | FAIL | SKIP
    seconds: float
    detail: str
    output: str  # tail of stdout + stderr


def extract(path: Path) -> list[Block]:
    blocks, heading, index = [], "", 0
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            h = HEADING.match(lines[i])
            if h:
                heading = h.group(2)
            i += 1
            continue
        lang, info = m.group(1), m.group(2).split()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1  # closing fence
        if lang != "python":
            continue
        index += 1
        kind = "wrong" if "wrong" in info else "fragment" if "fragment" in info else "run"
        blocks.append(Block(path.name, heading, index, start, kind, "\n".join(body) + "\n"))
    return blocks


def last_line(text: str) -> str:
    # Skip the caret lines Python puts under the failing expression.
    lines = [l for l in text.strip().splitlines() if l.strip(" ^~")]
    return lines[-1][:200] if lines else ""


def run_block(b: Block, timeout: float, workdir: Path) -> Result:
    if b.kind == "fragment":
        return Result(b.file, b.heading, b.index, b.line, b.kind, "SKIP", 0.0, "fragment", "")
    src = workdir / f"{Path(b.file).stem}_{b.index:03d}.py"
    src.write_text(b.code, encoding="utf-8")
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, str(src)], capture_output=True, text=True,
                           timeout=timeout, cwd=workdir)
        rc, stdout, out = p.returncode, p.stdout, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, stdout, out = None, "", f"timeout after {timeout:.0f}s"
    dt = time.monotonic() - t0
    if rc is None:
        status, detail = "FAIL", out
    elif b.kind == "wrong":
        # A timeout is not the kind of failure a wrong block demonstrates.
        status = "PASS" if rc != 0 else "FAIL"
        detail = ("failed as expected: " + last_line(out)) if rc != 0 else "ran cleanly"
    else:
        status = "PASS" if rc == 0 else "FAIL"
        detail = last_line(stdout if rc == 0 else out)
    return Result(b.file, b.heading, b.index, b.line, b.kind, status, round(dt, 2), detail,
                  out[-OUTPUT_TAIL:])


def environment() -> dict:
    env = {"python": sys.version.split()[0]}
    probe = ("import json, torch; import cuda.tile as ct; d = {'torch': torch.__version__, "
             "'cuda_tile': getattr(ct, '__version__', '?')}\n"
             "if torch.cuda.is_available():\n"
             "    d['gpu'] = torch.cuda.get_device_name(0)\n"
             "    d['capability'] = 'sm_%d%d' % torch.cuda.get_device_capability(0)\n"
             # private helper, used only to report which tileiras cuda.tile picked
             "try:\n"
             "    from cuda.tile._compile import _get_compiler_version_string as v\n"
             "    lines = (v() or '').strip().splitlines()\n"
             "    d['tileiras'] = next((l for l in lines if 'release' in l), lines[-1] if lines else '')\n"
             "except Exception as e:\n"
             "    d['tileiras'] = 'unknown: %s' % e\n"
             "print(json.dumps(d))")
    try:
        p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        env.update(json.loads(p.stdout.strip().splitlines()[-1]))
    except Exception as e:  # report what we can; the blocks themselves will show the failure
        env["probe_error"] = str(e)[:200]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        env["driver"] = out.splitlines()[0] if out else ""
    except (OSError, subprocess.TimeoutExpired):
        env["driver"] = "not found"
    return env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--refs", default=str(Path(__file__).resolve().parent.parent / "references"),
                    help="folder holding the *.md references")
    ap.add_argument("--only", default="", help="run only blocks whose file or heading contains this")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per block")
    ap.add_argument("--list", action="store_true", help="list the blocks, run nothing")
    ap.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    args = ap.parse_args()

    blocks = [b for f in sorted(Path(args.refs).glob("*.md")) for b in extract(f)
              if args.only in b.file or args.only in b.heading]
    if args.list:
        for b in blocks:
            print(f"{b.file}:{b.line}\t#{b.index}\t{b.kind}\t{b.heading}")
        return 0

    env = environment()
    print("environment:", json.dumps(env))
    with tempfile.TemporaryDirectory(prefix="refcheck-") as tmp, \
            cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_block, b, args.timeout, Path(tmp)) for b in blocks]
        results = []
        for fut in futures:
            r = fut.result()
            results.append(r)
            print(f"{r.status:4}  {r.file}#{r.index} ({r.kind}, {r.seconds:.1f}s) {r.heading}: {r.detail}",
                  flush=True)

    counts = {s: sum(r.status == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
    print()
    print("| file | # | heading | kind | status |")
    print("|---|---|---|---|---|")
    for r in results:
        print(f"| {r.file} | {r.index} | {r.heading} | {r.kind} | {r.status} |")
    print(f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"environment": env, "counts": counts, "results": [asdict(r) for r in results]}, indent=1))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
