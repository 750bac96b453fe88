#!/usr/bin/env python3
"""Compare each fixture's flow with QEMU's own execution log.

Usage: qemu_check.py FIXTURES_DIR

Runs every ELF of manifest.json in qemu-system-arm (`-M realview-pb-a8` for
A-profile, `-M lm3s6965evb` for ARMv7-M) with `-singlestep -d exec,nochain`
and compares the sequence of executed addresses with the flow's up to the
halt loop. QEMU does not model the corpus device page, so the handlers of
its interrupts are left out of the flow's sequence; where the program's
own flow depends on those interrupts (the example's tick counter), the
comparison ends where the runs part, which must be after the first device
interrupt. QEMU logs every
instruction including those that fail their condition, also inside IT
blocks, so the two sequences must agree instruction for instruction.
Exit status 1 if a sequence differs before that point.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

MACHINE = {"a": ["-M", "realview-pb-a8", "-cpu", "cortex-a8"], "m": ["-M", "lm3s6965evb"]}
TRACE = re.compile(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/")
TIMEOUT = 20.0


def flow_addresses(path):
    """Executed addresses of a flow without the handlers of device interrupts.

    Returns the addresses and how many of them precede the first device
    interrupt. QEMU takes SVC exceptions itself but never the corpus
    device's interrupts, so their handlers (from `X` to the matching `R`)
    are left out.
    """
    addrs = []
    limit = None
    depth = 0  # exceptions open; > 0 while inside a device interrupt
    device = []  # per open exception: is it a device interrupt?
    with open(path, encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if parts[0] == "B":
                if depth:
                    continue
                addr = int(parts[1], 16)
                for size in parts[3]:
                    addrs.append(addr)
                    addr += int(size)
            elif parts[0] == "X":
                is_device = parts[1] not in ("svc", "m11", "m14")
                device.append(is_device)
                if is_device:
                    depth += 1
                    if limit is None:
                        limit = len(addrs)
            elif parts[0] == "R" and device:
                if device.pop():
                    depth -= 1
    return addrs, limit


def halt_address(elf_path):
    with open(elf_path, "rb") as f:
        elf = ELFFile(f)
        for sec in elf.iter_sections():
            if isinstance(sec, SymbolTableSection):
                for sym in sec.get_symbol_by_name("hang") or []:
                    return sym["st_value"] & ~1
    raise SystemExit("%s: no `hang` symbol" % elf_path)


def qemu_addresses(elf_path, profile, halt, wanted):
    """Addresses QEMU executed until the halt loop (or `wanted` of them)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "exec.log")
        cmd = ["qemu-system-arm", *MACHINE[profile], "-kernel", elf_path, "-nographic",
               "-monitor", "none", "-serial", "none", "-singlestep",
               "-d", "exec,nochain", "-D", log]
        env = dict(os.environ, QEMU_AUDIO_DRV="none")
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env)
        addrs = []
        start = time.monotonic()
        done = False
        try:
            while not done and time.monotonic() - start < TIMEOUT:
                time.sleep(0.2)
                if not os.path.exists(log):
                    continue
                addrs = []
                with open(log, encoding="ascii", errors="replace") as f:
                    for line in f:
                        m = TRACE.match(line)
                        if not m:
                            continue
                        pc = int(m.group(1), 16)
                        if pc == halt or len(addrs) >= wanted:
                            done = True
                            break
                        addrs.append(pc)
                if proc.poll() is not None:
                    break
        finally:
            proc.kill()
            proc.wait()
        return addrs


def main():
    fixtures = sys.argv[1] if len(sys.argv) > 1 else "."
    with open(os.path.join(fixtures, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    failed = 0
    for entry in manifest:
        elf = os.path.join(fixtures, entry["elf"])
        expected, limit = flow_addresses(os.path.join(fixtures, entry["flow"]))
        got = qemu_addresses(elf, entry["profile"], halt_address(elf), len(expected) + 1)
        n = 0
        while n < len(expected) and n < len(got) and got[n] == expected[n]:
            n += 1
        if n == len(expected) and len(got) == n:
            scope = "whole run" if limit is None else \
                "whole run, device interrupt handlers left out"
            print("qemu: %s: %d instructions identical (%s)" % (entry["name"], n, scope))
        elif limit is not None and n >= limit:
            print("qemu: %s: %d instructions identical, up to where the flow depends on "
                  "device interrupts (first one after %d)" % (entry["name"], n, limit))
        else:
            failed += 1
            at = "%#x vs %#x" % (expected[n], got[n]) if n < min(len(got), len(expected)) \
                else "qemu ran %d, the flow has %d" % (len(got), len(expected))
            print("qemu: %s: DIFFERS at instruction %d (%s)" % (entry["name"], n, at))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
