//! The perf.data reader against Linux perf 6.1's own dumps of files
//! recorded by others (`../shared/testdata/perf`: `perf report -D` and
//! `perf report --header-only`): the same records at the same offsets,
//! the same attributes, AUXTRACE_INFO words, AUXTRACE buffers, AUX flags,
//! memory maps, commands and header features. Their trace (ETMv4/ETE) is
//! refused with a message naming the unit. Needs the shared test data:
//! skips without it, fails when CI is set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trace_convert::input::perf::auxtrace::CpuBlock;
use trace_convert::input::perf::features::{id as feat, name as feat_name};
use trace_convert::input::perf::records::Body;
use trace_convert::input::perf::PerfData;
use trace_convert::input::{flags::SourceFlags, resolve, InputError};

const FILES: [&str; 4] = [
    "perf_etm",
    "perf_kernel",
    "perf_with_missing_aux_data",
    "perf_with_unformatted_trace",
];

fn dir() -> Option<PathBuf> {
    test_support::perf_dir().map(|d| d.join("simpleperf_etmv4"))
}

fn unxz(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read dump");
    let mut out = Vec::new();
    lzma_rs::xz_decompress(&mut &bytes[..], &mut out).expect("xz");
    String::from_utf8_lossy(&out).into_owned()
}

fn num(s: &str) -> u64 {
    let s = s.trim().trim_end_matches(',');
    if s == "-1" {
        return u64::from(u32::MAX);
    }
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).expect(s),
        None => s.parse().expect(s),
    }
}

/// What perf's `-D` dump says about one record.
#[derive(Debug, Default, Clone)]
struct Dumped {
    kind: u32,
    size: u64,
    cpu: u64,
    time: u64,
    name: String,
    rest: String,
}

/// The records of a dump, by file offset: `0xOFF@FILE [0xSIZE]: event: T`
/// lines give type and size, the summary line after each gives the CPU,
/// time, name and fields.
fn dumped_records(dump: &str) -> BTreeMap<u64, Dumped> {
    let mut out: BTreeMap<u64, Dumped> = BTreeMap::new();
    for line in dump.lines() {
        if let Some((head, kind)) = line.split_once("]: event: ") {
            if let Some((off, size)) = head.split_once('@') {
                if !off.starts_with("0x") {
                    continue;
                }
                let size = size.rsplit_once('[').expect("size").1;
                let e = out.entry(num(off)).or_default();
                e.kind = kind.trim().parse().expect("type");
                e.size = num(size);
            }
            continue;
        }
        let Some((head, tail)) = line.split_once("]: PERF_RECORD_") else {
            continue;
        };
        let w: Vec<&str> = head.split_whitespace().collect();
        if w.len() != 4 || !w[2].starts_with("0x") {
            continue;
        }
        let e = out.entry(num(w[2])).or_default();
        e.cpu = num(w[0]);
        e.time = num(w[1]);
        let (name, rest) = tail.split_once(' ').unwrap_or((tail, ""));
        e.name = name.trim_end_matches(':').to_owned();
        e.rest = rest.to_owned();
    }
    out
}

/// `key: value` pairs of a summary line's fields.
fn fields(rest: &str) -> BTreeMap<String, u64> {
    let w: Vec<&str> = rest.split_whitespace().collect();
    w.windows(2)
        .filter(|p| p[0].ends_with(':'))
        .filter_map(|p| {
            let v = p[1];
            let ok = v.starts_with("0x") || v == "-1" || v.chars().all(|c| c.is_ascii_digit());
            ok.then(|| (p[0].trim_end_matches(':').to_owned(), num(v)))
        })
        .collect()
}

/// The hexadecimal values perf prints under PERF_RECORD_AUXTRACE_INFO, in
/// order (one per `name   value` line).
fn dumped_info(dump: &str) -> Vec<u64> {
    let mut lines = dump
        .lines()
        .skip_while(|l| !l.contains("PERF_RECORD_AUXTRACE_INFO"));
    lines.next();
    let mut out = Vec::new();
    for l in lines {
        if l.starts_with("0x") || l.starts_with("0@") {
            break;
        }
        // perf's warning, written to stderr, may split a line: the value
        // then ends a later line, still after a tab.
        if !l.contains('\t') {
            continue;
        }
        if let Some(v) = l.split_whitespace().last() {
            if let Ok(x) = u64::from_str_radix(v, 16) {
                out.push(x);
            }
        }
    }
    out
}

/// The raw bytes of the ATTR records perf makes from the file's
/// attributes (`0@(null) [..]: event: 64` then hex lines).
fn dumped_attrs(dump: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<u8>> = None;
    for l in dump.lines() {
        if l.starts_with("0@(null)") && l.ends_with("event: 64") {
            if let Some(c) = cur.take() {
                out.push(c);
            }
            cur = Some(Vec::new());
            continue;
        }
        let Some(c) = cur.as_mut() else { continue };
        if let Some(hex) = l.strip_prefix(".  ") {
            let Some((_, bytes)) = hex.split_once(":  ") else {
                continue;
            };
            for b in bytes.split_whitespace().take(16) {
                if b.len() == 2 {
                    if let Ok(x) = u8::from_str_radix(b, 16) {
                        c.push(x);
                    }
                }
            }
        } else if l.is_empty() && !c.is_empty() {
            out.push(cur.take().unwrap_or_default());
        }
    }
    out.extend(cur);
    out
}

#[test]
fn records_attributes_and_aux_buffers_match_perf() {
    let Some(dir) = dir() else { return };
    for name in FILES {
        let bytes = std::fs::read(dir.join(format!("{name}.data"))).expect("read");
        let perf = PerfData::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let dump = unxz(&dir.join(format!("{name}.dump.txt.xz")));
        let want = dumped_records(&dump);
        let ours: Vec<u64> = perf.records.iter().map(|r| r.offset).collect();
        assert_eq!(
            ours,
            want.keys().copied().collect::<Vec<_>>(),
            "{name}: record offsets"
        );
        let mut aux_seen = 0;
        for r in &perf.records {
            let d = &want[&r.offset];
            assert_eq!(
                (r.kind, u64::from(r.size)),
                (d.kind, d.size),
                "{name} at {:#x}",
                r.offset
            );
            // A line perf's stderr split (its unwind warning) is not compared.
            if d.name.is_empty() || d.rest.contains("unwind: target platform") {
                continue;
            }
            let f = fields(&d.rest);
            let at = format!("{name}: {} at {:#x}", d.name, r.offset);
            assert_eq!(u64::from(r.sample.cpu.unwrap_or(0)), d.cpu, "{at}: cpu");
            assert_eq!(r.sample.time.unwrap_or(0), d.time, "{at}: time");
            match &r.body {
                Body::Aux(a) => {
                    aux_seen += 1;
                    assert_eq!(d.name, "AUX", "{at}");
                    assert_eq!(
                        (a.offset, a.size, a.flags),
                        (f["offset"], f["size"], f["flags"]),
                        "{at}"
                    );
                }
                Body::Auxtrace(a) => {
                    assert_eq!(d.name, "AUXTRACE", "{at}");
                    let got = (a.size, a.offset, a.reference, a.idx, a.tid, a.cpu);
                    let exp = (
                        f["size"],
                        f["offset"],
                        f["ref"],
                        f["idx"] as u32,
                        f["tid"] as u32,
                        f["cpu"] as u32,
                    );
                    assert_eq!(got, exp, "{at}");
                    assert_eq!(a.data, r.offset + u64::from(r.size), "{at}: data follows");
                }
                Body::Mmap(m) => {
                    assert!(d.name.starts_with("MMAP"), "{at}");
                    // `PID/TID: [0xSTART(0xLEN) @ 0xPGOFF ...]: PROT FILE`
                    let (ids, tail) = d.rest.split_once(": [").expect("mmap fields");
                    let (pid, tid) = ids.trim().split_once('/').expect("pid/tid");
                    let (range, rest) = tail.split_once(" @ ").expect("@");
                    let (start, len) = range.split_once('(').expect("(");
                    let pgoff = rest
                        .split_whitespace()
                        .next()
                        .expect("pgoff")
                        .trim_end_matches("]:");
                    let file = rest.split_once("]: ").expect("]:").1;
                    let file = file.split_once(' ').expect("prot").1;
                    assert_eq!(
                        (u64::from(m.pid), u64::from(m.tid), m.start, m.len, m.pgoff),
                        (
                            num(pid),
                            num(tid),
                            num(start),
                            num(len.trim_end_matches(')')),
                            num(pgoff)
                        ),
                        "{at}"
                    );
                    assert_eq!(m.filename, file, "{at}");
                }
                Body::Comm {
                    pid,
                    tid,
                    comm,
                    exec,
                } => {
                    assert_eq!(d.name, "COMM", "{at}");
                    let text = d.rest.strip_prefix("exec: ").unwrap_or(&d.rest);
                    assert_eq!(*exec, d.rest.starts_with("exec: "), "{at}");
                    let (c, ids) = text.rsplit_once(':').expect("comm:ids");
                    assert_eq!(comm, c, "{at}");
                    let (p, t) = ids.split_once('/').expect("pid/tid");
                    assert_eq!((u64::from(*pid), u64::from(*tid)), (num(p), num(t)), "{at}");
                }
                Body::ItraceStart { pid, tid } => {
                    assert_eq!(d.name, "ITRACE_START", "{at}");
                    assert_eq!(
                        (u64::from(*pid), u64::from(*tid)),
                        (f["pid"], f["tid"]),
                        "{at}"
                    );
                }
                Body::AuxtraceInfo { .. } => assert_eq!(d.name, "AUXTRACE_INFO", "{at}"),
                _ => {}
            }
        }
        let aux_dumped = want.values().filter(|d| d.name == "AUX").count();
        assert_eq!(aux_seen, aux_dumped, "{name}: AUX records");
        assert!(aux_seen > 0, "{name}: the files hold AUX records");

        // perf's ATTR records in the dump are the attributes of the samples
        // it synthesizes from the trace, not the file's: the file's trace
        // attribute is checked against AUXTRACE_INFO's PMU type below.
        assert!(!dumped_attrs(&dump).is_empty());
        // AUXTRACE_INFO, word by word as perf prints them.
        let (_, info) = perf.cs_etm.as_ref().expect("AUXTRACE_INFO");
        let info = info.as_ref().expect("CoreSight info");
        let mut ours = vec![info.version];
        let printed = dumped_info(&dump);
        // perf prints the PMU word; where a warning splits its line, the
        // value still ends a later line.
        ours.push((u64::from(info.pmu_type) << 32) | u64::from(info.nr_cpu));
        ours.push(info.snapshot);
        for b in &info.cpus {
            match b {
                CpuBlock::Other { magic, cpu, params } => {
                    ours.extend([*magic, *cpu, params.len() as u64]);
                    ours.extend(params);
                }
                CpuBlock::EtmV3(_) => panic!("{name}: these files hold ETMv4/ETE"),
            }
        }
        assert_eq!(ours, printed, "{name}: AUXTRACE_INFO words");
        assert!(
            perf.attrs
                .iter()
                .any(|a| a.kind == info.pmu_type && !a.ids.is_empty()),
            "{name}: an attribute of the cs_etm PMU, with its event IDs"
        );
    }
}

#[test]
fn header_and_features_match_perf() {
    let Some(dir) = dir() else { return };
    for name in FILES {
        let bytes = std::fs::read(dir.join(format!("{name}.data"))).expect("read");
        let perf = PerfData::parse(&bytes).expect("parses");
        let text = std::fs::read_to_string(dir.join(format!("{name}.header.txt"))).expect("header");
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("# {key}")))
                .map(|v| v.split_once(':').expect(":").1.trim().to_owned())
        };
        let h = &perf.header;
        assert_eq!(
            Some(h.data.offset),
            value("data offset").map(|v| num(&v)),
            "{name}"
        );
        assert_eq!(
            Some(h.data.size),
            value("data size").map(|v| num(&v)),
            "{name}"
        );
        assert_eq!(
            Some(h.data.offset + h.data.size),
            value("feat offset").map(|v| num(&v)),
            "{name}"
        );
        let f = &perf.features;
        assert_eq!(f.os_release, value("os release"), "{name}");
        assert_eq!(f.arch, value("arch"), "{name}");
        assert_eq!(f.hostname, value("hostname"), "{name}");
        assert_eq!(
            f.cmdline.as_ref().map(|w| w.join(" ")),
            value("cmdline").map(|v| v.trim_end().to_owned()),
            "{name}"
        );
        let missing: Vec<String> = value("missing features")
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        assert!(!missing.is_empty());
        for m in &missing {
            let bit = (0..32).find(|&b| feat_name(b) == *m);
            let bit = bit.unwrap_or_else(|| panic!("{name}: perf names feature {m}, unknown here"));
            assert!(!f.present.contains(&bit), "{name}: {m} is missing for perf");
        }
        // Every feature perf does not call missing is present here.
        for bit in 1..32 {
            if !missing.contains(&feat_name(bit)) {
                assert!(
                    f.present.contains(&bit),
                    "{name}: {} present for perf",
                    feat_name(bit)
                );
            }
        }
        assert_eq!(
            f.present.contains(&feat::AUXTRACE),
            text.contains("contains AUX area data"),
            "{name}"
        );
        assert!(
            f.unreadable.iter().all(|(b, _)| *b == feat::AUXTRACE),
            "{name}: {:?}",
            f.unreadable
        );
    }
}

/// ETMv4 and ETE recordings are refused, naming the unit; a file without
/// AUX data says so.
#[test]
fn other_trace_units_are_refused_by_name() {
    let Some(dir) = dir() else { return };
    for (name, unit) in [
        ("perf_etm", "ETMv4"),
        ("perf_kernel", "ETMv4"),
        ("perf_with_unformatted_trace", "ETE"),
        ("perf_with_missing_aux_data", "ETE"),
    ] {
        let path = dir.join(format!("{name}.data"));
        let err = resolve(&path, &SourceFlags::default()).expect_err("refused");
        assert!(matches!(err, InputError::Perf { .. }), "{name}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("CPU 0: {unit}")), "{name}: {msg}");
        assert!(msg.contains("only ETMv3 and PTM"), "{name}: {msg}");
    }
    let path = dir.join("generated_by_linux_perf.data");
    let bytes = std::fs::read(&path).expect("read");
    let perf = PerfData::parse(&bytes).expect("a perf 4.1 file parses");
    assert!(perf.cs_etm.is_none() && !perf.records.is_empty());
    let err = resolve(&path, &SourceFlags::default()).expect_err("no trace");
    assert!(err.to_string().contains("no AUXTRACE_INFO"), "{err}");
}
