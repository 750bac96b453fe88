//! Shell completions and man pages made from the command line's own
//! definition (`trace-convert assets`, run by `cargo xtask assets`),
//! checked by their consumers: bash completes with the script, groff
//! renders the pages.

use std::path::Path;
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_trace-convert")
}

/// A tool on PATH, or a skip (a failure when CI is set).
fn tool(name: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is missing and CI is set"
        );
        eprintln!("skipping: {name} not found");
    }
    found
}

/// What bash's completion offers for the words of `line` (the last one
/// being completed).
fn complete(script: &Path, line: &[&str]) -> Vec<String> {
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let cword = line.len() - 1;
    let prev = line.get(cword.wrapping_sub(1)).copied().unwrap_or("");
    let cur = line[cword];
    let program = format!(
        "source '{}'; COMP_WORDS=({words}); COMP_CWORD={cword}; \
         COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         _trace__convert trace-convert '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        line.join(" ")
    );
    let out = Command::new("bash")
        .args(["-c", &program])
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_flags() {
    if !tool("bash") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(bin())
        .args(["assets", "completions", "bash"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let script = dir.path().join("trace-convert.bash");
    std::fs::write(&script, &out.stdout).expect("write");
    assert_eq!(complete(&script, &["trace-convert", "pac"]), ["packets"]);
    let rep = complete(&script, &["trace-convert", "re"]);
    assert!(rep.contains(&"report".to_owned()), "{rep:?}");
    let perf = complete(&script, &["trace-convert", "convert", "--perf"]);
    assert_eq!(perf, ["--perfetto"]);
    let fmt = complete(&script, &["trace-convert", "decode", "--format", ""]);
    for f in ["text", "jsonl", "none"] {
        assert!(fmt.contains(&f.to_owned()), "{fmt:?}");
    }
    // The hidden subcommand is not offered.
    assert!(!complete(&script, &["trace-convert", "as"]).contains(&"assets".to_owned()));
}

#[test]
fn the_man_pages_render_with_every_subcommand() {
    if !tool("groff") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let status = Command::new(bin())
        .args(["assets", "man"])
        .arg(dir.path())
        .status()
        .expect("run");
    assert!(status.success());
    for (page, words) in [
        (
            "trace-convert",
            &["packets", "decode", "report", "--perfetto"][..],
        ),
        ("trace-convert-packets", &["--trace-id", "--format"][..]),
        ("trace-convert-decode", &["--instructions", "--elf"][..]),
        (
            "trace-convert-convert",
            &["--folded", "--lcov", "--chrome"][..],
        ),
        ("trace-convert-report", &["--format", "--sort"][..]),
    ] {
        let out = Command::new("groff")
            .args(["-man", "-Tascii", "-P-cbou"])
            .arg(dir.path().join(format!("{page}.1")))
            .output()
            .expect("run groff");
        assert!(out.status.success(), "{page}");
        // groff hyphenates and may use Unicode hyphens: compare on ASCII.
        let text = String::from_utf8_lossy(&out.stdout)
            .replace(['\u{2010}', '\u{2212}'], "-")
            .replace("-\n", "-");
        assert!(text.contains("NAME"), "{page}: {text}");
        assert!(text.contains(page), "{page}");
        for w in words {
            assert!(text.contains(w), "{page}: no {w}");
        }
    }
    assert!(!dir.path().join("trace-convert-assets.1").exists());
}
