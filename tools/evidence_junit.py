#!/usr/bin/env python3
"""Writes the runs a session's evidence notes hold out as record files, one per run.

Usage: tools/evidence_junit.py NOTES_TXT OUT_DIR
NOTES_TXT is `git log --notes=cutile-perf --format='%H%n%N'` of a session (tools/gpu-warm.sh saves it as
<part>-notes.txt). Each run goes to OUT_DIR/<iteration>-<run name>.<xml|txt> (`round-2-baseline`,
`benchmark-1`, ...), exactly the text the tool parsed, so that tools/fit_noise.py and a reader see the
records the verdicts came from.
"""
import base64
import gzip
import json
import os
import re
import sys

PAYLOAD = "payload (gzip, base64):"


def notes(text):
    """Yields each note's text, split at the commit hashes the log format puts before them."""
    for chunk in re.split(r"^[0-9a-f]{40}\n", text, flags=re.M):
        if PAYLOAD in chunk:
            yield chunk


def evidence(note):
    encoded = "".join(note.split(PAYLOAD + "\n", 1)[1].split())
    return json.loads(gzip.decompress(base64.b64decode(encoded)))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    written = 0
    for note in notes(open(source).read()):
        found = evidence(note)
        for run in found["runs"]:
            suffix = "xml" if run.get("format", "junit") == "junit" else "txt"
            name = f"{found['iteration']:02d}-{run['name']}.{suffix}"
            with open(os.path.join(out, name), "w") as f:
                f.write(run.get("text") or run.get("junit") or "")
            written += 1
    print(f"{written} runs written to {out}")


if __name__ == "__main__":
    main()
