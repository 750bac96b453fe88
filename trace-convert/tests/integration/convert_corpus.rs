//! Ground truth from real programs: the corpus programs' executed flows
//! (recorded by an emulator) are encoded as PTM and ETMv3 trace, converted
//! with the programs' ELF files, and the folded stacks compared with the
//! emulator's own per-stack instruction counts (`stacks` in `*.cov.json`),
//! which name real functions only (`--no-inline`; inlined frames are
//! checked in `inline_stacks.rs`).

use crate::convert_common::{
    convert_trace, corpus_program, corpus_traces, folded_map, truth_stacks,
};

#[test]
fn folded_stacks_match_the_emulator() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("tc-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");
    let names = test_support::corpus_programs(&dir, ".cov.json");
    let mut failures = Vec::new();
    let mut compared = 0;
    for name in &names {
        let (elf, flow, mem) = corpus_program(&dir, name);
        let truth = truth_stacks(&dir.join(format!("{name}.cov.json")));
        for (protocol, trace) in corpus_traces(name, &flow, &mem) {
            let got = folded_map(&convert_trace(&trace, protocol, &elf, &tmp, false));
            compared += 1;
            eprintln!(
                "{name} {}: {} stacks, {} instructions",
                protocol.name(),
                got.len(),
                got.values().sum::<u64>()
            );
            if got != truth {
                let diff: Vec<String> = truth
                    .keys()
                    .chain(got.keys())
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .filter(|k| truth.get(*k) != got.get(*k))
                    .take(6)
                    .map(|k| format!("{k}: truth {:?}, ours {:?}", truth.get(k), got.get(k)))
                    .collect();
                failures.push(format!("{name} {}: {}", protocol.name(), diff.join("; ")));
            }
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    assert!(compared >= names.len(), "every program compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Function symbols (Thumb bit cleared) and DWARF lines at each function's
/// entry, as the corpus manifest of the compiled programs gives them.
#[test]
fn symbols_and_lines_of_function_entries() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    for name in ["example-a", "example-t", "example-m", "interwork-t"] {
        let elf = dir.join(format!("{name}.elf"));
        let syms = trace_convert::symbols::Symbolizer::from_elves(&[elf]).expect("elf");
        assert!(syms.has_lines());
        let cov: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.cov.json"))).expect("cov"),
        )
        .expect("json");
        let mut checked = 0;
        for f in cov["functions"].as_array().expect("functions") {
            let addr = u32::try_from(f["addr"].as_u64().expect("addr")).expect("32-bit");
            let want = f["name"].as_str().expect("name");
            let got = syms.function(addr).map(|f| f.name.as_str());
            assert_eq!(got, Some(want), "{name}: function at {addr:#x}");
            assert!(syms.is_entry(addr));
            let line = syms.line(addr).expect("a line at every function entry");
            assert!(
                line.file.ends_with(f["file"].as_str().expect("file")),
                "{name}: {want}: {}",
                line.file
            );
            assert_eq!(
                u64::from(line.line),
                f["line"].as_u64().expect("line"),
                "{name}: {want}"
            );
            checked += 1;
        }
        assert!(checked >= 3, "{name}");
    }
}

/// Inlined frames from DWARF: innermost first, the real function last.
#[test]
fn inlined_frames_end_in_the_real_function() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    let elf = dir.join("example-a.elf");
    let syms = trace_convert::symbols::Symbolizer::from_elves(&[elf]).expect("elf");
    let main = syms
        .functions()
        .iter()
        .find(|f| f.name == "main")
        .expect("main")
        .clone();
    let frames = syms.inline_frames(main.start);
    assert_eq!(
        frames.last().and_then(|f| f.function.as_deref()),
        Some("main")
    );
    // Somewhere in the program a call was inlined: two or more frames, the
    // outer one naming the function the symbol table says holds the code.
    let mut inlined = 0;
    for f in syms.functions() {
        for addr in (f.start..f.end).step_by(4) {
            let frames = syms.inline_frames(addr);
            if frames.len() > 1 {
                inlined += 1;
                let outer = frames
                    .last()
                    .and_then(|x| x.function.clone())
                    .expect("named");
                assert!(f.name.starts_with(&outer), "{outer} vs {}", f.name);
                assert!(frames[0].location.is_some());
            }
        }
    }
    assert!(inlined > 0, "example-a has inlined code");
}
