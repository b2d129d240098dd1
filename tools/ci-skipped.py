#!/usr/bin/env python3
"""Lists the tests a ctest run skipped, with the reason each gave.

Usage: tools/ci-skipped.py JUNIT_XML  (written by `ctest --output-junit`)

ctest counts a GoogleTest GTEST_SKIP as "not run"; CI prints the list so a
skip that hides a missing backend or CPU feature is seen, not assumed.
"""
import sys
import xml.etree.ElementTree as ET


def skip_reason(output):
    # GoogleTest prints "<file>:<line>: Skipped" and the message below it.
    lines = (output or "").splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            return " ".join(l.strip() for l in lines[i + 1:i + 3] if not l.startswith("["))
    return "no reason printed"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = ET.parse(sys.argv[1]).getroot()
    skipped = [case for case in root.iter("testcase") if case.find("skipped") is not None]
    total = sum(1 for _ in root.iter("testcase"))
    print(f"skipped tests: {len(skipped)} of {total}")
    for case in skipped:
        out = case.find("system-out")
        print(f"  {case.get('name')}: {skip_reason(out.text if out is not None else '')}")


if __name__ == "__main__":
    main()
