//! Golden files of the formats themselves (`insta`), on small inputs: the
//! corpus program `exceptions-a` encoded as PTM (with its ELF: symbol
//! names, calls, exception handlers; Chrome, folded, LCOV and Perfetto,
//! the last as a listing of its protobuf fields) and the real
//! tc2-ptm-rstk-t32 capture (no ELF: address names, an inferred caller).
//! Value checks live in `convert_real.rs`, `convert_corpus.rs`,
//! `convert_coverage_truth.rs` and `convert_consumers.rs`.

use crate::convert_common;

use crate::convert_common::{check_chrome, resolve, run};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use trace_convert::convert::{self, ConvertOptions, Converter};
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::memory::{memory_for, ExtraMemory};
use trace_convert::input::source::Protocol;
use trace_convert::input::Input;
use trace_convert::progress::NoProgress;
use trace_convert::sinks::folded::Weight;
use trace_convert::sinks::lcov::coverage::LcovOptions;
use trace_convert::sinks::lcov::LcovSink;
use trace_convert::sinks::perfetto::PerfettoSink;
use trace_convert::sinks::SharedBuffer;
use trace_convert::symbols::Symbolizer;
use trace_encode::{encode_ptm, PtmOptions};

#[test]
fn exceptions_program_chrome_and_folded() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/fixtures");
    let elf = dir.join("exceptions-a.elf");
    if !elf.is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} missing",
            elf.display()
        );
        eprintln!("skipping: {} not found", elf.display());
        return;
    }
    let (elf, flow, mem) = convert_common::corpus_program(&dir, "exceptions-a");
    let trace = encode_ptm(&flow.items, &mem, &PtmOptions::default()).expect("encode");
    let tmp = std::env::temp_dir().join(format!("tc-golden-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let bin = tmp.join("exceptions-a.ptm");
    std::fs::write(&bin, &trace.bytes).expect("write");
    let flags = SourceFlags {
        protocol: Some(Protocol::Ptm),
        etmcr: Some(trace.regs.etmcr),
        etmccer: Some(trace.regs.etmccer),
        etmidr: Some(trace.regs.etmidr),
        ..SourceFlags::default()
    };
    let input = resolve(&bin, &flags);
    let out = run(
        &input,
        std::slice::from_ref(&elf),
        Weight::Instructions,
        &ConvertOptions::default(),
    );
    let (lcov, perfetto) = lcov_and_perfetto(&input, &elf);
    std::fs::remove_dir_all(&tmp).ok();
    check_chrome(&out.chrome);
    insta::assert_snapshot!("exceptions_a_chrome", out.chrome);
    insta::assert_snapshot!("exceptions_a_folded", out.folded);
    insta::assert_snapshot!("exceptions_a_lcov", lcov);
    insta::assert_snapshot!("exceptions_a_perfetto", protobuf_listing(&perfetto));
}

/// Convert `input` (with the symbols and code of `elf`) to LCOV and
/// Perfetto in one run.
fn lcov_and_perfetto(input: &Input, elf: &Path) -> (String, Vec<u8>) {
    let symbols = Symbolizer::from_elves(&[elf.to_path_buf()]).expect("symbols");
    let extra = ExtraMemory {
        elves: vec![elf.to_path_buf()],
        raw: Vec::new(),
    };
    let memory = memory_for(None, "", &extra).expect("memory");
    let options = ConvertOptions::default();
    let lcov = SharedBuffer::new();
    let perfetto = SharedBuffer::new();
    let mut conv = Converter::new(&symbols, options.clock_for(input), options.max_depth);
    conv.add_sink(Box::new(PerfettoSink::new(perfetto.clone())));
    conv.add_sink(Box::new(LcovSink::new(
        lcov.clone(),
        Arc::new(memory),
        &symbols,
        LcovOptions::default(),
    )));
    convert::convert_input(input, &extra, conv, &mut NoProgress).expect("conversion");
    (
        String::from_utf8(lcov.bytes()).expect("UTF-8"),
        perfetto.bytes(),
    )
}

/// The fields of a Perfetto trace, one per line, indented by nesting:
/// `number: value` for integers, `number: "text"` for strings, and
/// `number {` ... `}` for the messages the writer nests (packet, track
/// event, interned data and its names, track descriptor and its process,
/// thread and counter descriptors).
fn protobuf_listing(bytes: &[u8]) -> String {
    let mut out = String::new();
    list_message(bytes, &[], &mut out);
    out
}

/// Field paths (from the `Trace`) whose bytes are messages.
const NESTED: &[&[u64]] = &[
    &[1],
    &[1, 11],
    &[1, 12],
    &[1, 12, 2],
    &[1, 60],
    &[1, 60, 3],
    &[1, 60, 4],
    &[1, 60, 8],
];

fn list_message(mut b: &[u8], path: &[u64], out: &mut String) {
    let indent = "  ".repeat(path.len());
    while !b.is_empty() {
        let key = varint(&mut b);
        let field = key >> 3;
        match key & 7 {
            0 => {
                let v = varint(&mut b);
                writeln!(out, "{indent}{field}: {v}").expect("write");
            }
            1 => {
                let (v, rest) = b.split_at(8);
                b = rest;
                let v = f64::from_le_bytes(v.try_into().expect("8 bytes"));
                writeln!(out, "{indent}{field}: {v}").expect("write");
            }
            2 => {
                let len = usize::try_from(varint(&mut b)).expect("length");
                let (v, rest) = b.split_at(len);
                b = rest;
                let mut inner: Vec<u64> = path.to_vec();
                inner.push(field);
                if NESTED.contains(&inner.as_slice()) {
                    writeln!(out, "{indent}{field} {{").expect("write");
                    list_message(v, &inner, out);
                    writeln!(out, "{indent}}}").expect("write");
                } else {
                    let text = std::str::from_utf8(v).expect("a string field");
                    writeln!(out, "{indent}{field}: {text:?}").expect("write");
                }
            }
            wire => panic!("wire type {wire} in field {field}"),
        }
    }
}

fn varint(b: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first().expect("a varint");
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
    }
    panic!("varint too long");
}

#[test]
fn rstk_folded() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let input = resolve(&dir.join("tc2-ptm-rstk-t32"), &SourceFlags::default());
    let out = run(
        &input,
        &[],
        Weight::Instructions,
        &ConvertOptions::default(),
    );
    insta::assert_snapshot!("rstk_folded", out.folded);
    // The first hundred lines of the Chrome trace (the whole is 1.6 MB).
    let head: Vec<&str> = out.chrome.lines().take(100).collect();
    insta::assert_snapshot!("rstk_chrome_head", head.join("\n"));
}
