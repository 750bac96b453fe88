//! The converting command line: help, exit codes, outputs written only
//! when complete, LCOV through the DWARF line lookup against the
//! emulator's function and line counts.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tc-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("tmp");
    d
}

#[test]
fn help_explains_every_convert_flag() {
    let out = bin().arg("--help").output().expect("run");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--chrome",
        "--perfetto",
        "--lcov",
        "--folded",
        "--out-dir",
        "--save-events",
        "--from-events",
        "--folded-weight",
        "--clock",
        "--cpu-hz",
        "--timestamp-hz",
        "--elf",
        "--mem",
        "--max-depth",
        "--protocol",
        "packets",
        "decode",
        "convert",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
    assert!(help.contains("Example"), "flags come with examples");
}

#[test]
fn subcommands_still_work() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let out = bin()
        .args(["decode", "--format", "jsonl"])
        .arg(dir.join("tc2-ptm-rstk-t32"))
        .output()
        .expect("run");
    assert!(out.status.success());
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 53_199);
}

#[test]
fn exit_codes() {
    let d = tmp("codes");
    // Nothing to write: a usage error.
    let out = bin().arg(&d).output().expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A missing input.
    let out = bin()
        .arg(d.join("missing.bin"))
        .arg("--folded")
        .arg(d.join("f"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.bin"));
    // An output that cannot be created.
    let Some(data) = test_support::opencsd_dir() else {
        return;
    };
    let out = bin()
        .arg(data.join("tc2-ptm-rstk-t32"))
        .arg("--chrome")
        .arg("/nonexistent-dir-xyz/t.json")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(5));
    // --lcov without DWARF.
    let out = bin()
        .arg(data.join("tc2-ptm-rstk-t32"))
        .arg("--lcov")
        .arg(d.join("x.info"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(!d.join("x.info").exists());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn out_dir_writes_every_format_and_says_how_to_open_them() {
    let Some(data) = test_support::opencsd_dir() else {
        return;
    };
    let d = tmp("outdir");
    let out = bin()
        .arg(data.join("tc2-ptm-rstk-t32"))
        .arg("--out-dir")
        .arg(&d)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    for f in ["trace.json", "trace.pftrace", "stacks.folded"] {
        assert!(d.join(f).is_file(), "{f}");
        assert!(err.contains(f), "{f} listed");
    }
    assert!(err.contains("ui.perfetto.dev"));
    assert!(
        err.contains("no ELF file given"),
        "says symbols are missing"
    );
    assert!(err.contains("192073 instructions"), "summary: {err}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn no_arguments_convert_the_bundled_example() {
    let d = tmp("noargs");
    let out = bin().current_dir(&d).output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let present = std::fs::read_dir(&examples).is_ok_and(|rd| {
        rd.filter_map(Result::ok)
            .any(|e| e.path().join("snapshot.ini").is_file())
    });
    if present {
        assert!(out.status.success(), "{err}");
        for f in ["trace.json", "trace.pftrace", "stacks.folded"] {
            assert!(d.join("out").join(f).is_file(), "out/{f}");
        }
    } else {
        assert_eq!(out.status.code(), Some(3));
        assert!(err.contains("bundled example"), "{err}");
    }
    std::fs::remove_dir_all(&d).ok();
}

/// LCOV from a corpus program: function and line counts as the emulator
/// counted them.
#[test]
fn lcov_function_and_line_counts_match_the_emulator() {
    use trace_core::memory::{MemoryMap, Space};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/fixtures");
    let elf = dir.join("example-a.elf");
    if !elf.is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{} missing",
            elf.display()
        );
        return;
    }
    let flow = trace_encode::Flow::parse(
        &std::fs::read_to_string(dir.join("example-a.flow")).expect("flow"),
    )
    .expect("parse");
    let mut mem = MemoryMap::new();
    mem.add_elf(&elf, Space::Any).expect("elf");
    let trace = trace_encode::encode_etm(&flow.items, &mem, &trace_encode::EtmOptions::default())
        .expect("encode");
    let d = tmp("lcov");
    std::fs::write(d.join("t.bin"), &trace.bytes).expect("write");
    let out = bin()
        .arg(d.join("t.bin"))
        .args(["--protocol", "etm"])
        .arg(format!("--etmcr={:#x}", trace.regs.etmcr))
        .arg(format!("--etmccer={:#x}", trace.regs.etmccer))
        .arg(format!("--etmidr={:#x}", trace.regs.etmidr))
        .arg("--elf")
        .arg(&elf)
        .arg("--lcov")
        .arg(d.join("t.info"))
        // The truth counts the symbols' entries; inlined copies are
        // compared in convert_coverage_truth.rs.
        .arg("--no-inline")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info = std::fs::read_to_string(d.join("t.info")).expect("lcov");
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("example-a.cov.json")).expect("cov"),
    )
    .expect("json");
    // FNDA:<count>,<name> and DA:<line>,<count> per SF: block.
    let mut fnda = std::collections::HashMap::new();
    let mut da = std::collections::HashMap::new();
    let mut file = String::new();
    for line in info.lines() {
        if let Some(f) = line.strip_prefix("SF:") {
            file = f.to_owned();
        } else if let Some(x) = line.strip_prefix("FNDA:") {
            let (c, n) = x.split_once(',').expect("FNDA");
            fnda.insert(n.to_owned(), c.parse::<u64>().expect("count"));
        } else if let Some(x) = line.strip_prefix("DA:") {
            let mut p = x.split(',');
            let l: u32 = p.next().expect("line").parse().expect("line");
            let c: u64 = p.next().expect("count").parse().expect("count");
            da.insert((file.clone(), l), c);
        }
    }
    for f in truth["functions"].as_array().expect("functions") {
        let name = f["name"].as_str().expect("name");
        assert_eq!(
            fnda.get(name).copied(),
            f["count"].as_u64(),
            "calls of {name}"
        );
    }
    let mut lines = 0;
    for l in truth["lines"].as_array().expect("lines") {
        let file = l["file"].as_str().expect("file");
        let key = da
            .keys()
            .find(|(f, n)| f.ends_with(file) && *n == l["line"].as_u64().expect("n") as u32)
            .cloned();
        let got = key.and_then(|k| da.get(&k).copied());
        assert_eq!(got, l["count"].as_u64(), "{file}:{}", l["line"]);
        lines += 1;
    }
    assert!(lines > 20);
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn without_memory_convert_warns_as_decode_does() {
    let d = tmp("nomem");
    let cap = d.join("ptm.bin");
    // A-sync, I-sync to 0x8000 in ARM state: one place to start decoding.
    let mut bytes = vec![0u8; 5];
    bytes.extend([0x80, 0x08, 0x00, 0x80, 0x00, 0x00, 0x01]);
    std::fs::write(&cap, &bytes).expect("write");
    let code = d.join("code.bin");
    std::fs::write(&code, [0u8; 64]).expect("write");
    let cap = cap.display().to_string();
    let mem = format!("{}@0x8000", code.display());
    let folded = d.join("x.folded").display().to_string();
    let warning = "no memory image (give --elf or --mem)";
    let stderr = |args: &[&str]| {
        let out = bin().args(args).output().expect("run");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let plain = ["--protocol", "ptm", cap.as_str()];
    let decode = stderr(&[&["decode"], &plain[..]].concat());
    let convert = stderr(&[&["--no-progress", "--folded", &folded], &plain[..]].concat());
    assert!(decode.contains(warning), "{decode}");
    assert!(convert.contains(warning), "{convert}");
    let with_mem = stderr(
        &[
            &["--no-progress", "--folded", &folded, "--mem", &mem],
            &plain[..],
        ]
        .concat(),
    );
    assert!(!with_mem.contains(warning), "{with_mem}");
    std::fs::remove_dir_all(&d).ok();
}
