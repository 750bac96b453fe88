//! LLVM's sample profile, text form: the model ([`Profile`]), how it is
//! made from per-instruction counts and calls ([`Profile::build`]), and
//! how it is written ([`Profile::write`]).
//!
//! ```text
//! main:1800:1              function:total samples:head samples
//!  0: 1                     line offset: samples
//!  2.1: 120 crc32:8         offset.discriminator: samples callee:calls
//!  4: emit:60               an inlined call: offset: callee:total samples
//!   1: 20                   the inlined copy's lines, one level deeper
//! ```
//!
//! Line offsets count from the line the function (for inlined code, the
//! inlined function) is declared on. A line's samples are the times it
//! ran: the count of its most executed instruction in that copy of the
//! code; two copies (the same function inlined twice at one call line, or
//! two out-of-line copies of one function) add up.

use super::dwarf::ProfileDwarf;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

/// A line offset and discriminator in a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Loc {
    /// Lines after the function's declaration line.
    pub offset: u32,
    /// The line table's discriminator (0: none).
    pub discriminator: u32,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.discriminator == 0 {
            write!(f, "{}", self.offset)
        } else {
            write!(f, "{}.{}", self.offset, self.discriminator)
        }
    }
}

/// The samples of one function, or of one inlined copy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionProfile {
    /// Times the function was entered (0 for inlined copies, which the
    /// format gives none).
    pub head: u64,
    /// Samples per line.
    pub body: BTreeMap<Loc, u64>,
    /// Calls made from each line, per callee.
    pub calls: BTreeMap<Loc, BTreeMap<String, u64>>,
    /// Inlined calls: per call line and callee, the inlined code's
    /// samples.
    pub inlined: BTreeMap<(Loc, String), FunctionProfile>,
}

impl FunctionProfile {
    /// Its total samples: its lines' and those of the code inlined into
    /// it.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.body.values().sum::<u64>()
            + self
                .inlined
                .values()
                .map(FunctionProfile::total)
                .sum::<u64>()
    }

    fn write(&self, out: &mut dyn Write, depth: usize) -> io::Result<()> {
        let pad = " ".repeat(depth);
        for (loc, n) in &self.body {
            write!(out, "{pad}{loc}: {n}")?;
            if let Some(calls) = self.calls.get(loc) {
                let mut calls: Vec<(&String, &u64)> = calls.iter().collect();
                calls.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
                for (callee, n) in calls {
                    write!(out, " {callee}:{n}")?;
                }
            }
            writeln!(out)?;
        }
        for ((loc, callee), p) in &self.inlined {
            writeln!(out, "{pad}{loc}: {callee}:{}", p.total())?;
            p.write(out, depth + 1)?;
        }
        Ok(())
    }
}

/// What [`Profile::build`] left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Instructions executed in code no DWARF function covers (assembly,
    /// libraries without debug information).
    pub no_function: u64,
    /// Instructions executed with no line, or a line above the function's
    /// declaration.
    pub no_line: u64,
}

/// A sample profile: every function with samples, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// The functions.
    pub functions: BTreeMap<String, FunctionProfile>,
    /// What was left out.
    pub left_out: LeftOut,
}

/// One copy of code: the scopes from the function to the innermost
/// inlined copy, and the line in that copy.
type Instance = (Vec<usize>, Loc);

impl Profile {
    /// The profile of instructions executed `counts` times each
    /// (`(address, times)`) and of the calls made (`(address of the call,
    /// its target) → times`), described by `dwarf`.
    #[must_use]
    pub fn build(
        dwarf: &ProfileDwarf,
        counts: &[(u32, u64)],
        calls: &HashMap<(u32, u32), u64>,
    ) -> Profile {
        let mut out = Profile::default();
        // Per copy of a line: its most executed instruction.
        let mut lines: HashMap<Instance, u64> = HashMap::new();
        for &(addr, n) in counts {
            if n == 0 {
                continue;
            }
            match instance(dwarf, addr) {
                Ok(key) => {
                    let e = lines.entry(key).or_insert(0);
                    *e = (*e).max(n);
                }
                Err(Missing::Function) => out.left_out.no_function += n,
                Err(Missing::Line) => out.left_out.no_line += n,
            }
        }
        let mut lines: Vec<(Instance, u64)> = lines.into_iter().collect();
        lines.sort_unstable();
        for ((chain, loc), n) in lines {
            if let Some(p) = out.node(dwarf, &chain) {
                *p.body.entry(loc).or_insert(0) += n;
            }
        }
        let mut calls: Vec<(&(u32, u32), &u64)> = calls.iter().collect();
        calls.sort_unstable();
        for (&(from, to), &n) in calls {
            let Ok((chain, loc)) = instance(dwarf, from) else {
                continue;
            };
            let callee = dwarf
                .function_at(to)
                .or_else(|| dwarf.scopes(to).first().and_then(|&s| dwarf.scope(s)))
                .map(|s| s.name.clone());
            let Some(callee) = callee else { continue };
            if let Some(p) = out.node(dwarf, &chain) {
                *p.calls.entry(loc).or_default().entry(callee).or_insert(0) += n;
            }
        }
        // Head samples: times each function's first instruction ran.
        for &(addr, n) in counts {
            if let Some(f) = dwarf.function_at(addr) {
                if let Some(p) = out.functions.get_mut(&f.name) {
                    p.head += n;
                }
            }
        }
        out
    }

    /// The profile node of a chain of scopes (function, inlined copies).
    fn node(&mut self, dwarf: &ProfileDwarf, chain: &[usize]) -> Option<&mut FunctionProfile> {
        let (first, rest) = chain.split_first()?;
        let mut outer = dwarf.scope(*first)?;
        let mut p = self.functions.entry(outer.name.clone()).or_default();
        for &s in rest {
            let inner = dwarf.scope(s)?;
            let loc = Loc {
                offset: inner.call_line.checked_sub(outer.decl_line)?,
                discriminator: inner.call_discriminator,
            };
            p = p.inlined.entry((loc, inner.name.clone())).or_default();
            outer = inner;
        }
        Some(p)
    }

    /// Write the text form: functions by total samples, most first.
    ///
    /// # Errors
    ///
    /// The output's error.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut functions: Vec<(&String, &FunctionProfile, u64)> = self
            .functions
            .iter()
            .map(|(n, p)| (n, p, p.total()))
            .filter(|(_, _, t)| *t > 0)
            .collect();
        functions.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
        for (name, p, total) in functions {
            writeln!(out, "{name}:{total}:{}", p.head)?;
            p.write(out, 1)?;
        }
        Ok(())
    }
}

enum Missing {
    Function,
    Line,
}

/// The copy of code and line the instruction at `addr` belongs to.
fn instance(dwarf: &ProfileDwarf, addr: u32) -> Result<Instance, Missing> {
    let chain = dwarf.scopes(addr);
    let inner = chain
        .last()
        .and_then(|&s| dwarf.scope(s))
        .ok_or(Missing::Function)?;
    let (line, discriminator) = dwarf.line(addr).ok_or(Missing::Line)?;
    let offset = line.checked_sub(inner.decl_line).ok_or(Missing::Line)?;
    // Inlined calls above their function's declaration cannot be placed.
    for w in chain.windows(2) {
        let (Some(outer), Some(inner)) = (dwarf.scope(w[0]), dwarf.scope(w[1])) else {
            return Err(Missing::Function);
        };
        if inner.call_line < outer.decl_line {
            return Err(Missing::Line);
        }
    }
    Ok((
        chain,
        Loc {
            offset,
            discriminator,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(offset: u32, discriminator: u32) -> Loc {
        Loc {
            offset,
            discriminator,
        }
    }

    /// The layout of LLVM's text sample profile: `name:total:head`, body
    /// lines one space in, `offset.discriminator` when the discriminator
    /// is not 0, call targets most first, inlined calls with their total
    /// and their lines one level deeper; totals include inlined code.
    #[test]
    fn written_as_llvm_reads_it() {
        let mut inner = FunctionProfile::default();
        inner.body.insert(loc(1, 0), 30);
        inner.body.insert(loc(2, 0), 10);
        let mut main = FunctionProfile {
            head: 1,
            ..FunctionProfile::default()
        };
        main.body.insert(loc(0, 0), 1);
        main.body.insert(loc(3, 2), 50);
        let calls = main.calls.entry(loc(3, 2)).or_default();
        calls.insert("bar".to_owned(), 5);
        calls.insert("foo".to_owned(), 45);
        main.inlined.insert((loc(4, 0), "helper".to_owned()), inner);
        let mut small = FunctionProfile {
            head: 7,
            ..FunctionProfile::default()
        };
        small.body.insert(loc(1, 0), 7);
        let profile = Profile {
            functions: [("main".to_owned(), main), ("small".to_owned(), small)]
                .into_iter()
                .collect(),
            left_out: LeftOut::default(),
        };
        let mut out = Vec::new();
        profile.write(&mut out).expect("write");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "main:91:1\n 0: 1\n 3.2: 50 foo:45 bar:5\n 4: helper:40\n  1: 30\n  2: 10\nsmall:7:7\n 1: 7\n"
        );
    }
}
