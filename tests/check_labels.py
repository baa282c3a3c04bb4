#!/usr/bin/env python3
"""Checks that every ctest test of a build carries a suite label.

The suite labels are the ones the README documents for `ctest -L`: unit,
runtime, filecheck, e2e, conformance, diagnostics, integration, fuzz, gpu,
docs, python (a test may carry more, e.g. sanitizer or stress, but at least one of
these). Lists the tests with `ctest --show-only=json-v1` in the build
directory (GoogleTest cases discovered at test time included) and exits 1
naming each test without a suite label; prints `N passed, N failed`.
"""
import argparse
import json
import subprocess
import sys

SUITES = {"unit", "runtime", "filecheck", "e2e", "conformance",
          "diagnostics", "integration", "fuzz", "gpu", "docs", "python"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ctest", default="ctest")
    ap.add_argument("--build-dir", required=True)
    args = ap.parse_args()
    out = subprocess.run([args.ctest, "--show-only=json-v1"],
                         cwd=args.build_dir, capture_output=True, text=True,
                         check=True).stdout
    tests = json.loads(out)["tests"]
    unlabelled = []
    for t in tests:
        labels = set()
        for prop in t.get("properties", []):
            if prop["name"] == "LABELS":
                labels.update(prop["value"])
        if not labels & SUITES:
            unlabelled.append((t["name"], sorted(labels)))
    for name, labels in unlabelled:
        print(f"FAIL {name}: labels {labels}, none of {sorted(SUITES)}")
    if not tests:
        print("FAIL no tests listed")
        unlabelled.append(("<none>", []))
    print(f"{len(tests) - len(unlabelled)} passed, {len(unlabelled)} failed")
    return 1 if unlabelled else 0


if __name__ == "__main__":
    sys.exit(main())
