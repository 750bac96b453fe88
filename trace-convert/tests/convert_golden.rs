//! Golden files of the Chrome and folded formats themselves (`insta`), on
//! small inputs: the corpus program `exceptions-a` encoded as PTM (with
//! its ELF: symbol names, calls, exception handlers) and the real
//! tc2-ptm-rstk-t32 capture (no ELF: address names, an inferred caller).
//! Value checks live in `convert_real.rs` and `convert_corpus.rs`.

mod convert_common;

use convert_common::{check_chrome, resolve, run};
use std::path::Path;
use trace_convert::convert::ConvertOptions;
use trace_convert::folded::Weight;
use trace_convert::input::flags::SourceFlags;
use trace_convert::input::source::Protocol;
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
    let out = run(
        &resolve(&bin, &flags),
        &[elf],
        Weight::Instructions,
        &ConvertOptions::default(),
    );
    std::fs::remove_dir_all(&tmp).ok();
    check_chrome(&out.chrome);
    insta::assert_snapshot!("exceptions_a_chrome", out.chrome);
    insta::assert_snapshot!("exceptions_a_folded", out.folded);
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
