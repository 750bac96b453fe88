//! The `no_std` builds: the crates a Cortex-M probe can run, built
//! without their default `std` feature for `thumbv7em-none-eabihf`.

use std::path::Path;
use std::process::Command;

use crate::{cargo, root};

/// The embedded target the `no_std` crates are built for.
pub const TARGET: &str = "thumbv7em-none-eabihf";

/// The crates that build without `std` (with `alloc` for `trace-core`).
const CRATES: [&str; 5] = [
    "etm-packets",
    "itm-packets",
    "ptm-packets",
    "isa-decode",
    "trace-core",
];

/// Lint and build [`CRATES`] without default features (and once more
/// with `trace-core/serde`) for [`TARGET`], whose standard library has no
/// `std`; where that target is not installed, for the host, saying so.
/// Either way, no dependency of theirs may have its `std` feature on.
pub fn run() -> Result<(), String> {
    let mut base: Vec<&str> = vec!["--no-default-features"];
    for krate in CRATES {
        base.extend(["-p", krate]);
    }
    if target_installed(TARGET) {
        base.extend(["--target", TARGET]);
    } else {
        eprintln!(
            "xtask: the {TARGET} target is not installed (`rustup target add {TARGET}`): \
             building the no_std crates for the host instead"
        );
    }
    for features in [&[][..], &["--features", "trace-core/serde"]] {
        let with = |command: &'static str| [&[command][..], &base, features].concat();
        cargo(&[with("clippy"), vec!["--", "-D", "warnings"]].concat())?;
        cargo(&with("build"))?;
        no_std_dependencies(&with("tree"))?;
    }
    Ok(())
}

/// Whether rustup installed the standard library (`core`) of `target`.
fn target_installed(target: &str) -> bool {
    let Ok(out) = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", target])
        .current_dir(root())
        .output()
    else {
        return false;
    };
    if !out.status.success() {
        return false;
    }
    let dir = String::from_utf8_lossy(&out.stdout);
    std::fs::read_dir(Path::new(dir.trim())).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("libcore-") && name.ends_with(".rlib")
        })
    })
}

/// Fail when `cargo tree` (with `tree`'s arguments) shows a package built
/// for the target (not a procedural macro) with its `std` feature on.
fn no_std_dependencies(tree: &[&str]) -> Result<(), String> {
    let mut args = tree.to_vec();
    args.extend([
        "-e",
        "normal,no-proc-macro",
        "--prefix",
        "none",
        "-f",
        "{p} [{f}]",
    ]);
    eprintln!("xtask: cargo {}", args.join(" "));
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(&args)
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let with_std = with_std(&text);
    if with_std.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the no_std crates pull in std: {}",
            with_std.join(", ")
        ))
    }
}

/// The lines of `cargo tree -f "{p} [{f}]"` output whose feature list
/// holds `std`, each once.
fn with_std(tree: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = tree
        .lines()
        .filter(|l| {
            l.rsplit_once('[')
                .and_then(|(_, features)| features.split_once(']'))
                .is_some_and(|(features, _)| features.split(',').any(|f| f == "std"))
        })
        .collect();
    lines.sort_unstable();
    lines.dedup();
    lines
}

#[cfg(test)]
mod tests {
    use super::with_std;

    #[test]
    fn only_a_std_feature_counts() {
        let tree = "trace-core v0.1.0 (/w/trace-core) [serde]\n\
                    memchr v2.8.3 [alloc,std]\n\
                    libc v0.2.191 [default,std]\n\
                    memchr v2.8.3 [alloc,std] (*)\n\
                    once_cell v1.21.4 [alloc,race]\n\
                    hashbrown v0.17.1 []\n\
                    foo v1.0.0 [no_std,std-lite]\n";
        assert_eq!(
            with_std(tree),
            [
                "libc v0.2.191 [default,std]",
                "memchr v2.8.3 [alloc,std]",
                "memchr v2.8.3 [alloc,std] (*)",
            ]
        );
        assert!(with_std("etm-packets v0.1.0 (/w/etm-packets) []\n").is_empty());
    }
}
