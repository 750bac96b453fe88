use super::*;
use std::fs;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tc-output-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("mkdir");
    d
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn write_and_complete(mut w: OutputFile, bytes: &[u8]) {
    w.write_all(bytes).expect("write");
    w.complete().expect("complete");
}

#[test]
fn every_file_appears_at_the_commit_and_not_before() {
    let d = scratch("commit");
    let mut plan = OutputPlan::new();
    plan.add("--a", &d.join("a.txt"), false).expect("a");
    plan.add("--b", &d.join("b.txt"), false).expect("b");
    let mut set = plan.create().expect("create");
    let mut w = set.writers().into_iter();
    write_and_complete(w.next().expect("a"), b"first");
    write_and_complete(w.next().expect("b"), b"second");
    // Both complete, neither under its final name yet.
    let before = names(&d);
    assert_eq!(before.len(), 2, "{before:?}");
    assert!(before
        .iter()
        .all(|n| n.starts_with('.') && n.ends_with(".tmp")));
    set.commit().expect("commit");
    assert_eq!(names(&d), ["a.txt", "b.txt"]);
    assert_eq!(fs::read(d.join("a.txt")).expect("a"), b"first");
    assert_eq!(fs::read(d.join("b.txt")).expect("b"), b"second");
    fs::remove_dir_all(&d).ok();
}

#[test]
fn one_incomplete_output_commits_none() {
    let d = scratch("incomplete");
    fs::write(d.join("a.txt"), "old a").expect("old");
    let mut plan = OutputPlan::new();
    plan.add("--a", &d.join("a.txt"), false).expect("a");
    plan.add("--b", &d.join("b.txt"), false).expect("b");
    plan.add("--c", &d.join("c.txt"), false).expect("c");
    let mut set = plan.create().expect("create");
    let mut w = set.writers().into_iter();
    write_and_complete(w.next().expect("a"), b"new a");
    write_and_complete(w.next().expect("b"), b"new b");
    // The third fails half way: written, never completed.
    let mut c = w.next().expect("c");
    c.write_all(b"half").expect("write");
    drop(c);
    let err = set.commit().expect_err("incomplete");
    assert!(matches!(err, OutputError::Incomplete { .. }), "{err}");
    // The old file is untouched, nothing new, no temporary file.
    assert_eq!(names(&d), ["a.txt"]);
    assert_eq!(fs::read(d.join("a.txt")).expect("a"), b"old a");
    fs::remove_dir_all(&d).ok();
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_on_one_output_commits_none() {
    // /dev/full fails every write with ENOSPC: the sink's completion
    // fails, so the caller never commits, and dropping the set removes
    // the other outputs' temporary files.
    if !Path::new("/dev/full").exists() {
        return;
    }
    let d = scratch("full");
    let mut plan = OutputPlan::new();
    plan.add("--a", &d.join("a.txt"), false).expect("a");
    plan.add("--full", Path::new("/dev/full"), false)
        .expect("full");
    let mut set = plan.create().expect("create");
    let mut w = set.writers().into_iter();
    write_and_complete(w.next().expect("a"), b"complete");
    let mut full = w.next().expect("full");
    full.write_all(&[0u8; 100]).expect("buffered");
    let e = full.complete().expect_err("disk full");
    assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
    assert!(e.to_string().contains("/dev/full"), "names the output: {e}");
    drop(set);
    assert!(names(&d).is_empty(), "{:?}", names(&d));
    fs::remove_dir_all(&d).ok();
}

#[test]
fn a_failed_rename_leaves_no_temporary_file() {
    let d = scratch("rename");
    let mut plan = OutputPlan::new();
    plan.add("--a", &d.join("a.txt"), false).expect("a");
    let mut set = plan.create().expect("create");
    let a = set.writers().pop().expect("a");
    write_and_complete(a, b"data");
    // The final name became a folder that is not empty: the rename fails.
    fs::create_dir_all(d.join("a.txt/inside")).expect("mkdir");
    let err = set.commit().expect_err("rename over a folder");
    assert!(matches!(err, OutputError::Io { .. }), "{err}");
    assert_eq!(names(&d), ["a.txt"]);
    assert!(d.join("a.txt").is_dir());
    fs::remove_dir_all(&d).ok();
}

#[test]
fn dropped_set_leaves_nothing_and_makes_no_folder() {
    let d = scratch("drop");
    let out = d.join("new/deeper/x.json");
    let mut plan = OutputPlan::new();
    plan.add("--x", &out, true).expect("x");
    let mut set = plan.create().expect("create");
    let mut x = set.writers().pop().expect("x");
    x.write_all(b"partial").expect("write");
    assert!(!d.join("new").exists(), "no folder before the commit");
    drop(x);
    drop(set);
    assert!(names(&d).is_empty(), "{:?}", names(&d));

    // Committed, the folders are made.
    let mut plan = OutputPlan::new();
    plan.add("--x", &out, true).expect("x");
    let mut set = plan.create().expect("create");
    write_and_complete(set.writers().pop().expect("x"), b"whole");
    set.commit().expect("commit");
    assert_eq!(fs::read(&out).expect("read"), b"whole");
    assert_eq!(names(&d), ["new"]);
    fs::remove_dir_all(&d).ok();
}

#[test]
fn missing_folder_without_make_folders_is_an_error() {
    let d = scratch("nofolder");
    let mut plan = OutputPlan::new();
    let err = plan
        .add("-o", &d.join("no/x.txt"), false)
        .expect_err("missing folder");
    assert!(matches!(err, OutputError::MissingFolder { .. }), "{err}");
    fs::write(d.join("file"), "x").expect("write");
    let err = plan
        .add("-o", &d.join("file/x.txt"), true)
        .expect_err("folder is a file");
    assert!(
        matches!(&err, OutputError::NotAFolder { folder, .. } if *folder == d.join("file")),
        "{err}"
    );
    let err = plan.add("-o", &d, false).expect_err("a folder");
    assert!(
        matches!(
            err,
            OutputError::NotAFile {
                what: "a folder",
                ..
            }
        ),
        "{err}"
    );
    fs::remove_dir_all(&d).ok();
}

#[test]
fn two_outputs_on_one_file_are_refused() {
    let d = scratch("dups");
    let mut plan = OutputPlan::new();
    plan.add("--chrome", &d.join("x"), false).expect("first");
    for same in [d.join("x"), d.join("./x"), d.join("sub/../x")] {
        fs::create_dir_all(d.join("sub")).expect("mkdir");
        let err = plan.add("--folded", &same, false).expect_err("dup");
        assert!(
            matches!(&err, OutputError::Duplicate { label, other_label, .. }
                if label == "--folded" && other_label == "--chrome"),
            "{err}"
        );
        assert!(err.is_misuse());
    }
    // Through links, once the file exists.
    fs::write(d.join("y"), "y").expect("write");
    plan.add("--perfetto", &d.join("y"), false).expect("y");
    fs::hard_link(d.join("y"), d.join("y-hard")).expect("hard link");
    assert!(matches!(
        plan.add("--lcov", &d.join("y-hard"), false),
        Err(OutputError::Duplicate { .. })
    ));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("y", d.join("y-soft")).expect("symlink");
        assert!(matches!(
            plan.add("--lcov", &d.join("y-soft"), false),
            Err(OutputError::Duplicate { .. })
        ));
    }
    fs::remove_dir_all(&d).ok();
}

#[test]
fn one_output_at_most_on_standard_output() {
    let mut plan = OutputPlan::new();
    let id = plan.add("--folded", Path::new("-"), false).expect("-");
    assert!(plan.is_stdout(id));
    let err = plan
        .add("--chrome", Path::new("-"), false)
        .expect_err("two");
    assert!(matches!(err, OutputError::TwoStdout { .. }), "{err}");
}

#[cfg(target_os = "linux")]
#[test]
fn standard_output_however_spelled_is_one_output() {
    let spellings = ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"];
    for a in spellings {
        for b in spellings {
            let mut plan = OutputPlan::new();
            plan.add("--folded", Path::new(a), false).expect(a);
            let err = plan
                .add("--chrome", Path::new(b), false)
                .expect_err("two outputs on standard output");
            assert!(
                matches!(err, OutputError::TwoStdout { .. }),
                "{a} {b}: {err}"
            );
        }
    }
    // Several outputs may still share /dev/null.
    let mut plan = OutputPlan::new();
    plan.add("--folded", Path::new("/dev/null"), false)
        .expect("null");
    plan.add("--chrome", Path::new("/dev/null"), false)
        .expect("null again");
    plan.add("--lcov", Path::new("-"), false).expect("-");
}

#[test]
fn an_output_that_is_an_input_is_refused() {
    let d = scratch("inputs");
    let input = d.join("in.bin");
    fs::write(&input, "trace").expect("write");
    fs::hard_link(&input, d.join("hard.bin")).expect("hard link");
    let mut links = vec![input.clone(), d.join("hard.bin"), d.join("./in.bin")];
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("in.bin", d.join("soft.bin")).expect("symlink");
        links.push(d.join("soft.bin"));
    }
    for out in &links {
        let mut plan = OutputPlan::new();
        plan.add("--chrome", out, false).expect("plan");
        let err = plan
            .check_inputs([Path::new("/nonexistent/x"), input.as_path()])
            .expect_err("same file");
        assert!(
            matches!(&err, OutputError::SameAsInput { input: i, .. } if *i == input),
            "{err}"
        );
        assert!(err.is_misuse());
    }
    // Another file is fine.
    let mut plan = OutputPlan::new();
    plan.add("--chrome", &d.join("out.json"), false)
        .expect("plan");
    plan.check_inputs([input.as_path()]).expect("different");
    assert_eq!(fs::read(&input).expect("input"), b"trace");
    fs::remove_dir_all(&d).ok();
}

#[cfg(unix)]
#[test]
fn a_symlinked_output_is_written_through_the_link() {
    let d = scratch("through");
    fs::create_dir_all(d.join("real")).expect("mkdir");
    fs::write(d.join("real/out.json"), "old").expect("write");
    std::os::unix::fs::symlink("real/out.json", d.join("link.json")).expect("symlink");
    let mut plan = OutputPlan::new();
    plan.add("--chrome", &d.join("link.json"), false)
        .expect("plan");
    let mut set = plan.create().expect("create");
    write_and_complete(set.writers().pop().expect("w"), b"new");
    set.commit().expect("commit");
    let meta = fs::symlink_metadata(d.join("link.json")).expect("link");
    assert!(meta.file_type().is_symlink(), "the link is still a link");
    assert_eq!(fs::read(d.join("real/out.json")).expect("target"), b"new");
    assert_eq!(names(&d.join("real")), ["out.json"]);
    fs::remove_dir_all(&d).ok();
}

#[cfg(unix)]
#[test]
fn devices_are_written_in_place_and_may_be_shared() {
    use std::os::unix::fs::FileTypeExt;
    let null = Path::new("/dev/null");
    if !fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device()) {
        return;
    }
    let mut plan = OutputPlan::new();
    plan.add("--chrome", null, false).expect("null");
    plan.add("--folded", null, false).expect("null again");
    let mut set = plan.create().expect("create");
    for w in set.writers() {
        write_and_complete(w, &[0u8; 100_000]);
    }
    set.commit().expect("commit");
    let m = fs::metadata(null).expect("still there");
    assert!(
        m.file_type().is_char_device(),
        "/dev/null is still a device"
    );
    // Another device (a terminal would interleave the outputs' lines) is
    // one output's.
    let zero = Path::new("/dev/zero");
    if fs::metadata(zero).is_ok_and(|m| m.file_type().is_char_device()) {
        let mut plan = OutputPlan::new();
        plan.add("--chrome", zero, false).expect("zero");
        let err = plan.add("--folded", zero, false).expect_err("shared");
        assert!(matches!(err, OutputError::Duplicate { .. }), "{err}");
    }
}

#[cfg(unix)]
#[test]
fn new_files_get_the_usual_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("mode");
    // What the system gives a new file (0666 less the umask).
    File::create(d.join("reference")).expect("reference");
    let want = fs::metadata(d.join("reference"))
        .expect("meta")
        .permissions()
        .mode();
    let mut plan = OutputPlan::new();
    plan.add("--x", &d.join("x"), false).expect("x");
    let mut set = plan.create().expect("create");
    write_and_complete(set.writers().pop().expect("w"), b"x");
    set.commit().expect("commit");
    let got = fs::metadata(d.join("x"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(got, want);
    fs::remove_dir_all(&d).ok();
}

/// Write `bytes` as the one output `path` and commit.
fn rewrite(path: &Path, bytes: &[u8]) {
    let mut plan = OutputPlan::new();
    plan.add("--out", path, false).expect("plan");
    let mut set = plan.create().expect("create");
    write_and_complete(set.writers().pop().expect("writer"), bytes);
    set.commit().expect("commit");
}

#[cfg(unix)]
#[test]
fn a_rewritten_file_keeps_its_permissions_and_links() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = scratch("keep");
    let f = d.join("private.folded");
    fs::write(&f, "old").expect("old");
    fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).expect("chmod");
    rewrite(&f, b"new");
    let meta = fs::metadata(&f).expect("meta");
    assert_eq!(meta.mode() & 0o7777, 0o600, "mode {:o}", meta.mode());
    assert_eq!(fs::read(&f).expect("read"), b"new");
    // A group-writable file stays so.
    fs::set_permissions(&f, fs::Permissions::from_mode(0o664)).expect("chmod");
    rewrite(&f, b"newer");
    assert_eq!(fs::metadata(&f).expect("meta").mode() & 0o7777, 0o664);

    // A file with another hard link stays one file with it.
    let link = d.join("link.folded");
    fs::hard_link(&f, &link).expect("hard link");
    let inode = fs::metadata(&f).expect("meta").ino();
    rewrite(&f, b"through the link");
    assert_eq!(fs::metadata(&f).expect("meta").ino(), inode);
    assert_eq!(fs::read(&link).expect("link"), b"through the link");
    assert_eq!(
        names(&d),
        ["link.folded", "private.folded"],
        "no temporary left"
    );
    // A new file gets the usual mode (0666 less the umask), not 0600.
    let new = d.join("new.folded");
    rewrite(&new, b"x");
    assert_ne!(fs::metadata(&new).expect("meta").mode() & 0o077, 0);
    fs::remove_dir_all(&d).ok();
}
