//! The executed instruction flow: what the processor did, one record per
//! instruction, exception, exception return and halt.
//!
//! The text form (`.flow`, format version 1) is described in the corpus
//! README: `B <addr> <isa> <sizes> <conds>` blocks of consecutive
//! instructions, `X <kind> <vector> <ret>` exceptions, `R <ret>` exception
//! returns and `H` for the end of the program. [`Flow::parse`] reads it
//! (reporting the line of any problem, never panicking) and
//! [`Flow::to_text`] writes it back.

use std::fmt::{self, Write as _};
pub use trace_core::event::Isa;

/// How an instruction fared with its condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cond {
    /// Unconditional (condition AL, or none): `-`.
    Unconditional,
    /// Conditional and passed (for `CBZ`/`CBNZ`: branched): `E`.
    Passed,
    /// Conditional and failed (did not branch; in an IT block: did not
    /// execute): `N`.
    Failed,
}

impl Cond {
    /// Whether the instruction passed its condition check (an E atom).
    #[must_use]
    pub const fn passed(self) -> bool {
        !matches!(self, Cond::Failed)
    }

    fn from_char(c: char) -> Option<Cond> {
        match c {
            '-' => Some(Cond::Unconditional),
            'E' => Some(Cond::Passed),
            'N' => Some(Cond::Failed),
            _ => None,
        }
    }

    fn to_char(self) -> char {
        match self {
            Cond::Unconditional => '-',
            Cond::Passed => 'E',
            Cond::Failed => 'N',
        }
    }
}

/// Which exception was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExceptionKind {
    /// A-profile Reset.
    Reset,
    /// A-profile Undefined Instruction.
    Undef,
    /// A-profile Supervisor Call.
    Svc,
    /// A-profile Prefetch Abort.
    Pabort,
    /// A-profile Data Abort.
    Dabort,
    /// A-profile IRQ.
    Irq,
    /// A-profile FIQ.
    Fiq,
    /// ARMv7-M exception with its architectural number (11 SVCall,
    /// 15 SysTick, 16 and up external interrupts).
    M(u16),
}

impl ExceptionKind {
    /// The name used in flow files: `reset`, `undef`, `svc`, `pabort`,
    /// `dabort`, `irq`, `fiq`, `m<N>`.
    #[must_use]
    pub fn name(self) -> String {
        match self {
            ExceptionKind::Reset => "reset".into(),
            ExceptionKind::Undef => "undef".into(),
            ExceptionKind::Svc => "svc".into(),
            ExceptionKind::Pabort => "pabort".into(),
            ExceptionKind::Dabort => "dabort".into(),
            ExceptionKind::Irq => "irq".into(),
            ExceptionKind::Fiq => "fiq".into(),
            ExceptionKind::M(n) => format!("m{n}"),
        }
    }

    /// Parses a flow file name (see [`ExceptionKind::name`]); ARMv7-M
    /// numbers must lie in 1..=511.
    #[must_use]
    pub fn from_name(name: &str) -> Option<ExceptionKind> {
        Some(match name {
            "reset" => ExceptionKind::Reset,
            "undef" => ExceptionKind::Undef,
            "svc" => ExceptionKind::Svc,
            "pabort" => ExceptionKind::Pabort,
            "dabort" => ExceptionKind::Dabort,
            "irq" => ExceptionKind::Irq,
            "fiq" => ExceptionKind::Fiq,
            m => {
                let digits = m.strip_prefix('m')?;
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let n: u16 = digits.parse().ok()?;
                if !(1..=511).contains(&n) {
                    return None;
                }
                ExceptionKind::M(n)
            }
        })
    }

    /// Whether this is an ARMv7-M exception.
    #[must_use]
    pub const fn is_m_profile(self) -> bool {
        matches!(self, ExceptionKind::M(_))
    }

    /// Whether the exception is a fault raised by the instruction at the
    /// preferred return address (so that instruction did not complete):
    /// Undefined Instruction, the aborts, and the ARMv7-M HardFault,
    /// MemManage, BusFault and UsageFault.
    #[must_use]
    pub const fn is_synchronous_fault(self) -> bool {
        matches!(
            self,
            ExceptionKind::Undef
                | ExceptionKind::Pabort
                | ExceptionKind::Dabort
                | ExceptionKind::M(3..=6)
        )
    }
}

impl fmt::Display for ExceptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// One record of the flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowItem {
    /// One executed (or condition-failed) instruction.
    Insn {
        /// Its address.
        addr: u32,
        /// Its instruction set.
        isa: Isa,
        /// Its size in bytes, 2 or 4.
        size: u8,
        /// How it fared with its condition.
        cond: Cond,
    },
    /// An exception was taken after the instructions before it.
    Exception {
        /// Which.
        kind: ExceptionKind,
        /// First handler instruction (ARMv7-M: the vector table entry with
        /// the Thumb bit cleared).
        vector: u32,
        /// Preferred return address.
        ret: u32,
    },
    /// The instruction before returned from an exception to `ret`.
    ExceptionReturn {
        /// Where execution resumes.
        ret: u32,
    },
    /// The program ended.
    Halt,
}

/// A parsed flow: header entries and records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flow {
    /// `# key: value` header lines, in order.
    pub header: Vec<(String, String)>,
    /// The records, one [`FlowItem::Insn`] per instruction.
    pub items: Vec<FlowItem>,
}

/// What is wrong with a flow file, and on which line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct FlowError {
    /// Line number, from 1.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

fn hex(field: &str, what: &str, line: usize) -> Result<u32, FlowError> {
    let bad = || FlowError {
        line,
        reason: format!("{what} `{field}` is not a 32-bit hexadecimal number"),
    };
    if field.is_empty() || field.len() > 8 || !field.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    u32::from_str_radix(field, 16).map_err(|_| bad())
}

impl Flow {
    /// Parses the text of a `.flow` file.
    ///
    /// # Errors
    ///
    /// A [`FlowError`] with the line number when the first line is not
    /// `# trace-flow 1`, a record is unknown or has the wrong number of
    /// fields, a number is not hexadecimal, a size is not 2 or 4 (4 for
    /// A32), the sizes and conditions differ in length, an address is
    /// misaligned for its instruction set, an exception kind is unknown,
    /// or a record follows `H`.
    pub fn parse(text: &str) -> Result<Flow, FlowError> {
        let mut flow = Flow::default();
        let mut halted = false;
        let mut lines = text.lines().enumerate();
        match lines.next() {
            Some((_, first)) if first.trim_end() == "# trace-flow 1" => {}
            Some((_, first)) if first.starts_with("# trace-flow ") => {
                return Err(FlowError {
                    line: 1,
                    reason: format!("unsupported flow format `{}`", first.trim_end()),
                })
            }
            _ => {
                return Err(FlowError {
                    line: 1,
                    reason: "the first line must be `# trace-flow 1`".into(),
                })
            }
        }
        let mut in_header = true;
        for (n, raw) in lines {
            let line = n + 1;
            let text = raw.trim_end_matches('\r');
            if let Some(comment) = text.strip_prefix('#') {
                if in_header {
                    if let Some((k, v)) = comment.trim().split_once(':') {
                        flow.header.push((k.trim().to_owned(), v.trim().to_owned()));
                    }
                }
                continue;
            }
            in_header = false;
            if text.trim().is_empty() {
                continue;
            }
            if halted {
                return Err(FlowError {
                    line,
                    reason: "record after the halt record `H`".into(),
                });
            }
            let fields: Vec<&str> = text.split(' ').collect();
            let want = |n: usize| -> Result<(), FlowError> {
                if fields.len() == n {
                    Ok(())
                } else {
                    Err(FlowError {
                        line,
                        reason: format!(
                            "`{}` record needs {} fields separated by single spaces, found {}",
                            fields[0],
                            n - 1,
                            fields.len() - 1
                        ),
                    })
                }
            };
            match fields[0] {
                "B" => {
                    want(5)?;
                    parse_block(&fields, line, &mut flow.items)?;
                }
                "X" => {
                    want(4)?;
                    let kind = ExceptionKind::from_name(fields[1]).ok_or_else(|| FlowError {
                        line,
                        reason: format!("unknown exception kind `{}`", fields[1]),
                    })?;
                    flow.items.push(FlowItem::Exception {
                        kind,
                        vector: hex(fields[2], "vector", line)?,
                        ret: hex(fields[3], "return address", line)?,
                    });
                }
                "R" => {
                    want(2)?;
                    flow.items.push(FlowItem::ExceptionReturn {
                        ret: hex(fields[1], "return address", line)?,
                    });
                }
                "H" => {
                    want(1)?;
                    flow.items.push(FlowItem::Halt);
                    halted = true;
                }
                other => {
                    return Err(FlowError {
                        line,
                        reason: format!("unknown record `{other}` (expected B, X, R or H)"),
                    })
                }
            }
        }
        Ok(flow)
    }

    /// The header value for `key`, if present.
    #[must_use]
    pub fn header(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Number of instruction records.
    #[must_use]
    pub fn instruction_count(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i, FlowItem::Insn { .. }))
            .count()
    }

    /// The flow in its text form (a `B` line per run of consecutive
    /// instructions in one instruction set, at most 64 per line).
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut s = String::from("# trace-flow 1\n");
        for (k, v) in &self.header {
            let _ = writeln!(s, "# {k}: {v}");
        }
        let mut block: Option<(u32, Isa, String, String, u32)> = None;
        let flush = |s: &mut String, block: &mut Option<(u32, Isa, String, String, u32)>| {
            if let Some((addr, isa, sizes, conds, _)) = block.take() {
                let i = if isa == Isa::A32 { 'a' } else { 't' };
                let _ = writeln!(s, "B {addr:x} {i} {sizes} {conds}");
            }
        };
        for item in &self.items {
            match *item {
                FlowItem::Insn {
                    addr,
                    isa,
                    size,
                    cond,
                } => {
                    let continues = matches!(&block, Some((_, bisa, sizes, _, next))
                        if *bisa == isa && *next == addr && sizes.len() < 64);
                    if !continues {
                        flush(&mut s, &mut block);
                        block = Some((addr, isa, String::new(), String::new(), addr));
                    }
                    if let Some((_, _, sizes, conds, next)) = &mut block {
                        sizes.push(if size == 2 { '2' } else { '4' });
                        conds.push(cond.to_char());
                        *next = addr.wrapping_add(u32::from(size));
                    }
                }
                FlowItem::Exception { kind, vector, ret } => {
                    flush(&mut s, &mut block);
                    let _ = writeln!(s, "X {kind} {vector:x} {ret:x}");
                }
                FlowItem::ExceptionReturn { ret } => {
                    flush(&mut s, &mut block);
                    let _ = writeln!(s, "R {ret:x}");
                }
                FlowItem::Halt => {
                    flush(&mut s, &mut block);
                    s.push_str("H\n");
                }
            }
        }
        flush(&mut s, &mut block);
        s
    }
}

fn parse_block(fields: &[&str], line: usize, items: &mut Vec<FlowItem>) -> Result<(), FlowError> {
    let err = |reason: String| FlowError { line, reason };
    let addr = hex(fields[1], "address", line)?;
    let isa = match fields[2] {
        "a" => Isa::A32,
        "t" => Isa::T32,
        other => return Err(err(format!("instruction set `{other}` is not `a` or `t`"))),
    };
    let (sizes, conds) = (fields[3], fields[4]);
    if sizes.len() != conds.chars().count() {
        return Err(err(format!(
            "{} sizes but {} conditions",
            sizes.len(),
            conds.chars().count()
        )));
    }
    if sizes.is_empty() {
        return Err(err("a block needs at least one instruction".into()));
    }
    let mut at = addr;
    for (s, c) in sizes.chars().zip(conds.chars()) {
        let size = match (s, isa) {
            ('4', _) => 4u8,
            ('2', Isa::T32) => 2,
            ('2', Isa::A32) => return Err(err("A32 instructions are 4 bytes".into())),
            _ => return Err(err(format!("size `{s}` is not 2 or 4"))),
        };
        let cond = Cond::from_char(c)
            .ok_or_else(|| err(format!("condition `{c}` is not `-`, `E` or `N`")))?;
        let align = if isa == Isa::A32 { 3 } else { 1 };
        if at & align != 0 {
            return Err(err(format!(
                "instruction address {at:#x} is misaligned for {}",
                isa.name()
            )));
        }
        items.push(FlowItem::Insn {
            addr: at,
            isa,
            size,
            cond,
        });
        at = at.wrapping_add(u32::from(size));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# trace-flow 1
# program: sample
# flavour: a32
B 8000 a 444 -E-
B 8010 t 242 -N-
X irq 18 8018
B 18 a 4 -
R 8018
B 8018 t 2 E
H
";

    #[test]
    fn parses_every_record() {
        let flow = Flow::parse(SAMPLE).expect("valid");
        assert_eq!(flow.header("program"), Some("sample"));
        assert_eq!(flow.instruction_count(), 8);
        assert_eq!(
            flow.items[1],
            FlowItem::Insn {
                addr: 0x8004,
                isa: Isa::A32,
                size: 4,
                cond: Cond::Passed
            }
        );
        assert_eq!(
            flow.items[4],
            FlowItem::Insn {
                addr: 0x8012,
                isa: Isa::T32,
                size: 4,
                cond: Cond::Failed
            }
        );
        assert_eq!(
            flow.items[6],
            FlowItem::Exception {
                kind: ExceptionKind::Irq,
                vector: 0x18,
                ret: 0x8018
            }
        );
        assert_eq!(flow.items[8], FlowItem::ExceptionReturn { ret: 0x8018 });
        assert_eq!(flow.items.last(), Some(&FlowItem::Halt));
    }

    #[test]
    fn writes_what_it_reads() {
        let flow = Flow::parse(SAMPLE).expect("valid");
        let again = Flow::parse(&flow.to_text()).expect("own output parses");
        assert_eq!(again, flow);
    }

    #[test]
    fn m_profile_kinds() {
        assert_eq!(ExceptionKind::from_name("m11"), Some(ExceptionKind::M(11)));
        assert_eq!(ExceptionKind::from_name("m0"), None);
        assert_eq!(ExceptionKind::from_name("m512"), None);
        assert_eq!(ExceptionKind::from_name("m"), None);
        assert_eq!(ExceptionKind::from_name("m+1"), None);
        assert_eq!(ExceptionKind::M(16).name(), "m16");
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("", 1),
            ("# trace-flow 2\n", 1),
            ("# trace-flow 1\nB 8000 a 4\n", 2),
            ("# trace-flow 1\nB 8000 a 4 -\nB 8004 a 2 -\n", 3),
            ("# trace-flow 1\nB 8002 a 4 -\n", 2),
            ("# trace-flow 1\nB 8001 t 2 -\n", 2),
            ("# trace-flow 1\nB 8000 t 22 -\n", 2),
            ("# trace-flow 1\nB 8000 t 3 -\n", 2),
            ("# trace-flow 1\nB 8000 t 2 X\n", 2),
            ("# trace-flow 1\nB 8000 x 2 -\n", 2),
            ("# trace-flow 1\nB 80g0 t 2 -\n", 2),
            ("# trace-flow 1\nB 100000000 t 2 -\n", 2),
            ("# trace-flow 1\nX nmi 0 0\n", 2),
            ("# trace-flow 1\nR\n", 2),
            ("# trace-flow 1\nH\nB 8000 t 2 -\n", 3),
            ("# trace-flow 1\nQ 1\n", 2),
            ("# trace-flow 1\nB  8000 t 2 -\n", 2),
            ("# trace-flow 1\nB 8000 t   \n", 2),
        ];
        for (text, line) in cases {
            let e = Flow::parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text:?}: {e}");
        }
    }

    #[test]
    fn never_panics_on_junk() {
        let junk = [
            "# trace-flow 1\n\u{0}\u{ff}",
            "# trace-flow 1\nB é t 2 -",
            "# trace-flow 1\nB 0 t 2 é",
        ];
        for j in junk {
            assert!(Flow::parse(j).is_err());
        }
    }
}
