//! What the outputs and the summary call things: exceptions by their
//! core's profile, stack resets by what caused them (in the summary's own
//! words for those causes), and no window where none was asked for.

use std::process::Command;

fn run(args: &[&std::ffi::OsStr]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(args)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_example_s_interrupts_are_irqs() {
    // The example runs on a Cortex-A9 (its snapshot says so) whose only
    // interrupt is the timer's, an IRQ (corpus/src/example.c); the
    // emulator saw irq_handler entered 24 times (example-t.cov.json).
    let Some(fixtures) = test_support::corpus_fixtures() else {
        return;
    };
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("example-t.cov.json")).expect("truth"),
    )
    .expect("JSON");
    let irqs = truth["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .find(|f| f["name"] == "irq_handler")
        .and_then(|f| f["count"].as_u64())
        .expect("irq_handler");
    let example = test_support::repo_root().join("examples/snapshot");
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("trace.json");
    run(&[example.as_os_str(), "--chrome".as_ref(), json.as_os_str()]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("chrome")).expect("JSON");
    let instants: Vec<&str> = v["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "i")
        .filter_map(|e| e["name"].as_str())
        .filter(|n| !n.starts_with("trace on"))
        .collect();
    assert_eq!(instants.len() as u64, irqs, "{instants:?}");
    assert!(
        instants.iter().all(|n| n.starts_with("IRQ (returns to 0x")),
        "{instants:?}"
    );
}

#[test]
fn stack_resets_are_counted_by_cause() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let (_, stderr) = run(&[
        dir.join("TC2").as_os_str(),
        "--folded".as_ref(),
        "-".as_ref(),
    ]);
    // Per trace ID the summary counts gaps, trace-ons and addresses not
    // accessible; the stacks' resets are the sum of those that found a
    // stack open, named the same way.
    let (mut gaps, mut trace_ons, mut nacc) = (0u64, 0u64, 0u64);
    for l in stderr.lines().filter(|l| l.contains(" instructions in ")) {
        let num = |before: &str| -> u64 {
            l.split(", ")
                .find_map(|p| p.strip_suffix(before))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0)
        };
        gaps += num(" gaps");
        trace_ons += num(" trace-on");
        nacc += l
            .split(", ")
            .find_map(|p| {
                p.split(" memory not accessible")
                    .next()
                    .filter(|_| p.contains("memory not accessible"))
            })
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    let stacks = stderr
        .lines()
        .find(|l| l.contains("call stacks:"))
        .expect("stacks line");
    let after = stacks.split(" resets (at ").nth(1).expect(stacks);
    let parts: Vec<u64> = after
        .split(", ")
        .take(3)
        .map(|p| p.split(' ').next().and_then(|n| n.parse().ok()).expect(p))
        .collect();
    let total: u64 = stacks
        .split(", ")
        .find_map(|p| {
            p.split(" resets (at")
                .next()
                .filter(|_| p.contains(" resets (at"))
        })
        .and_then(|n| n.trim().parse().ok())
        .expect(stacks);
    assert_eq!(parts.iter().sum::<u64>(), total, "{stacks}");
    assert!(
        parts[0] <= trace_ons && parts[1] <= gaps && parts[2] <= nacc,
        "{stderr}"
    );
    // TC2 has no gaps: no reset is put down to one.
    assert_eq!(gaps, 0);
    assert_eq!(parts[1], 0, "{stacks}");
    assert!(total > 0 && stacks.contains("trace-ons"));
}

#[test]
fn a_raw_capture_s_trace_id_is_no_window() {
    // A PTM source alone in a raw capture (A-sync, I-sync to 0x1000, one E
    // atom) over `b .` at 0x1000: --trace-id names the ID its bytes are
    // reported under, and keeps everything.
    let dir = tempfile::tempdir().expect("dir");
    let capture = dir.path().join("one.bin");
    std::fs::write(
        &capture,
        [
            0u8, 0, 0, 0, 0, 0x80, 0x08, 0x00, 0x10, 0x00, 0x00, 0x01, 0x84,
        ],
    )
    .expect("write");
    let code = dir.path().join("code.bin");
    std::fs::write(&code, 0xEAFF_FFFEu32.to_le_bytes()).expect("write");
    let mem = format!("{}@0x1000", code.display());
    let (_, stderr) = run(&[
        capture.as_os_str(),
        "--protocol".as_ref(),
        "ptm".as_ref(),
        "--trace-id".as_ref(),
        "0x10".as_ref(),
        "--mem".as_ref(),
        mem.as_ref(),
        "--folded".as_ref(),
        "-".as_ref(),
    ]);
    assert!(stderr.contains("ID 0x10: "), "{stderr}");
    assert!(!stderr.contains("window:"), "{stderr}");
}

/// The decode listing names exceptions as the source's core numbers them:
/// an ETMv3 on a Cortex-M3 numbers SVCall 11 and external interrupt 0 as 8
/// (Cortex-M3 TRM, ETM exception encoding), where an A/R core's 8 would
/// be a reset.
#[test]
fn the_decode_listing_names_exceptions_by_the_core_s_profile() {
    use trace_core::memory::{MemoryMap, Space};
    use trace_encode::snapshot::{dumps_of, write_snapshot, BufferFormat, Core, SnapshotSpec};
    use trace_encode::{encode_etm, EtmOptions, Flow};
    let Some(fixtures) = test_support::corpus_fixtures() else {
        return;
    };
    let text = std::fs::read_to_string(fixtures.join("exceptions-m.flow")).expect("flow");
    let flow = Flow::parse(&text).expect("flow");
    // The emulator's record: ARMv7-M exception numbers (11 SVCall, 16 the
    // first external interrupt).
    let taken = |kind: &str| {
        text.lines()
            .filter(|l| l.split_whitespace().take(2).eq(["X", kind]))
            .count()
    };
    let (svc, irq0) = (taken("m11"), taken("m16"));
    assert!(svc > 0 && irq0 > 0, "the program takes both");
    let mut memory = MemoryMap::new();
    memory
        .add_elf(&fixtures.join("exceptions-m.elf"), Space::Any)
        .expect("ELF");
    let etm = encode_etm(&flow.items, &memory, &EtmOptions::default()).expect("encode");
    let dir = tempfile::tempdir().expect("dir");
    let snap = dir.path().join("snapshot");
    write_snapshot(
        &snap,
        &SnapshotSpec {
            cores: vec![Core {
                name: "cpu_0".into(),
                kind: "Cortex-M3".into(),
                pc: 0,
                dumps: dumps_of(&memory),
            }],
            sources: vec![trace_encode::snapshot::Source {
                name: "ETM_0".into(),
                protocol: etm.protocol,
                regs: etm.regs,
                id: 0x10,
                core: "cpu_0".into(),
            }],
            trace: etm.bytes.clone(),
            format: BufferFormat::SourceData,
            timestamp_hz: None,
        },
    )
    .expect("snapshot");
    let (listing, _) = run(&[
        "decode".as_ref(),
        "--format".as_ref(),
        "text".as_ref(),
        snap.as_os_str(),
    ]);
    let named = |name: &str| {
        listing
            .lines()
            .filter(|l| l.contains(" exception ") && l.contains(&format!("({name}) return")))
            .count()
    };
    // (Not the exception returns.)
    let exceptions = listing
        .lines()
        .filter(|l| l.contains(" exception ") && !l.contains(" exception return"))
        .count();
    assert_eq!(
        (named("SVC"), named("IRQ 0"), exceptions),
        (svc, irq0, svc + irq0),
        "{listing}"
    );
}
