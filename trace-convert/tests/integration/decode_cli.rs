//! The `decode` subcommand end to end on the real captures.

#![allow(clippy::unwrap_used)]

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_trace-convert"))
}

#[test]
fn jsonl_ranges_of_the_return_stack_capture() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let out = bin()
        .args(["decode", "--format", "jsonl"])
        .arg(dir.join("tc2-ptm-rstk-t32"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut ranges = 0u64;
    let mut insns = 0u64;
    let mut exceptions = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["offset"].is_u64() && v["id"] == 2, "{line}");
        match v["kind"].as_str().unwrap() {
            "range" => {
                ranges += 1;
                insns += v["count"].as_u64().unwrap();
                assert!(v["end"].as_u64() > v["start"].as_u64());
                assert!(v["executed"].is_boolean() && v["last"].is_string());
            }
            "exception" => exceptions.push((v["number"].clone(), v["return"].clone())),
            _ => {}
        }
    }
    assert_eq!((ranges, insns), (53_192, 192_073));
    assert_eq!(
        exceptions,
        [
            (serde_json::json!(1), serde_json::json!(0x8000_1ba0u32)),
            (serde_json::json!(1), serde_json::json!(0x8000_0594u32)),
        ]
    );
    let first = text.lines().nth(3).unwrap();
    assert_eq!(
        first,
        r#"{"offset":12,"id":2,"kind":"range","start":2147485012,"end":2147485016,"count":1,"isa":"a32","executed":true,"last":"branch","link":true,"ret":false,"cond":false}"#
    );
}

#[test]
fn instructions_listing_has_disassembly() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let out = bin()
        .args(["decode", "--instructions"])
        .arg(dir.join("tc2-ptm-rstk-t32"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        // The opcode as objdump and DS-5 show it (the A32 word, not the bytes).
        text.contains("80000554  eb000591   bl #0x80001ba0"),
        "{}",
        text.get(..500).unwrap_or(&text)
    );
    assert!(text.lines().any(|l| l.contains("  bx lr")));
}

#[test]
fn capture_without_memory_reports_nacc() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let out = bin()
        .args([
            "decode",
            "--format",
            "jsonl",
            "--protocol",
            "ptm",
            "--return-stack",
        ])
        .arg(dir.join("tc2-ptm-rstk-t32/PTM_0_2.bin"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l.contains(r#""kind":"addr_nacc""#)));
    assert!(!text.lines().any(|l| l.contains(r#""kind":"range""#)));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no memory image"));
}

#[test]
fn malformed_mem_argument_is_an_error() {
    let out = bin()
        .args(["decode", "--mem", "code.bin", "whatever"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("FILE@ADDRESS"));
}
