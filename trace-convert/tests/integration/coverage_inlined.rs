//! LCOV lists inlined functions with their calls, and exception vectors
//! have frames of their own names. The expected counts come from the
//! example program's source (`corpus/src/example.c`): `crc32` is called
//! once per `crc_task`, `next_random` `SORT_LEN` times per `sort_task`,
//! `insertion_sort` once per `sort_task`, `emit` four times per
//! `format_task`, `timer_handler` once per `irq_handler`, and the
//! interrupt switches once from `main`; GCC inlined all of them.

use std::collections::BTreeMap;
use std::process::Command;

/// FNDA counts by function name of the example converted with `extra`,
/// and its folded stacks.
fn example(extra: &[&str]) -> (BTreeMap<String, u64>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let example = test_support::repo_root().join("examples/snapshot");
    let (info, folded) = (
        dir.path().join("cov.info"),
        dir.path().join("stacks.folded"),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_trace-convert"))
        .arg(&example)
        .arg("--elf")
        .arg(example.join("example.elf"))
        .arg("--lcov")
        .arg(&info)
        .arg("--folded")
        .arg(&folded)
        .args(extra)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fnda = std::fs::read_to_string(&info)
        .expect("lcov")
        .lines()
        .filter_map(|l| l.strip_prefix("FNDA:"))
        .map(|l| {
            let (n, name) = l.split_once(',').expect("FNDA");
            (name.to_owned(), n.parse().expect("count"))
        })
        .collect();
    (fnda, std::fs::read_to_string(&folded).expect("folded"))
}

fn sort_len() -> u64 {
    let src = std::fs::read_to_string(test_support::repo_root().join("corpus/src/example.c"))
        .expect("example.c");
    src.lines()
        .find_map(|l| l.strip_prefix("#define SORT_LEN "))
        .and_then(|n| n.trim().parse().ok())
        .expect("SORT_LEN")
}

#[test]
fn lcov_counts_the_calls_of_inlined_functions() {
    let (fnda, _) = example(&[]);
    let n = |name: &str| {
        *fnda
            .get(name)
            .unwrap_or_else(|| panic!("no FNDA for {name}: {fnda:?}"))
    };
    assert!(n("crc_task") > 0 && n("sort_task") > 0 && n("format_task") > 0);
    assert_eq!(n("crc32"), n("crc_task"));
    assert_eq!(n("insertion_sort"), n("sort_task"));
    assert_eq!(n("next_random"), sort_len() * n("sort_task"));
    assert_eq!(n("emit"), 4 * n("format_task"));
    assert_eq!(n("timer_handler"), n("irq_handler"));
    assert!(n("irq_handler") > 0);
    for f in ["irq_enable", "irq_disable", "main"] {
        assert_eq!(n(f), 1, "{f}");
    }
    // Without inlined functions, LCOV lists the symbols alone: the
    // out-of-line timer_handler never runs.
    let (plain, _) = example(&["--no-inline"]);
    assert_eq!(plain.get("timer_handler"), Some(&0));
    for f in ["crc32", "next_random", "emit", "insertion_sort"] {
        assert!(!plain.contains_key(f), "{f}");
    }
}

#[test]
fn vectors_are_named_by_address_not_by_the_symbol_around_them() {
    // The example's vector table is `_start` (0x0..0x20); the IRQ vector,
    // at 0x18 on an A-profile core, is an instruction inside it.
    let (_, folded) = example(&[]);
    let stacks: Vec<&str> = folded
        .lines()
        .filter_map(|l| l.rsplit_once(' ').map(|x| x.0))
        .collect();
    assert!(stacks.iter().all(|s| !s.contains(";_start")), "{folded}");
    assert!(
        stacks.iter().any(|s| s.ends_with(";0x00000018")),
        "{folded}"
    );
    // The trace starts in `_start` itself: that frame keeps its name.
    assert!(stacks.contains(&"_start"));
}
