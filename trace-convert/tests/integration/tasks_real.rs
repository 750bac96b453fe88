//! RTOS tasks on the TI AM243x Cortex-R5F captures (FreeRTOS, ThreadX,
//! Zephyr, with the ELF files that ran): no task entry function runs
//! nested under another task's frames, and each task has a timeline track
//! of its own. The entry functions are the functions those RTOSes start
//! their tasks in, read from the ELF files by name here, not from the
//! converter: a task's code that runs above another task's frames shows
//! as an entry function with frames before it that are neither the task's
//! name nor a trampoline.

use crate::convert_common::{check_chrome, cli, folded_map};
use std::collections::BTreeSet;
use std::path::Path;

/// Each capture, its ELF, and the functions its tasks start in (the
/// Thread-Metric benchmark threads and the RTOS's own tasks; ThreadX's
/// `threadx_main` jumps to `main_message_isr_test`, whose frame replaces
/// it).
const CAPTURES: &[(&str, &str, &[&str])] = &[
    (
        "b8b29a1-threadx",
        "threadx.out",
        &[
            "threadx_main",
            "main_message_isr_test",
            "tm_thread_entry",
            "tm_receiver_thread_entry",
        ],
    ),
    (
        "002b37c-freertos",
        "freertos.out",
        &[
            "main_task",
            "prvIdleTask",
            "prvTimerTask",
            "tm_memory_allocation_thread_0_entry",
        ],
    ),
    (
        "ce42d22-freertos",
        "freertos.out",
        &[
            "main_task",
            "prvIdleTask",
            "prvTimerTask",
            "tm_memory_allocation_thread_0_entry",
        ],
    ),
    (
        "002b37c-zephyr",
        "zephyr.elf",
        &["main_task", "idle", "bg_thread_main", "work_queue_main"],
    ),
];

/// Where tasks start before their entry function.
const TRAMPOLINES: &[&str] = &["_tx_thread_shell_entry", "z_thread_entry"];

/// Instructions run inside task entry functions, and those of them that
/// ran nested under another task's frames, in `folded` (whose task stacks
/// start with one of `tasks`, the task names).
fn nesting(folded: &str, entries: &[&str], tasks: &BTreeSet<String>) -> (u64, u64) {
    let (mut inside, mut nested) = (0, 0);
    for (stack, w) in folded_map(folded) {
        let mut frames: Vec<&str> = stack.split(';').collect();
        if frames.len() > 1 && tasks.contains(frames[0]) {
            frames.remove(0);
        }
        let Some(at) = frames.iter().position(|f| entries.contains(f)) else {
            continue;
        };
        inside += w;
        // A task's own frames before its entry: its trampoline, once.
        let before = &frames[..at];
        let distinct: BTreeSet<&&str> = before.iter().collect();
        if !before.iter().all(|f| TRAMPOLINES.contains(f)) || distinct.len() < before.len() {
            nested += w;
        }
    }
    (inside, nested)
}

#[test]
fn no_task_entry_runs_under_another_tasks_frames() {
    let Some(real) = test_support::real_dir() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let mut measured = Vec::new();
    for (name, elf, entries) in CAPTURES {
        let dir = real.join("am243x-r5f").join(name);
        let out = |ext: &str| tmp.path().join(format!("{name}.{ext}"));
        let run = |extra: &[&str]| {
            let mut args: Vec<String> = vec![
                dir.display().to_string(),
                "--elf".into(),
                dir.join(elf).display().to_string(),
                "--folded".into(),
                out("folded").display().to_string(),
                "--chrome".into(),
                out("json").display().to_string(),
                "--tasks".into(),
                out("jsonl").display().to_string(),
            ];
            args.extend(extra.iter().map(|s| (*s).to_owned()));
            cli(&args);
            let read = |p: &Path| std::fs::read_to_string(p).expect("output");
            (
                read(&out("folded")),
                read(&out("json")),
                read(&out("jsonl")),
            )
        };
        let (folded, chrome, jsonl) = run(&[]);
        let tasks: BTreeSet<String> = jsonl
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON line"))
            .filter(|v| v["kind"] == "task")
            .map(|v| v["name"].as_str().expect("name").to_owned())
            .collect();
        let (inside, nested) = nesting(&folded, entries, &tasks);
        let (before, before_nested) = nesting(&run(&["--no-tasks"]).0, entries, &BTreeSet::new());
        eprintln!(
            "{name}: {} tasks; {inside} instructions in task entry functions, {nested} nested under another task's frames ({before_nested} of {before} without tasks)",
            tasks.len()
        );
        assert!(
            nested * 100 <= inside,
            "{name}: {nested} of {inside} instructions of task entry functions run under another task's frames"
        );
        // Every task has a track of its own, named after it.
        check_chrome(&chrome);
        let v: serde_json::Value = serde_json::from_str(&chrome).expect("Chrome JSON");
        let tracks: BTreeSet<(u64, String)> = v["traceEvents"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
            .map(|e| {
                (
                    e["tid"].as_u64().expect("tid"),
                    e["args"]["name"].as_str().expect("name").to_owned(),
                )
            })
            .collect();
        let named: BTreeSet<&String> = tracks.iter().map(|(_, n)| n).collect();
        for t in &tasks {
            assert!(named.contains(t), "{name}: task {t} has no track");
        }
        let tids: BTreeSet<u64> = tracks.iter().map(|(t, _)| *t).collect();
        assert_eq!(tids.len(), tracks.len(), "{name}: one track per thread ID");
        measured.push((name, inside, nested));
    }
    assert_eq!(measured.len(), CAPTURES.len());
    assert!(
        measured.iter().any(|(_, inside, _)| *inside > 100_000),
        "the captures run task code"
    );
}
