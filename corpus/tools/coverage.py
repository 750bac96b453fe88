#!/usr/bin/env python3
"""Expected coverage and folded stacks from a `.flow` file and its ELF.

Usage: coverage.py ELF FLOW [--tasks TASKS] -o OUT.cov.json

Uses only the flow, the ELF symbol table and the DWARF line table
(pyelftools) and capstone to classify conditional instructions; with
`--tasks` (the record of which task runs each instruction, see
tools/truth.py) the folded stacks are kept per task. The definitions of
every field are in corpus/README.md.
"""

import argparse
import bisect
import json
import os
import posixpath
import sys

import capstone
from capstone import arm as csarm
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection


class CoverageError(Exception):
    """The flow or ELF cannot be read."""


# ---------------------------------------------------------------- flow
def read_flow(path):
    """Yield ('i', addr, isa, size, cond) and ('X', kind, vector, ret) / ('R', ret) / ('H',)."""
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split(" ")
            try:
                if parts[0] == "B":
                    addr = int(parts[1], 16)
                    isa, sizes, conds = parts[2], parts[3], parts[4]
                    if len(sizes) != len(conds):
                        raise ValueError("sizes and conds differ in length")
                    for s, c in zip(sizes, conds):
                        yield ("i", addr, isa, int(s), c)
                        addr += int(s)
                elif parts[0] == "X":
                    yield ("X", parts[1], int(parts[2], 16), int(parts[3], 16))
                elif parts[0] == "R":
                    yield ("R", int(parts[1], 16))
                elif parts[0] == "H":
                    yield ("H",)
                else:
                    raise ValueError("unknown record %r" % parts[0])
            except (ValueError, IndexError) as e:
                raise CoverageError("%s:%d: %s" % (path, lineno, e)) from e


def read_tasks(path):
    """The task record: ({task: name}, [(instruction index, task), ...])."""
    names = {}
    switches = []
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            try:
                if lineno == 1:
                    if line.rstrip("\n") != "# trace-tasks 1":
                        raise ValueError("not a `# trace-tasks 1` file")
                elif not parts or parts[0].startswith("#"):
                    continue
                elif parts[0] == "T":
                    names[int(parts[1])] = parts[3]
                elif parts[0] == "S":
                    switches.append((int(parts[1]), int(parts[2])))
                else:
                    raise ValueError("unknown record %r" % parts[0])
            except (ValueError, IndexError) as e:
                raise CoverageError("%s:%d: %s" % (path, lineno, e)) from e
    if not switches or switches[0] != (0, 0):
        raise CoverageError("%s: the record does not start with `S 0 0`" % path)
    return names, switches


# ---------------------------------------------------------------- ELF
class Image:
    """Symbols, line table and code bytes of one ELF."""

    def __init__(self, path):
        with open(path, "rb") as f:
            elf = ELFFile(f)
            self.segments = []
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_LOAD" and seg["p_filesz"] > 0:
                    self.segments.append((seg["p_vaddr"], seg.data()))
            self.functions = self._functions(elf)
            self.mapping = self._mapping_symbols(elf)
            self.rows = self._line_rows(elf)
        self.func_addrs = [fn["addr"] for fn in self.functions]
        self.row_addrs = [r[0] for r in self.rows]
        self.cs_arm = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_ARM)
        self.cs_thumb = capstone.Cs(capstone.CS_ARCH_ARM, capstone.CS_MODE_THUMB)
        for cs in (self.cs_arm, self.cs_thumb):
            cs.detail = True

    @staticmethod
    def _functions(elf):
        best = {}
        rank = {"STB_GLOBAL": 0, "STB_WEAK": 1, "STB_LOCAL": 2}
        for sec in elf.iter_sections():
            if not isinstance(sec, SymbolTableSection):
                continue
            for sym in sec.iter_symbols():
                if sym["st_info"]["type"] != "STT_FUNC" or sym.name.startswith("$"):
                    continue
                addr = sym["st_value"] & ~1
                key = (rank.get(sym["st_info"]["bind"], 3), sym.name)
                if addr not in best or key < best[addr][0]:
                    best[addr] = (key, sym.name, sym["st_size"], sym["st_value"] & 1 == 1)
        return [{"name": v[1], "addr": a, "size": v[2], "thumb": v[3]}
                for a, v in sorted(best.items())]

    @staticmethod
    def _mapping_symbols(elf):
        """Sorted (address, kind) of the ARM mapping symbols: kind 'a' (A32),
        't' (T32) or 'd' (data) from the address on."""
        marks = {}
        for sec in elf.iter_sections():
            if not isinstance(sec, SymbolTableSection):
                continue
            for sym in sec.iter_symbols():
                name = sym.name
                if len(name) >= 2 and name[0] == "$" and name[1] in "atd" and \
                        (len(name) == 2 or name[2] == "."):
                    marks[sym["st_value"]] = name[1]
        return sorted(marks.items())

    @staticmethod
    def _line_rows(elf):
        """Sorted (address, end_of_sequence, file, line) rows."""
        rows = []
        if not elf.has_dwarf_info():
            return rows
        dwarf = elf.get_dwarf_info()
        for cu in dwarf.iter_CUs():
            lp = dwarf.line_program_for_CU(cu)
            if lp is None:
                continue
            header = lp.header
            dirs = [d.decode() if isinstance(d, bytes) else d
                    for d in header["include_directory"]]
            files = []
            for fe in header["file_entry"]:
                name = fe.name.decode() if isinstance(fe.name, bytes) else fe.name
                d = dirs[fe.dir_index] if fe.dir_index < len(dirs) else ""
                # DWARF 5 indexes directories from 0; 4 from 1 (0 = comp dir).
                if header["version"] < 5:
                    d = dirs[fe.dir_index - 1] if 0 < fe.dir_index <= len(dirs) else ""
                files.append(posixpath.normpath(posixpath.join(d, name)))
            base = 0 if header["version"] >= 5 else 1
            for entry in lp.get_entries():
                st = entry.state
                if st is None:
                    continue
                idx = st.file - base
                fname = files[idx] if 0 <= idx < len(files) else "?"
                rows.append((st.address, st.end_sequence, fname, st.line))
        rows.sort(key=lambda r: (r[0], not r[1]))
        return rows

    def line_of(self, addr):
        """(file, line) of the last line-table row at or before addr."""
        i = bisect.bisect_right(self.row_addrs, addr) - 1
        if i < 0 or self.rows[i][1]:
            return None
        return (self.rows[i][2], self.rows[i][3])

    def owned_lines(self):
        """Lines with a row that covers at least one byte of code."""
        owned = set()
        for row, nxt in zip(self.rows, self.rows[1:]):
            if not row[1] and nxt[0] > row[0]:
                owned.add((row[2], row[3]))
        return owned

    def function_at(self, addr):
        """The function whose range holds addr (or the nearest before it)."""
        i = bisect.bisect_right(self.func_addrs, addr) - 1
        if i < 0:
            return None
        return self.functions[i]

    def name_at(self, addr):
        fn = self.function_at(addr)
        return fn["name"] if fn else "0x%x" % addr

    def vector_name(self, vector):
        """The frame name of an exception entered at `vector`: the function
        starting there, else the address (an A/R-profile vector is an
        instruction inside the vector table's symbol)."""
        fn = self.function_at(vector)
        if fn and fn["addr"] == vector:
            return fn["name"]
        return "0x%08x" % vector

    def code(self, addr, size):
        for base, data in self.segments:
            if base <= addr and addr + size <= base + len(data):
                return data[addr - base:addr - base + size]
        raise CoverageError("address %#x is not in the ELF" % addr)

    def code_runs(self, fn):
        """The (start, end, isa) runs of code of function `fn`: its range cut
        at the mapping symbols, data left out."""
        start, end = fn["addr"], fn["addr"] + fn["size"]
        marks = [m for m in self.mapping if start < m[0] < end]
        before = [m for m in self.mapping if m[0] <= start]
        kind = before[-1][1] if before else ("t" if fn["thumb"] else "a")
        runs = []
        at = start
        for addr, nxt in marks + [(end, None)]:
            if kind != "d" and addr > at:
                runs.append((at, addr, kind))
            at, kind = addr, nxt
        return runs

    def sweep(self, start, end, isa):
        """Yield every instruction of [start, end) decoded in order from
        start (capstone follows IT blocks); bytes it cannot decode are
        stepped over a halfword (T32) or word (A32) at a time."""
        cs = self.cs_thumb if isa == "t" else self.cs_arm
        step = 2 if isa == "t" else 4
        code = self.code(start, end - start)
        at = start
        while at < end:
            last = None
            for insn in cs.disasm(code[at - start:], at):
                yield insn
                last = insn
            if last is None:
                at += step
            else:
                at = last.address + last.size

    def decode(self, addr, isa, size):
        cs = self.cs_thumb if isa == "t" else self.cs_arm
        insns = list(cs.disasm(self.code(addr, size), addr, 1))
        if not insns:
            raise CoverageError("cannot decode %s instruction at %#x" % (isa, addr))
        return insns[0]


LINK_MNEMONICS = ("bl", "blx")
BRANCH_MNEMONICS = ("b", "bl", "bx", "blx", "cbz", "cbnz", "tbb", "tbh")


CONDITION_SUFFIXES = ("eq", "ne", "hs", "lo", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls",
                      "ge", "lt", "gt", "le")


def base_mnemonic(insn):
    """The mnemonic without width qualifier and condition suffix."""
    m = insn.mnemonic.split(".")[0]
    if insn.cc not in (csarm.ARM_CC_AL, csarm.ARM_CC_INVALID) and len(m) > 2 \
            and m[-2:] in CONDITION_SUFFIXES:
        return m[:-2]
    return m


def writes_pc(insn):
    if base_mnemonic(insn) in BRANCH_MNEMONICS:
        return True
    for op in insn.operands:
        if op.type == csarm.ARM_OP_REG and op.reg == csarm.ARM_REG_PC and \
                (op.access & capstone.CS_AC_WRITE):
            return True
    _, written = insn.regs_access()
    return csarm.ARM_REG_PC in written


def is_link(insn):
    return base_mnemonic(insn) in LINK_MNEMONICS


def is_conditional(insn):
    """A condition other than AL (in T32 also from an IT block), or
    CBZ/CBNZ. (capstone gives an IT instruction the condition of its block;
    the instruction itself is not conditional.)"""
    m = base_mnemonic(insn)
    if m in ("cbz", "cbnz"):
        return True
    if m.startswith("it") and set(m[2:]) <= set("te"):
        return False
    return insn.cc not in (csarm.ARM_CC_AL, csarm.ARM_CC_INVALID)


def is_thumb_branch_cond(code):
    """B<c> (T1/T3) or CBZ/CBNZ: conditional without an IT block."""
    hw = code[0] | (code[1] << 8)
    if len(code) == 2:
        return (hw & 0xF000) == 0xD000 or (hw & 0xF500) == 0xB100
    hw2 = code[2] | (code[3] << 8)
    return (hw & 0xF800) == 0xF000 and (hw2 & 0xD000) == 0x8000


# ---------------------------------------------------------------- analysis
def arrive(image, stack, addr, prev):
    """The flow reaches `addr` after `prev` (no call pending): a return to a
    frame's return address pops it and those above it; a jump to another
    function's entry renames the innermost frame."""
    for i in range(len(stack) - 1, 0, -1):
        if stack[i][1] == addr and not stack[i][2]:
            del stack[i:]
            return
    if prev is not None and prev[0] + prev[1] != addr and prev[3]:
        fn = image.function_at(addr)
        if fn is not None and fn["addr"] == addr and stack[-1][0] != fn["name"]:
            stack[-1][0] = fn["name"]


def analyse(image, flow_path, tasks=None):
    counts = {}
    isa_of = {}
    conds = {}
    stacks = {}
    # Call stack: list of [name, return_address or None, is_exception].
    stack = None
    pending_link = None  # return address of a link branch waiting for its target
    prev = None  # (addr, size, is_link, writes_pc) of the previous instruction
    decoded = {}
    # With tasks: each task's stack, parked while another runs, and the
    # name that starts each of its folded stacks (none for task 0, the
    # initial context).
    names, switches = tasks if tasks is not None else ({}, [(0, 0)])
    parked = {}
    running = 0
    label = []
    upcoming = iter(switches[1:])
    next_switch = next(upcoming, None)
    index = 0  # of the next instruction
    for rec in read_flow(flow_path):
        if rec[0] == "R" and next_switch is not None and next_switch[0] == index:
            # This return resumes (or starts) another task: the running one
            # stays inside its handler.
            parked[running] = stack
            running = next_switch[1]
            stack = parked.pop(running, None)
            label = [names[running]] if running else []
            next_switch = next(upcoming, None)
            if stack is None:
                prev = None
                continue
        if next_switch is not None and next_switch[0] < index:
            raise CoverageError("task switch at instruction %d is not at an exception "
                                "return" % next_switch[0])
        if rec[0] == "X" and stack is None and running:
            # A task taking an exception before its first instruction.
            stack = [[image.name_at(rec[3]), None, False]]
        if rec[0] == "i":
            _, addr, isa, size, cond = rec
            index += 1
            counts[addr] = counts.get(addr, 0) + 1
            isa_of[addr] = (isa, size)
            if stack is None:
                stack = [[image.name_at(addr), None, False]]
            elif pending_link is not None:
                stack.append([image.name_at(addr), pending_link, False])
                pending_link = None
            else:
                arrive(image, stack, addr, prev)
            key = ";".join(label + [frame[0] for frame in stack])
            stacks[key] = stacks.get(key, 0) + 1
            if addr not in decoded:
                decoded[addr] = image.decode(addr, isa, size)
            insn = decoded[addr]
            if cond in "EN":
                entry = conds.setdefault(addr, [0, 0])
                entry[0 if cond == "E" else 1] += 1
            link = is_link(insn) and cond != "N"
            if link:
                pending_link = addr + size
            prev = (addr, size, link, writes_pc(insn) and cond != "N")
        elif rec[0] == "X":
            _, kind, vector, ret = rec
            if stack is None:
                raise CoverageError("exception before the first instruction")
            if pending_link is not None:
                # The call's target is where the exception returns to.
                stack.append([image.name_at(ret), pending_link, False])
                pending_link = None
            elif prev is not None:
                # A return or jump taken before the exception arrived there.
                arrive(image, stack, ret, prev)
            stack.append([image.vector_name(vector), None, True])
            prev = None
        elif rec[0] == "R":
            if stack is None:
                raise CoverageError("exception return before the first instruction")
            for i in range(len(stack) - 1, -1, -1):
                if stack[i][2]:
                    del stack[i:]
                    break
            else:
                raise CoverageError("exception return without an exception")
            prev = None
        else:
            break
    if next_switch is not None:
        raise CoverageError("task switch at instruction %d after the end of the flow"
                            % next_switch[0])
    return counts, isa_of, conds, stacks, decoded


def unreached_conditionals(image, counts, isa_of, conds):
    """Every conditional instruction of the functions' code that never ran.

    The code is decoded statically (see Image.sweep); every instruction of
    the flow inside that code must be an instruction of the sweep with the
    same size and, conditional or not, as the flow says."""
    found = {}
    swept = {}
    for fn in image.functions:
        for start, end, isa in image.code_runs(fn):
            for insn in image.sweep(start, end, isa):
                swept[insn.address] = (isa, insn)
    for addr in counts:
        if addr not in swept:
            if any(fn["addr"] <= addr < fn["addr"] + fn["size"] for fn in image.functions):
                raise CoverageError("%#x ran but the static decoding of its function "
                                    "has no instruction there" % addr)
            continue
        isa, insn = swept[addr]
        if (isa, insn.size) != isa_of[addr]:
            raise CoverageError("%#x: the flow and the static decoding disagree on "
                                "the instruction set or size" % addr)
        if is_conditional(insn) != (addr in conds):
            raise CoverageError("%#x: the flow and the static decoding disagree on "
                                "whether %s %s is conditional" % (addr, insn.mnemonic, insn.op_str))
    for addr, (isa, insn) in sorted(swept.items()):
        if addr in counts or not is_conditional(insn):
            continue
        loc = image.line_of(addr)
        code = image.code(addr, insn.size)
        found[addr] = {
            "addr": addr,
            "file": loc[0] if loc else None,
            "line": loc[1] if loc else None,
            "branch": writes_pc(insn),
            "it": isa == "t" and not is_thumb_branch_cond(code),
        }
    return list(found.values())


def build(image, flow_path, tasks=None):
    counts, isa_of, conds, stacks, decoded = analyse(image, flow_path, tasks)
    functions = []
    for fn in image.functions:
        loc = image.line_of(fn["addr"])
        functions.append({
            "name": fn["name"],
            "addr": fn["addr"],
            "file": loc[0] if loc else None,
            "line": loc[1] if loc else None,
            "count": counts.get(fn["addr"], 0),
        })
    lines = {}
    for loc in image.owned_lines():
        lines[loc] = 0
    for addr, n in counts.items():
        loc = image.line_of(addr)
        if loc is not None:
            lines[loc] = max(lines.get(loc, 0), n)
    conditionals = []
    for addr in sorted(conds):
        isa, size = isa_of[addr]
        insn = decoded[addr]
        loc = image.line_of(addr)
        code = image.code(addr, size)
        in_it = isa == "t" and not is_thumb_branch_cond(code)
        conditionals.append({
            "addr": addr,
            "file": loc[0] if loc else None,
            "line": loc[1] if loc else None,
            "branch": writes_pc(insn),
            "it": in_it,
            "passed": conds[addr][0],
            "failed": conds[addr][1],
        })
    return {
        "functions": functions,
        "lines": [{"file": f, "line": ln, "count": c} for (f, ln), c in sorted(lines.items())],
        "conditionals": conditionals,
        "unreached_conditionals": unreached_conditionals(image, counts, isa_of, conds),
        "stacks": dict(sorted(stacks.items())),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("elf")
    ap.add_argument("flow")
    ap.add_argument("--tasks", help="the task record (truth.py --tasks): stacks per task")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    try:
        tasks = read_tasks(args.tasks) if args.tasks else None
        result = build(Image(args.elf), args.flow, tasks)
    except (CoverageError, ELFError, OSError) as e:
        print("coverage.py: %s" % e, file=sys.stderr)
        return 1
    text = json.dumps(result, indent=1, sort_keys=False) + "\n"
    tmp = args.output + ".tmp"
    with open(tmp, "w", newline="\n") as f:
        f.write(text)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
