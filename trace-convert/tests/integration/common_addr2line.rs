//! GNU `arm-none-eabi-addr2line -a -f -i` as an independent reader of the
//! inlined functions at each address (binutils' own DWARF reader).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The tool's name.
pub const TOOL: &str = "arm-none-eabi-addr2line";

/// Whether the tool runs; when it does not, print why the test is
/// skipped, and fail under CI (env `CI` set).
pub fn available(test: &str) -> bool {
    test_support::tool(
        TOOL,
        &["--version"],
        &format!("{test}: {TOOL} (apt-get install binutils-arm-none-eabi)"),
    )
}

/// What the tool prints for `addrs` (one per line on its input) with the
/// options `opts`.
fn answers(elf: &Path, opts: &[&str], addrs: &[u32]) -> String {
    let mut child = Command::new(TOOL)
        .args(opts)
        .arg("-e")
        .arg(elf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("addr2line runs");
    let mut input = String::new();
    for a in addrs {
        input.push_str(&format!("{a:#x}\n"));
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().expect("addr2line output");
    writer.join().expect("writer").expect("write addresses");
    assert!(out.status.success(), "addr2line failed");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Per address: the inlined functions running there, outermost first,
/// without the function they are inlined into (empty where no inlined
/// code runs).
pub fn inline_chains(elf: &Path, addrs: &[u32]) -> BTreeMap<u32, Vec<String>> {
    let text = answers(elf, &["-a", "-f", "-i"], addrs);
    // Each address: a line `0x%08x`, then (function, file:line) pairs,
    // innermost first.
    let mut blocks: Vec<(u32, Vec<String>)> = Vec::new();
    let mut next = 0;
    for line in text.lines() {
        if next < addrs.len() && line == format!("{:#010x}", addrs[next]) {
            blocks.push((addrs[next], Vec::new()));
            next += 1;
        } else if let Some((_, lines)) = blocks.last_mut() {
            lines.push(line.to_owned());
        }
    }
    assert_eq!(blocks.len(), addrs.len(), "one answer per address");
    blocks
        .into_iter()
        .map(|(a, lines)| {
            let functions: Vec<String> = lines.iter().step_by(2).cloned().collect();
            let mut chain: Vec<String> = functions
                .iter()
                .take(functions.len().saturating_sub(1))
                .cloned()
                .collect();
            chain.reverse();
            (a, chain)
        })
        .collect()
}

/// Per address: its source location, `file:line` (the innermost inlined
/// one), as `addr2line -a` prints it; addresses it cannot place are left
/// out.
pub fn locations(elf: &Path, addrs: &[u32]) -> BTreeMap<u32, String> {
    let text = answers(elf, &["-a"], addrs);
    let mut m = BTreeMap::new();
    let mut lines = text.lines();
    while let (Some(a), Some(loc)) = (lines.next(), lines.next()) {
        let Some(a) = a
            .strip_prefix("0x")
            .and_then(|h| u32::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        if !loc.starts_with("??") && !loc.ends_with(":?") && !loc.ends_with(":0") {
            // "file:line (discriminator N)" → "file:line".
            let loc = loc.split(" (").next().unwrap_or(loc);
            m.insert(a, loc.to_owned());
        }
    }
    m
}
