//! ITM/DWT through the command line: the corpus's ARMv7-M programs'
//! ITM streams (made by trace-encode from the emulator's flows) as an
//! unformatted SWO stream (`--protocol itm`) and beside an ETMv3 source
//! in a SWO-like formatted stream (`--itm-trace-id`) give the exception
//! slices and PC-sample stacks the flows hold; the real STM32 SWO
//! stream's ITM agrees with sigrok's `arm_itm`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use trace_encode::swo::{swo_stream, Source, SwoOptions};
use trace_encode::{
    encode_etm, encode_itm, EtmOptions, ExceptionKind, Flow, FlowItem, ItmOptions, SyncPeriod,
    TraceOptions,
};

const PC_SAMPLE_EVERY: u64 = 37;

/// ARMv7-M exception names by number (ARM DDI 0403, B1.5.2).
fn m_exception(n: u16) -> String {
    match n {
        1 => "Reset".into(),
        2 => "NMI".into(),
        3 => "HardFault".into(),
        4 => "MemManage".into(),
        5 => "BusFault".into(),
        6 => "UsageFault".into(),
        11 => "SVCall".into(),
        12 => "DebugMonitor".into(),
        14 => "PendSV".into(),
        15 => "SysTick".into(),
        n if n >= 16 => format!("IRQ {}", n - 16),
        n => format!("exception {n}"),
    }
}

/// What the flow says the timeline and the stacks must show: the
/// exception slices, `B` at each entry (`X` record) and `E` of the
/// innermost at each return (`R` record), and the address of every
/// `PC_SAMPLE_EVERY`-th instruction, counted.
fn truth(flow: &Flow) -> (Vec<(String, String)>, BTreeMap<String, u64>) {
    let (mut slices, mut samples) = (Vec::new(), BTreeMap::new());
    let mut active = Vec::new();
    let mut n = 0u64;
    for item in &flow.items {
        match *item {
            FlowItem::Insn { addr, .. } => {
                n += 1;
                if n % PC_SAMPLE_EVERY == 0 {
                    *samples.entry(format!("{addr:#010x}")).or_insert(0) += 1;
                }
            }
            FlowItem::Exception {
                kind: ExceptionKind::M(number),
                ..
            } => {
                active.push(number);
                slices.push(("B".to_owned(), m_exception(number)));
            }
            FlowItem::ExceptionReturn { .. } => {
                let left = active.pop().expect("an active exception");
                slices.push(("E".to_owned(), m_exception(left)));
            }
            _ => {}
        }
    }
    (slices, samples)
}

/// The corpus's ARMv7-M programs: name, flow, ELF path.
fn corpus() -> Vec<(String, Flow, std::path::PathBuf)> {
    let Some(dir) = test_support::corpus_fixtures() else {
        return Vec::new();
    };
    test_support::corpus_programs(&dir, "-m.flow")
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(format!("{name}-m.flow"))).unwrap();
            let flow = Flow::parse(&text).unwrap();
            let elf = dir.join(format!("{name}-m.elf"));
            (name, flow, elf)
        })
        .collect()
}

fn run(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The exception slices (`B`/`E`, name) of thread `tid` in a Chrome
/// trace, in order.
fn chrome_slices(path: &Path, tid: u64) -> Vec<(String, String)> {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "exception" && e["tid"].as_u64() == Some(tid))
        .map(|e| {
            (
                e["ph"].as_str().unwrap().to_owned(),
                e["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The folded lines: stack, weight.
fn folded(path: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let (stack, w) = l.rsplit_once(' ').unwrap();
            (stack.to_owned(), w.parse().unwrap())
        })
        .collect()
}

fn itm_options(sync: bool) -> ItmOptions {
    ItmOptions {
        pc_sample_every: PC_SAMPLE_EVERY,
        exception_trace: true,
        sync,
    }
}

/// An unformatted SWO stream of ITM alone, `--protocol itm`: the
/// exception slices and the PC samples per address (no ELF: named by
/// address) are the flow's.
#[test]
fn swo_itm_streams_give_the_flows_exceptions_and_samples() {
    let dir = tempfile::tempdir().unwrap();
    let mut slices_seen = 0;
    for (name, flow, _) in corpus() {
        let itm = encode_itm(&flow.items, &itm_options(false)).unwrap();
        let input = dir.path().join(format!("{name}.swo"));
        std::fs::write(&input, &itm.bytes).unwrap();
        let (chrome, stacks) = (dir.path().join("t.json"), dir.path().join("f.folded"));
        run(&[
            "--protocol".as_ref(),
            "itm".as_ref(),
            input.as_os_str(),
            "--chrome".as_ref(),
            chrome.as_os_str(),
            "--folded".as_ref(),
            stacks.as_os_str(),
        ]);
        let (want_slices, want_samples) = truth(&flow);
        assert_eq!(chrome_slices(&chrome, 0), want_slices, "{name}");
        assert_eq!(folded(&stacks), want_samples, "{name}");
        slices_seen += want_slices.len();
    }
    eprintln!("{slices_seen} exception slice lines");
    assert!(slices_seen > 100, "{slices_seen}");
}

/// The ETMv3 (trace ID 0x0A) and ITM (ID 1) sources of each program in
/// a SWO-like formatted stream (no syncs, cut start), `--layout tpiu
/// --itm-trace-id 1 --core cortex-m4`: the ITM thread's exception slices
/// are the flow's, and its PC samples, named by the ELF's functions,
/// weigh as many as the flow's samples.
#[test]
fn formatted_streams_with_an_etm_give_the_itms_exceptions_and_samples() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (name, flow, elf) in corpus() {
        let mut mem = trace_core::memory::MemoryMap::new();
        mem.add_elf(&elf, trace_core::memory::Space::Any).unwrap();
        let eopts = EtmOptions {
            trace: TraceOptions {
                sync: Some(SyncPeriod::Instructions(500)),
                ..TraceOptions::default()
            },
            ..EtmOptions::default()
        };
        let etm = encode_etm(&flow.items, &mem, &eopts).unwrap();
        let itm = encode_itm(&flow.items, &itm_options(true)).unwrap();
        let stream = swo_stream(
            &[
                Source {
                    id: 0x0A,
                    bytes: &etm.bytes,
                    breaks: &[],
                },
                Source {
                    id: 1,
                    bytes: &itm.bytes,
                    breaks: &itm.packets,
                },
            ],
            &SwoOptions {
                start: 0,
                ..SwoOptions::default()
            },
        )
        .unwrap();
        let input = dir.path().join(format!("{name}.tpiu"));
        std::fs::write(&input, &stream.bytes).unwrap();
        let (chrome, stacks) = (dir.path().join("t.json"), dir.path().join("f.folded"));
        let out = run(&[
            "--core".as_ref(),
            "cortex-m4".as_ref(),
            "--layout".as_ref(),
            "tpiu".as_ref(),
            "--itm-trace-id".as_ref(),
            "1".as_ref(),
            "--elf".as_ref(),
            elf.as_os_str(),
            input.as_os_str(),
            "--chrome".as_ref(),
            chrome.as_os_str(),
            "--folded".as_ref(),
            stacks.as_os_str(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "--core cortex-m4: ETMv3 with ETMIDR 0x4114f250 and ETMCCER 0x18541800, \
                 exceptions numbered as on ARMv7-M"
            ),
            "{stderr}"
        );
        let (want_slices, want_samples) = truth(&flow);
        assert_eq!(chrome_slices(&chrome, 1), want_slices, "{name}");
        let itm_weight: u64 = folded(&stacks)
            .iter()
            .filter(|(s, _)| s.starts_with("Cortex-M4 (trace ID 0x01"))
            .map(|(_, w)| w)
            .sum();
        assert_eq!(itm_weight, want_samples.values().sum::<u64>(), "{name}");
        assert!(itm_weight > 0, "{name}");
        checked += 1;
    }
    eprintln!("{checked} programs");
}

/// The STM32 capture's unformatted ITM stream: the packets listed, the
/// PC-sample stacks (by address), the exception slices and the
/// stimulus-port text agree with sigrok's `arm_itm`.
#[test]
fn stm32_itm_stream_agrees_with_sigrok() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    if !test_support::sigrok::present() {
        return;
    }
    let input = real.join("stm32-itm-etm-swo/itm_only.bin");
    let theirs = test_support::sigrok::itm_annotations(&[&std::fs::read(&input).unwrap()], false);
    let theirs: Vec<&str> = theirs
        .lines()
        .map(|l| l.strip_prefix("arm_itm-1: ").unwrap())
        .collect();
    let count = |prefix: &str| theirs.iter().filter(|l| l.starts_with(prefix)).count();

    // The listing.
    let out = run(&[
        "packets".as_ref(),
        "--protocol".as_ref(),
        "itm".as_ref(),
        "--format".as_ref(),
        "jsonl".as_ref(),
        input.as_os_str(),
    ]);
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ours = |kind: &str, f: &dyn Fn(&serde_json::Value) -> bool| {
        lines.iter().filter(|v| v["kind"] == kind && f(v)).count()
    };
    let pcs = ours("pc_sample", &|v| v["address"].is_u64());
    assert_eq!(pcs, count("PC: "));
    assert!(pcs > 5000, "{pcs}");
    for (action, verb) in [
        ("enter", "Enter: "),
        ("exit", "Exit: "),
        ("return", "Resume: "),
    ] {
        assert_eq!(
            ours("exception_trace", &|v| v["action"] == action),
            count(verb),
            "{action}"
        );
    }
    assert_eq!(ours("overflow", &|_| true), count("Overflow"));
    assert_eq!(ours("data_trace", &|_| true), count("Watchpoint "));

    // The outputs.
    let dir = tempfile::tempdir().unwrap();
    let (chrome, stacks, text) = (
        dir.path().join("t.json"),
        dir.path().join("f.folded"),
        dir.path().join("console.txt"),
    );
    run(&[
        "--protocol".as_ref(),
        "itm".as_ref(),
        input.as_os_str(),
        "--chrome".as_ref(),
        chrome.as_os_str(),
        "--folded".as_ref(),
        stacks.as_os_str(),
        "--itm-text".as_ref(),
        text.as_os_str(),
    ]);
    let mut their_pcs: BTreeMap<String, u64> = BTreeMap::new();
    for l in &theirs {
        if let Some(pc) = l.strip_prefix("PC: ") {
            *their_pcs.entry(pc.to_owned()).or_insert(0) += 1;
        }
    }
    assert_eq!(folded(&stacks), their_pcs);
    let entered: Vec<String> = theirs
        .iter()
        .filter_map(|l| l.strip_prefix("Enter: "))
        .map(|n| n.replace("Debug Monitor", "DebugMonitor"))
        .collect();
    let begun: Vec<String> = chrome_slices(&chrome, 0)
        .into_iter()
        .filter(|(ph, _)| ph == "B")
        .map(|(_, n)| n)
        .collect();
    assert_eq!(begun, entered);
    assert!(!entered.is_empty());
    eprintln!(
        "{pcs} PC samples, {} exceptions entered, {} annotations",
        entered.len(),
        theirs.len()
    );
    // Per port, the text sigrok shows (it may hold the last back) starts
    // ours.
    let mut their_text: BTreeMap<u32, String> = BTreeMap::new();
    for l in &theirs {
        if let Some((port, rest)) = l.split_once(": ") {
            if let (Ok(port), Some(t)) = (
                port.parse::<u32>(),
                rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')),
            ) {
                their_text.entry(port).or_default().push_str(t);
            }
        }
    }
    let console = std::fs::read_to_string(&text).unwrap();
    let mut our_text: BTreeMap<u32, String> = BTreeMap::new();
    for l in console.lines() {
        let (port, t) = l
            .strip_prefix("[port ")
            .and_then(|r| r.split_once("] "))
            .unwrap();
        our_text
            .entry(port.parse().unwrap())
            .or_default()
            .push_str(t);
    }
    assert_eq!(
        our_text.keys().collect::<Vec<_>>(),
        their_text.keys().collect::<Vec<_>>()
    );
    for (port, t) in &our_text {
        let seen = &their_text[port];
        assert!(t.starts_with(seen.as_str()), "port {port}");
        assert!(t.len() - seen.len() <= 16, "port {port}");
    }
}

/// The STM32 ITM stream's timeline in Perfetto's official schema
/// (`tests/perfetto_check.py`): one value on each comparator's counter
/// track per data value sigrok shows for that comparator, as many
/// exception slices and instants as in the Chrome trace; and its saved
/// events converted again give the same Chrome trace.
#[test]
fn stm32_itm_timeline_reads_in_perfetto_and_saves() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let input = real.join("stm32-itm-etm-swo/itm_only.bin");
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (chrome, pftrace, events, again) =
        (p("t.json"), p("t.pftrace"), p("t.events"), p("again.json"));
    run(&[
        "--protocol".as_ref(),
        "itm".as_ref(),
        input.as_os_str(),
        "--chrome".as_ref(),
        chrome.as_os_str(),
        "--perfetto".as_ref(),
        pftrace.as_os_str(),
        "--save-events".as_ref(),
        events.as_os_str(),
    ]);
    run(&[
        "--from-events".as_ref(),
        events.as_os_str(),
        "--chrome".as_ref(),
        again.as_os_str(),
    ]);
    assert_eq!(
        std::fs::read(&chrome).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&chrome).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let of = |ph: &str| events.iter().filter(|e| e["ph"] == ph).count();
    let mut chrome_counters: BTreeMap<String, usize> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "C") {
        *chrome_counters
            .entry(e["name"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }

    let has = Command::new("python3")
        .args(["-c", "import perfetto, google.protobuf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto_check.py");
        let out = Command::new("python3")
            .arg(script)
            .arg(&pftrace)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let tracks = summary["tracks"].as_object().unwrap();
        let itm = &tracks["trace ID 0x00 (itm)"];
        assert_eq!(itm["slices"].as_array().unwrap().len(), of("B"));
        assert_eq!(itm["instants"].as_array().unwrap().len(), of("i"));
        for (name, n) in &chrome_counters {
            assert_eq!(
                tracks[name]["counters"].as_array().unwrap().len(),
                *n,
                "{name}"
            );
            assert_eq!(tracks[name]["parent"], "trace ID 0x00 (itm)");
        }
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with perfetto is missing and CI is set"
        );
    }

    if test_support::sigrok::present() {
        let theirs =
            test_support::sigrok::itm_annotations(&[&std::fs::read(&input).unwrap()], false);
        let mut values: BTreeMap<u8, usize> = BTreeMap::new();
        for l in theirs.lines() {
            let Some(rest) = l.strip_prefix("arm_itm-1: Watchpoint ") else {
                continue;
            };
            if rest.contains(" data ") {
                let c: u8 = rest[..1].parse().unwrap();
                *values.entry(c).or_insert(0) += 1;
            }
        }
        let ours: BTreeMap<u8, usize> = chrome_counters
            .iter()
            .map(|(name, n)| {
                let c = name.strip_prefix("DWT comparator ").unwrap()[..1]
                    .parse()
                    .unwrap();
                (c, *n)
            })
            .collect();
        assert_eq!(ours, values);
        assert!(!values.is_empty());
    }
}
