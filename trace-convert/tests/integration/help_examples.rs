//! The help's examples on a raw PTM capture (`PTM_0_2.bin`) give the
//! flags that capture needs: run with the memory of its snapshot, they
//! decode what the snapshot itself (whose registers say how the trace was
//! configured) decodes. Needs ../shared/testdata (skipped when absent,
//! failing under CI).

use std::path::Path;
use std::process::Command;

const CODE: [(&str, &str); 2] = [
    ("mem_Cortex-A15_0_0_VECTORS.bin", "0x80000000"),
    ("mem_Cortex-A15_0_1_RO_CODE.bin", "0x80000278"),
];

/// Run in `dir`; the counts of instructions and gaps on stderr.
fn counts(dir: &Path, args: &[String]) -> (u64, u64) {
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run trace-convert");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    let number_before = |word: &str| -> u64 {
        let line = err
            .lines()
            .find(|l| l.contains(word) && l.contains("ID 0x"))
            .unwrap_or_else(|| panic!("no `{word}` in {err}"));
        let words: Vec<&str> = line.split_whitespace().collect();
        let i = words
            .iter()
            .position(|w| w.trim_end_matches(',') == word)
            .expect("word");
        words[i - 1].parse().expect("a count")
    };
    (number_before("instructions"), number_before("gaps"))
}

/// The example lines of `help` that name the capture, as arguments (the
/// program name left out), with the placeholders for code made real and
/// the outputs under `out`.
fn examples(help: &str, out: &Path) -> Vec<Vec<String>> {
    help.lines()
        .filter(|l| l.contains("PTM_0_2.bin") && l.trim_start().starts_with("trace-convert"))
        .map(|l| {
            let mut args = Vec::new();
            let mut words = l.split_whitespace().skip(1);
            while let Some(w) = words.next() {
                match w {
                    "--mem" | "--elf" => {
                        words.next();
                        for (file, at) in CODE {
                            args.push("--mem".to_owned());
                            args.push(format!("{file}@{at}"));
                        }
                    }
                    "--lcov" => {
                        words.next();
                    }
                    "--folded" => {
                        words.next();
                        args.push(w.to_owned());
                        args.push(out.join("x.folded").display().to_string());
                    }
                    _ => args.push(w.to_owned()),
                }
            }
            args
        })
        .collect()
}

fn help(sub: Option<&str>) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_trace-convert"));
    c.args(sub).arg("--help");
    let out = c.output().expect("help");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn raw_ptm_examples_decode_what_the_snapshot_decodes() {
    let Some(dir) = test_support::opencsd_dir() else {
        return;
    };
    let snap = dir.join("tc2-ptm-rstk-t32");
    let tmp = tempfile::tempdir().expect("tempdir");
    let folded = tmp.path().join("snap.folded").display().to_string();
    let truth = counts(&snap, &["decode".into(), ".".into()]);
    assert_eq!(truth.1, 0, "the snapshot decodes without gaps");
    let convert_truth = counts(
        &snap,
        &[
            "--no-progress".into(),
            ".".into(),
            "--folded".into(),
            folded,
        ],
    );
    assert_eq!(convert_truth, truth);

    let convert = examples(&help(None), tmp.path());
    let decode = examples(&help(Some("decode")), tmp.path());
    assert_eq!((convert.len(), decode.len()), (1, 1));
    for args in convert.iter().chain(&decode) {
        assert_eq!(counts(&snap, args), truth, "{args:?}");
    }
}
