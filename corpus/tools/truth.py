#!/usr/bin/env python3
"""Run a corpus ELF in unicorn and write its executed flow (a `.flow` file).

Usage: truth.py ELF --profile a|m [--program NAME --flavour F] [--tasks OUT.tasks] -o OUT.flow

The flow format, the task record (`--tasks`, for a program built on the
corpus RTOS) and the emulated machine (memory map, device page, interrupt
rules, halt convention) are described in corpus/README.md.
Requires: unicorn (2.1.x), pyelftools.
"""

import argparse
import os
import struct
import sys

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from unicorn import (UC_ARCH_ARM, UC_HOOK_CODE, UC_HOOK_INTR, UC_HOOK_MEM_WRITE,
                     UC_MODE_ARM, Uc, UcError)
from unicorn.arm_const import (UC_ARM_REG_CPSR, UC_ARM_REG_LR, UC_ARM_REG_PC,
                               UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2,
                               UC_ARM_REG_R3, UC_ARM_REG_R4, UC_ARM_REG_R5,
                               UC_ARM_REG_R6, UC_ARM_REG_R7, UC_ARM_REG_R12,
                               UC_ARM_REG_SP, UC_ARM_REG_SPSR, UC_CPU_ARM_CORTEX_A15)

DEV_BASE = 0x40000000
DEV_TRIGGER = DEV_BASE + 0x0
DEV_TIMER = DEV_BASE + 0x4
# ARMv7-M System Control Block: ICSR bit 28 (PENDSVSET) makes PendSV pending.
SCB_BASE = 0xE000E000
ICSR = 0xE000ED04
PENDSVSET = 1 << 28
MAX_INSNS = 400_000

# Memory regions (base, size) per profile.
REGIONS = {
    "a": [(0x00000000, 0x80000), (DEV_BASE, 0x1000)],
    "m": [(0x00000000, 0x40000), (0x20000000, 0x10000), (DEV_BASE, 0x1000),
          (SCB_BASE, 0x1000), (0xFFFFF000, 0x1000)],
}

# ARMv7-M exception priorities used by this machine (lower value wins).
M_PRIORITY = {11: 0xC0, 14: 0xE0, 15: 0x80}
M_EXTERNAL_PRIORITY = 0x40

LOW_REGS = [UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2, UC_ARM_REG_R3,
            UC_ARM_REG_R4, UC_ARM_REG_R5, UC_ARM_REG_R6, UC_ARM_REG_R7]

A_VECTORS = {"svc": 0x08, "irq": 0x18}
A_MODES = {"svc": 0x13, "irq": 0x12}


class FlowError(Exception):
    """The program did something this machine does not model."""


def cond_passed(cond, cpsr):
    """Evaluate an A32/T32 condition code against the CPSR flags."""
    n = (cpsr >> 31) & 1
    z = (cpsr >> 30) & 1
    c = (cpsr >> 29) & 1
    v = (cpsr >> 28) & 1
    base = cond >> 1
    result = [z == 1, c == 1, n == 1, v == 1, c == 1 and z == 0, n == v,
              z == 0 and n == v, True][base]
    if cond & 1 and cond != 0xF:
        result = not result
    return result


def thumb_size(halfword):
    """Size in bytes of the T32 instruction whose first halfword is given."""
    return 4 if (halfword >> 11) in (0x1D, 0x1E, 0x1F) else 2


def it_conditions(halfword):
    """The conditions of the instructions covered by an IT instruction."""
    firstcond = (halfword >> 4) & 0xF
    mask = halfword & 0xF
    trailing = (mask & -mask).bit_length() - 1
    count = 4 - trailing
    conds = [firstcond]
    for k in range(1, count):
        bit = (mask >> (4 - k)) & 1
        conds.append((firstcond & 0xE) | bit)
    return conds


def is_a32_exception_return(word):
    """SUBS/MOVS PC (data processing with S, Rd = PC), LDM ... ^ with PC, RFE."""
    if (word & 0x0C10F000) == 0x0010F000 and ((word >> 21) & 0xF) not in (8, 9, 10, 11):
        return True
    if (word & 0x0E508000) == 0x08508000:
        return True
    return (word & 0xFE50FFFF) == 0xF8100A00


class FlowWriter:
    """Collects executed instructions and records, merging blocks."""

    def __init__(self):
        self.lines = []
        self.block = None  # [addr, isa, sizes, conds, next_addr]
        self.count = 0

    def insn(self, addr, isa, size, cond):
        self.count += 1
        b = self.block
        if b is not None and b[1] == isa and b[4] == addr:
            b[2].append(str(size))
            b[3].append(cond)
            b[4] = addr + size
        else:
            self.flush()
            self.block = [addr, isa, [str(size)], [cond], addr + size]

    def flush(self):
        if self.block is not None:
            b = self.block
            self.lines.append("B %x %s %s %s" % (b[0], b[1], "".join(b[2]), "".join(b[3])))
            self.block = None

    def record(self, text):
        self.flush()
        self.lines.append(text)


class TaskLog:
    """Which task of the corpus RTOS runs each instruction.

    The kernel's `rtos_current` points to the running task's control block
    (`id` at offset 4, `entry` at offset 8); it is read after every return
    from an exception to a task (the only place a task starts or resumes).
    Before the scheduler starts (`rtos_current` null) the initial context,
    task 0, runs.
    """

    def __init__(self, elf, current_addr):
        self.current_addr = current_addr
        self.functions = []
        symtab = elf.get_section_by_name(".symtab")
        for sym in symtab.iter_symbols() if symtab else []:
            if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] > 0:
                start = sym["st_value"] & ~1
                self.functions.append((start, start + sym["st_size"], sym.name))
        self.functions.sort()
        self.names = {}
        self.running = 0
        self.switches = [(0, 0)]

    def name_of(self, addr):
        for start, end, name in self.functions:
            if start <= addr < end:
                return name
        raise FlowError("no function holds task entry %#x" % addr)

    def resumed(self, machine, index):
        """A return to a task: note the task that runs from instruction `index`."""
        tcb = machine.r32(self.current_addr)
        if tcb == 0:
            task = 0
        else:
            task = machine.r32(tcb + 4)
            entry = machine.r32(tcb + 8) & ~1
            if task not in self.names:
                self.names[task] = (entry, self.name_of(entry))
            elif self.names[task][0] != entry:
                raise FlowError("task %d changed its entry" % task)
        if task != self.running:
            self.running = task
            if self.switches[-1][0] == index:
                self.switches.pop()
            self.switches.append((index, task))

    def text(self, header):
        lines = ["# trace-tasks 1"] + ["# %s: %s" % kv for kv in header]
        for task in sorted(self.names):
            entry, name = self.names[task]
            lines.append("T %d %x %s" % (task, entry, name))
        for index, task in self.switches:
            lines.append("S %d %d" % (index, task))
        return "\n".join(lines) + "\n"


class Machine:
    """One emulated run of a corpus program."""

    def __init__(self, elf_path, profile, tasks=False):
        self.profile = profile
        self.uc = Uc(UC_ARCH_ARM, UC_MODE_ARM)
        self.uc.ctl_set_cpu_model(UC_CPU_ARM_CORTEX_A15)
        for base, size in REGIONS[profile]:
            self.uc.mem_map(base, size)
        self.tasks = None
        with open(elf_path, "rb") as f:
            elf = ELFFile(f)
            self.elf_entry = elf.header["e_entry"]
            for seg in elf.iter_segments():
                if seg["p_type"] == "PT_LOAD" and seg["p_filesz"] > 0:
                    self.uc.mem_write(seg["p_paddr"], seg.data())
            if tasks:
                symtab = elf.get_section_by_name(".symtab")
                found = symtab.get_symbol_by_name("rtos_current") if symtab else None
                if not found:
                    raise FlowError("--tasks: the program has no `rtos_current`")
                self.tasks = TaskLog(elf, found[0]["st_value"])
        self.out = FlowWriter()
        self.stop_reason = None
        self.stop_addr = None
        self.it_queue = []
        self.it_next = None
        self.exc_return_pending = False
        self.pending = set()
        self.timer_period = 0
        self.timer_next = 0
        self.active = []  # ARMv7-M active exception numbers
        self.uc.hook_add(UC_HOOK_CODE, self._on_code)
        self.uc.hook_add(UC_HOOK_INTR, self._on_intr)
        self.uc.hook_add(UC_HOOK_MEM_WRITE, self._on_dev_write, begin=DEV_BASE,
                         end=DEV_BASE + 0xFFF)
        if profile == "m":
            self.uc.hook_add(UC_HOOK_MEM_WRITE, self._on_icsr_write, begin=ICSR,
                             end=ICSR + 3)

    # ---- helpers -------------------------------------------------------
    def r32(self, addr):
        return struct.unpack("<I", self.uc.mem_read(addr, 4))[0]

    def r16(self, addr):
        return struct.unpack("<H", self.uc.mem_read(addr, 2))[0]

    def cpsr(self):
        return self.uc.reg_read(UC_ARM_REG_CPSR)

    def _stop(self, reason, addr):
        self.stop_reason = reason
        self.stop_addr = addr
        self.uc.emu_stop()

    def _masked(self):
        return (self.cpsr() >> 7) & 1 == 1

    def _m_priority(self, num):
        return M_PRIORITY.get(num, M_EXTERNAL_PRIORITY)

    def _takeable(self):
        """The pending interrupt to take now, or None."""
        if not self.pending or self._masked():
            return None
        if self.profile == "a":
            return "irq"
        current = min((self._m_priority(n) for n in self.active), default=0x100)
        best = min(self.pending, key=lambda n: (self._m_priority(n), n))
        return best if self._m_priority(best) < current else None

    # ---- hooks ---------------------------------------------------------
    def _on_dev_write(self, uc, access, addr, size, value, data):
        if addr == DEV_TRIGGER:
            if self.profile == "a":
                self.pending.add("irq")
            else:
                if value < 16 and value != 15:
                    self.stop_reason = "error"
                    self.stop_addr = "trigger value %d is not an interrupt" % value
                    uc.emu_stop()
                    return
                self.pending.add(value)
        elif addr == DEV_TIMER:
            self.timer_period = value
            self.timer_next = self.out.count + value

    def _on_icsr_write(self, uc, access, addr, size, value, data):
        if addr == ICSR and size == 4 and value & PENDSVSET:
            self.pending.add(14)

    def _returned(self, ret, to_task):
        """Record an exception return to `ret`; `to_task`: to thread code."""
        self.out.record("R %x" % ret)
        if to_task and self.tasks is not None:
            self.tasks.resumed(self, self.out.count)

    def _a_to_task(self):
        """A-profile: the mode after an exception return is User or System."""
        return self.cpsr() & 0x1F in (0x10, 0x1F)

    def _on_intr(self, uc, intno, data):
        if self.stop_reason is not None:
            return
        if intno == 2:
            self._stop("svc", None)
        else:
            self._stop("error", "unexpected CPU exception %d at pc %#x"
                       % (intno, uc.reg_read(UC_ARM_REG_PC)))

    def _skip_it_until(self, addr):
        """Record the IT-block instructions skipped before `addr` as failed."""
        cpsr = self.cpsr()
        while self.it_queue and self.it_next != addr:
            cond = self.it_queue.pop(0)
            hw = self.r16(self.it_next)
            size = thumb_size(hw)
            if cond_passed(cond, cpsr):
                raise FlowError("IT-block instruction at %#x passed but did not run"
                                % self.it_next)
            self.out.insn(self.it_next, "t", size, "N")
            self._tick()
            self.it_next += size
        if self.it_queue and self.it_next != addr:
            raise FlowError("left an IT block at %#x" % addr)

    def _tick(self):
        if self.timer_period and self.out.count >= self.timer_next:
            self.pending.add("irq" if self.profile == "a" else 15)
            self.timer_next += self.timer_period

    def _on_code(self, uc, addr, size, data):
        if self.stop_reason is not None:
            uc.emu_stop()
            return
        if self.profile == "m" and addr >= 0xFFFFFF00:
            self._stop("excret", addr)
            return
        cpsr = self.cpsr()
        thumb = (cpsr >> 5) & 1 == 1
        if self.it_queue:
            self._skip_it_until(addr)
        if self.exc_return_pending:
            self._returned(addr, self._a_to_task())
            self.exc_return_pending = False
        if not self.it_queue and self._takeable() is not None:
            self._stop("irq", addr)
            return
        if self.out.count >= MAX_INSNS:
            self._stop("error", "more than %d instructions" % MAX_INSNS)
            return
        if thumb:
            hw = self.r16(addr)
            hw2 = self.r16(addr + 2) if size == 4 else 0
            if hw == 0xE7FE or (hw == 0xF7FF and hw2 == 0xBFFE):
                self._stop("halt", addr)
                return
            cond = self._thumb_cond(addr, size, hw, hw2, cpsr)
            self.out.insn(addr, "t", size, cond)
        else:
            word = self.r32(addr)
            if word == 0xEAFFFFFE:
                self._stop("halt", addr)
                return
            c = word >> 28
            if c >= 0xE:
                cond = "-"
            else:
                cond = "E" if cond_passed(c, cpsr) else "N"
            self.out.insn(addr, "a", size, cond)
            if self.profile == "a" and cond != "N" and is_a32_exception_return(word):
                self.exc_return_pending = True
        self._tick()

    def _thumb_cond(self, addr, size, hw, hw2, cpsr):
        if self.it_queue:
            c = self.it_queue.pop(0)
            self.it_next = addr + size
            if c == 0xE:
                return "-"
            if not cond_passed(c, cpsr):
                raise FlowError("IT-block instruction at %#x ran but fails" % addr)
            return "E"
        if size == 2:
            if (hw & 0xFF00) == 0xBF00 and (hw & 0xF) != 0:
                self.it_queue = it_conditions(hw)
                self.it_next = addr + 2
                return "-"
            if (hw & 0xF000) == 0xD000 and ((hw >> 8) & 0xF) < 0xE:
                return "E" if cond_passed((hw >> 8) & 0xF, cpsr) else "N"
            if (hw & 0xF500) == 0xB100:
                value = self.uc.reg_read(LOW_REGS[hw & 7])
                branched = value != 0 if hw & 0x0800 else value == 0
                return "E" if branched else "N"
            return "-"
        if (hw & 0xF800) == 0xF000 and (hw2 & 0xD000) == 0x8000:
            c = (hw >> 6) & 0xF
            if c < 0xE:
                return "E" if cond_passed(c, cpsr) else "N"
        return "-"

    # ---- exceptions ----------------------------------------------------
    def _enter_a(self, kind, ret):
        cpsr = self.cpsr()
        new = (cpsr & ~0x0600FC3F) | A_MODES[kind] | 0x80
        self.uc.reg_write(UC_ARM_REG_CPSR, new)
        self.uc.reg_write(UC_ARM_REG_SPSR, cpsr)
        self.uc.reg_write(UC_ARM_REG_LR, ret + 4 if kind == "irq" else ret)
        vector = A_VECTORS[kind]
        self.out.record("X %s %x %x" % (kind, vector, ret))
        return vector

    def _enter_m(self, num, ret):
        cpsr = self.cpsr()
        ipsr = self.active[-1] if self.active else 0
        xpsr = (cpsr & 0xF8000000) | (1 << 24) | ipsr
        sp = self.uc.reg_read(UC_ARM_REG_SP)
        if sp & 4:
            sp -= 4
            xpsr |= 1 << 9
        regs = [self.uc.reg_read(r) for r in
                (UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2, UC_ARM_REG_R3,
                 UC_ARM_REG_R12, UC_ARM_REG_LR)]
        sp -= 32
        self.uc.mem_write(sp, struct.pack("<8I", *regs, ret, xpsr))
        self.uc.reg_write(UC_ARM_REG_SP, sp)
        self.uc.reg_write(UC_ARM_REG_LR, 0xFFFFFFF1 if self.active else 0xFFFFFFF9)
        self.active.append(num)
        vector = self.r32(4 * num) & ~1
        self.out.record("X m%d %x %x" % (num, vector, ret))
        return vector | 1

    def _return_m(self, exc_return):
        if not self.active:
            raise FlowError("exception return %#x outside a handler" % exc_return)
        expected = 0xFFFFFFF1 if len(self.active) > 1 else 0xFFFFFFF9
        if exc_return != expected:
            raise FlowError("unsupported EXC_RETURN %#x" % exc_return)
        sp = self.uc.reg_read(UC_ARM_REG_SP)
        frame = struct.unpack("<8I", self.uc.mem_read(sp, 32))
        sp += 32
        if frame[7] & (1 << 9):
            sp += 4
        for reg, value in zip((UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2, UC_ARM_REG_R3,
                               UC_ARM_REG_R12, UC_ARM_REG_LR), frame[:6]):
            self.uc.reg_write(reg, value)
        self.uc.reg_write(UC_ARM_REG_SP, sp)
        cpsr = self.cpsr()
        self.uc.reg_write(UC_ARM_REG_CPSR, (cpsr & ~0xF8000000) | (frame[7] & 0xF8000000))
        self.active.pop()
        ret = frame[6] & ~1
        self._returned(ret, not self.active)
        return ret | 1

    # ---- main loop -----------------------------------------------------
    def run(self):
        if self.profile == "a":
            self.uc.reg_write(UC_ARM_REG_CPSR, 0x1D3)  # SVC mode, IRQ/FIQ masked, A32
            pc = self.elf_entry
        else:
            self.uc.reg_write(UC_ARM_REG_CPSR, 0x13 | (1 << 5))  # privileged, T32
            self.uc.reg_write(UC_ARM_REG_SP, self.r32(0))
            pc = self.r32(4) | 1
        entry = pc & ~1
        while True:
            self.stop_reason = None
            self.stop_addr = None
            try:
                self.uc.emu_start(pc, 0xFFFFFFFF)
            except UcError as e:
                raise FlowError("emulation error at pc %#x: %s"
                                % (self.uc.reg_read(UC_ARM_REG_PC), e)) from e
            reason = self.stop_reason
            here = self.uc.reg_read(UC_ARM_REG_PC)
            if reason is None:
                raise FlowError("emulation ended without a halt at pc %#x" % here)
            if reason == "error":
                raise FlowError(self.stop_addr)
            if self.it_queue:
                raise FlowError("stopped inside an IT block at %#x" % here)
            if reason in ("irq", "halt", "excret") and here != self.stop_addr:
                raise FlowError("stopped at %#x, expected %#x" % (here, self.stop_addr))
            if reason == "halt":
                if self.exc_return_pending:
                    self._returned(here, self._a_to_task())
                self.out.record("H")
                break
            if reason == "excret":
                pc = self._return_m(here | 1)
                continue
            if reason == "svc" and self.profile == "m":
                current = min((self._m_priority(n) for n in self.active), default=0x100)
                if self._masked() or current <= M_PRIORITY[11]:
                    raise FlowError("SVC at %#x would escalate to HardFault (PRIMASK set or "
                                    "priority too high); not modelled" % (here - 2))
            if reason == "svc":
                pc = (self._enter_a("svc", here) if self.profile == "a"
                      else self._enter_m(11, here))
                continue
            # reason == "irq"
            if self.exc_return_pending:
                self._returned(here, self._a_to_task())
                self.exc_return_pending = False
            kind = self._takeable()
            self.pending.discard(kind)
            pc = self._enter_a("irq", here) if self.profile == "a" else self._enter_m(kind, here)
        return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("elf")
    ap.add_argument("--profile", choices=("a", "m"), required=True)
    ap.add_argument("--program")
    ap.add_argument("--flavour")
    ap.add_argument("--tasks", metavar="OUT.tasks",
                    help="also record which task of the corpus RTOS runs each instruction")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    try:
        machine = Machine(args.elf, args.profile, tasks=args.tasks is not None)
        entry = machine.run()
    except (FlowError, ELFError, OSError, UcError) as e:
        print("truth.py: %s: %s" % (args.elf, e), file=sys.stderr)
        return 1
    machine.out.flush()
    name = os.path.basename(args.elf)
    program = args.program or name.rsplit("-", 1)[0]
    header = ["# trace-flow 1", "# program: %s" % program]
    if args.flavour:
        header.append("# flavour: %s" % args.flavour)
    header += ["# elf: %s" % name, "# entry: %x" % entry,
               "# instructions: %d" % machine.out.count]
    text = "\n".join(header + machine.out.lines) + "\n"
    write_atomic(args.output, text)
    if args.tasks is not None:
        kv = [("program", program)]
        if args.flavour:
            kv.append(("flavour", args.flavour))
        kv += [("elf", name), ("tasks", len(machine.tasks.names) + 1),
               ("switches", len(machine.tasks.switches) - 1)]
        write_atomic(args.tasks, machine.tasks.text(kv))
    return 0


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
