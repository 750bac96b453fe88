#!/usr/bin/env python3
"""Check every flow in a fixtures directory against its ELF with capstone.

Usage: flow_check.py FIXTURES_DIR

For each fixture of manifest.json:
- every instruction's size in the flow equals capstone's decoded size;
- every conditional direct branch (B<c>, CBZ, CBNZ) marked `E` is followed
  by its target and every one marked `N` by the next sequential address.
Exit status 1 on the first fixture with a mismatch.
"""

import json
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coverage as cov  # noqa: E402  (the sibling tool's flow reader and decoder)


def check(fixtures, entry):
    image = cov.Image(os.path.join(fixtures, entry["elf"]))
    records = list(cov.read_flow(os.path.join(fixtures, entry["flow"])))
    branches = 0
    decoded = {}
    for i, rec in enumerate(records):
        if rec[0] != "i":
            continue
        _, addr, isa, size, cond = rec
        key = (addr, isa)
        if key not in decoded:
            decoded[key] = image.decode(addr, isa, size)
        insn = decoded[key]
        if insn.size != size:
            return "%#x: flow size %d, capstone %d (%s)" % (addr, size, insn.size, insn.mnemonic)
        if cond == "-" or cov.base_mnemonic(insn) not in ("b", "cbz", "cbnz"):
            continue
        nxt = records[i + 1] if i + 1 < len(records) else None
        if nxt is None or nxt[0] != "i":
            continue
        target = insn.operands[-1].imm
        if target == addr + size:
            continue
        branches += 1
        expected = target if cond == "E" else addr + size
        if nxt[1] != expected:
            return "%#x %s marked %s but next is %#x" % (addr, insn.mnemonic, cond, nxt[1])
    return branches


def main():
    fixtures = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(os.path.join(fixtures, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    failed = 0
    for entry in manifest:
        result = check(fixtures, entry)
        if isinstance(result, str):
            failed += 1
            print("flow_check: %s: %s" % (entry["name"], result))
        else:
            print("flow_check: %s: sizes agree with capstone, %d conditional branches "
                  "agree with the next address" % (entry["name"], result))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
