//! The help groups its options: inputs, trace configuration, code and
//! symbols, outputs, time and windows (and the listing or report options
//! of those subcommands).

use std::process::Command;

/// Each heading of `args`'s help and the long flags under it.
fn groups(args: &[&str]) -> Vec<(String, Vec<String>)> {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .args(args)
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_suffix(':').filter(|h| !h.starts_with(' ')) {
            groups.push((h.to_owned(), Vec::new()));
        } else if let Some(flag) = line
            .split_whitespace()
            .find(|w| w.starts_with("--"))
            .filter(|_| line.starts_with("  "))
        {
            if let Some((_, flags)) = groups.last_mut() {
                flags.push(flag.trim_end_matches(',').to_owned());
            }
        }
    }
    groups
}

fn under<'a>(groups: &'a [(String, Vec<String>)], heading: &str) -> &'a [String] {
    groups
        .iter()
        .find(|(h, _)| h == heading)
        .map_or(&[], |(_, f)| f.as_slice())
}

#[test]
fn convert_help_groups_its_options() {
    let g = groups(&["--help"]);
    let want = [
        (
            "Input",
            &[
                "--protocol",
                "--layout",
                "--trace-id",
                "--symfs",
                "--from-events",
            ][..],
        ),
        (
            "Trace configuration (capture files without a snapshot)",
            &[
                "--etmcr",
                "--cycle-accurate",
                "--return-stack",
                "--etm-version",
            ][..],
        ),
        (
            "Code and symbols",
            &["--elf", "--mem", "--kallsyms", "--no-demangle"][..],
        ),
        (
            "Outputs",
            &[
                "--chrome",
                "--perfetto",
                "--lcov",
                "--folded",
                "--report",
                "--autofdo",
                "--out-dir",
            ][..],
        ),
        (
            "Time and windows",
            &["--clock", "--cpu-hz", "--since", "--until", "--function"][..],
        ),
    ];
    for (heading, flags) in want {
        let got = under(&g, heading);
        for f in flags {
            assert!(
                got.contains(&(*f).to_owned()),
                "{heading}: no {f} in {got:?}"
            );
        }
    }
    // What is left under "Options" is only what fits no group.
    let rest = under(&g, "Options");
    assert!(rest.len() <= 4, "{rest:?}");
}

#[test]
fn listing_and_report_options_have_their_groups() {
    let d = groups(&["decode", "--help"]);
    assert!(under(&d, "Listing").contains(&"--instructions".to_owned()));
    assert!(under(&d, "Code and symbols").contains(&"--elf".to_owned()));
    assert!(under(&d, "Input").contains(&"--protocol".to_owned()));
    let r = groups(&["report", "--help"]);
    assert!(under(&r, "Report").contains(&"--sort".to_owned()));
    // The report's own options come before the conversion's many.
    let headings: Vec<&str> = r.iter().map(|(h, _)| h.as_str()).collect();
    let at = |h: &str| headings.iter().position(|x| *x == h);
    assert!(
        at("Report") < at("Input") && at("Report") < at("Outputs"),
        "{headings:?}"
    );
}
