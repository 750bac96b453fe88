//! Before its first I-sync an ETMv3 branch address packet gives only low
//! address bits: the packet listing says how many, as OpenCSD's listing
//! does (`Addr=0x??09F49C (21:0)`), here checked against OpenCSD v1.8.0's
//! listing of a Cortex-R5 capture.

#![allow(clippy::unwrap_used)]

use std::process::Command;

/// The partial addresses of OpenCSD's listing, in order: (known low bits
/// as printed, number of known bits).
fn opencsd_partials(listing: &str) -> Vec<(u32, u8)> {
    listing
        .lines()
        .filter(|l| l.contains("BRANCH_ADDRESS") && l.contains("Addr=0x??"))
        .map(|l| {
            let at = l.find("Addr=0x??").unwrap() + "Addr=0x??".len();
            let hex: String = l[at..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            let high = l[at..].split_once('(').unwrap().1;
            let top: u8 = high.split_once(':').unwrap().0.parse().unwrap();
            (u32::from_str_radix(&hex, 16).unwrap(), top + 1)
        })
        .collect()
}

#[test]
fn partial_branch_addresses_say_which_bits_are_known() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let dir = real.join("am243x-r5f");
    let xz = std::fs::read(dir.join("expected/b8b29a1-threadx.ppl.xz")).unwrap();
    let mut text = Vec::new();
    lzma_rs::xz_decompress(&mut &xz[..], &mut text).unwrap();
    let theirs = opencsd_partials(&String::from_utf8_lossy(&text));
    assert_eq!(theirs.len(), 17, "OpenCSD lists 17 partial addresses");

    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(["packets", "--format", "jsonl"])
        .arg(dir.join("b8b29a1-threadx"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let ours: Vec<(u32, u8)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "branch_address" && v.get("known_bits").is_some())
        .map(|v| {
            let known = v["known_bits"].as_u64().unwrap() as u8;
            let mask = (1u32 << known) - 1;
            (v["address"].as_u64().unwrap() as u32 & mask, known)
        })
        .collect();
    assert_eq!(ours, theirs);
}
