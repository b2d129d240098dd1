#!/usr/bin/env python3
"""Cycles per iteration of a kernel's inner loops, as llvm-mca models a core.

For kernels of CPUs this machine does not have (an Arm phone's cores), a
model's count is the one figure that does not need the hardware: it says
how many cycles one iteration of a loop takes if its loads hit L1, from the
instructions the compiler actually emitted. It is no timing of memory.

  tools/mca_loops.py OBJECT FUNCTION MNEMONIC [--cpu NAME ...]

OBJECT is an object file (a .cc.o of the build), FUNCTION a substring of
the demangled function names to look in, MNEMONIC an instruction the loop
must hold (e.g. sdot). Each innermost loop (a backward conditional branch
whose body holds no other) is printed with its instruction counts and the
cycles per iteration for each --cpu (default: cortex-a55, cortex-a76,
apple-m1). --print writes the loops' assembly instead. Needs llvm-mca and
the target's objdump (aarch64-linux-gnu-objdump for Arm objects).
"""

import argparse
import collections
import re
import subprocess
import sys


def listing(objdump, obj):
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", "-C", obj],
                         capture_output=True, text=True, check=True).stdout
    func = None
    for line in out.splitlines():
        header = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if header:
            func = header.group(1)
            continue
        insn = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if insn and func is not None:
            yield func, int(insn.group(1), 16), insn.group(2), insn.group(3)


def inner_loops(insns):
    """(start, end) index pairs of innermost loops in one function."""
    at = {addr: i for i, (addr, _, _) in enumerate(insns)}
    loops = []
    for i, (addr, op, args) in enumerate(insns):
        target = re.search(r"\b([0-9a-f]+) <", args)
        if not target or not (op.startswith("b.") or op.startswith("j") or
                              op in ("cbz", "cbnz", "tbz", "tbnz")):
            continue
        t = int(target.group(1), 16)
        if t < addr and t in at:
            loops.append((at[t], i))
    return [(s, e) for s, e in loops
            if not any(s <= s2 and e2 <= e and (s2, e2) != (s, e) for s2, e2 in loops)]


def assembly(body, label):
    lines = [label + ":"]
    for _, op, args in body:
        if op == "nop":
            continue
        args = re.sub(r"[0-9a-f]+ <[^>]*>", label, args)
        args = re.sub(r"\s*(//.*|#\s.*)$", "", args)  # comments, not "#imm"
        lines.append("\t%s\t%s" % (op, args))
    return "\n".join(lines) + "\n"


def cycles(asm, triple, cpu, attrs):
    cmd = ["llvm-mca", "-mtriple=" + triple, "-mcpu=" + cpu, "-iterations=1000"]
    if attrs:
        cmd.append("-mattr=" + attrs)
    out = subprocess.run(cmd, input=asm, capture_output=True, text=True)
    total = re.search(r"Total Cycles:\s+(\d+)", out.stdout)
    if not total:
        return "error: " + (out.stderr.strip().splitlines() or ["no output"])[0]
    return "%.2f" % (int(total.group(1)) / 1000.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("object")
    ap.add_argument("function")
    ap.add_argument("mnemonic")
    ap.add_argument("--cpu", action="append")
    ap.add_argument("--triple", default="aarch64")
    ap.add_argument("--mattr", default="+dotprod,+i8mm,+bf16,+fullfp16")
    ap.add_argument("--objdump", default="aarch64-linux-gnu-objdump")
    ap.add_argument("--print", action="store_true", help="print the loops' assembly")
    args = ap.parse_args()
    cpus = args.cpu or ["cortex-a55", "cortex-a76", "apple-m1"]

    by_func = collections.defaultdict(list)
    for func, addr, op, rest in listing(args.objdump, args.object):
        if args.function in func:
            by_func[func].append((addr, op, rest))
    n = 0
    for func, insns in by_func.items():
        for s, e in inner_loops(insns):
            body = insns[s:e + 1]
            if not any(op.startswith(args.mnemonic) for _, op, _ in body):
                continue
            n += 1
            asm = assembly(body, ".Lloop%d" % n)
            ops = collections.Counter(op for _, op, _ in body if op != "nop")
            print("loop %d in %s at %#x: %d instructions (%s)" %
                  (n, func[:100], body[0][0], sum(ops.values()),
                   ", ".join("%d %s" % (c, o) for o, c in ops.most_common(6))))
            if args.print:
                print(asm)
                continue
            for cpu in cpus:
                print("  %-12s %s cycles per iteration" %
                      (cpu, cycles(asm, args.triple, cpu, args.mattr)))
    if n == 0:
        sys.exit("no inner loop with %s in functions matching %r" %
                 (args.mnemonic, args.function))


if __name__ == "__main__":
    main()
