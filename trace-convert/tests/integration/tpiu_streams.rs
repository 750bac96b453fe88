//! `--layout tpiu` on a real SWO capture without full-frame syncs: the
//! STM32F407 bubble-sort run (`../shared/testdata/real/stm32f407-swo`).

#![allow(clippy::unwrap_used)]

use std::process::Command;

/// The executed instruction addresses `decode --instructions` lists for the
/// capture, with the registers the firmware set (ETMCR 0x980, the ETM on
/// trace ID 0x0A), the STM32F4's ETMIDR and ETMCCER, and the ELF that ran,
/// match sigrok's `arm_etmv3` listing of the same capture (the author's
/// `sigrok-pc.txt`, an independent decoder fed the frames from 4 bytes in)
/// instruction for instruction, with no byte cut by hand.
#[test]
fn bubble_sort_decodes_to_sigroks_instructions() {
    bubble_sort_with(&[
        "--protocol",
        "etm",
        "--etmcr",
        "0x980",
        "--etmidr",
        "0x4114F250",
        "--etmccer",
        "0x18541800",
    ]);
}

/// The same with `--core cortex-m4` in place of the protocol, ETMIDR and
/// ETMCCER: the preset's registers are the STM32F4's.
#[test]
fn bubble_sort_decodes_with_the_core_preset() {
    bubble_sort_with(&["--core", "cortex-m4", "--etmcr", "0x980"]);
}

/// `decode --instructions` of the capture with `registers` (and the
/// layout, the ELF) lists sigrok's instructions.
fn bubble_sort_with(registers: &[&str]) {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let dir = real.join("stm32f407-swo/bubble-sort");
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(["decode", "--instructions", "--format", "jsonl"])
        .args(["--layout", "tpiu"])
        .args(registers)
        .arg("--elf")
        .arg(dir.join("target.elf"))
        .arg(dir.join("swo.bin"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "instruction")
        .map(|v| v["address"].as_u64().unwrap())
        .collect();
    let reference: Vec<u64> = std::fs::read_to_string(dir.join("sigrok-pc.txt"))
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l.trim_start_matches("PC 0x"), 16).unwrap())
        .collect();
    assert_eq!(reference.len(), 12_205);
    // The longest run of the reference that our listing holds in order.
    let same = reference
        .iter()
        .zip(&ours)
        .take_while(|(a, b)| a == b)
        .count();
    eprintln!(
        "{same} of {} reference instructions, in order",
        reference.len()
    );
    assert!(same * 100 >= reference.len() * 99, "{same}");
    assert_eq!(ours, reference);
}
