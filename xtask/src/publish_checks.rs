//! Checks that keep the library crates ready to publish: their
//! documentation builds without warnings, every feature combination
//! builds, and the workspace builds with its minimum supported Rust
//! version (MSRV).

use std::process::Command;

use crate::{cargo, cargo_with_env, root};

/// `cargo doc` of the whole workspace, private items included, with
/// every rustdoc warning (broken intra-doc links, bad HTML, …) an error.
pub fn docs() -> Result<(), String> {
    cargo_with_env(
        &[
            "doc",
            "--workspace",
            "--no-deps",
            "--document-private-items",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )
}

/// A crate of the workspace with its own features.
struct Crate {
    name: String,
    features: Vec<String>,
}

/// The workspace's publishable library crates and their features, from
/// `cargo metadata`.
fn library_crates() -> Result<Vec<Crate>, String> {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cargo metadata gave no JSON: {e}"))?;
    let packages = meta["packages"]
        .as_array()
        .ok_or("cargo metadata lists no packages")?;
    let mut crates = Vec::new();
    for p in packages {
        // `publish = false` is an empty list of registries.
        let unpublished = p["publish"].as_array().is_some_and(Vec::is_empty);
        let is_lib = p["targets"].as_array().is_some_and(|targets| {
            targets.iter().any(|t| {
                t["kind"]
                    .as_array()
                    .is_some_and(|k| k.iter().any(|k| k == "lib"))
            })
        });
        if unpublished || !is_lib {
            continue;
        }
        let name = p["name"].as_str().ok_or("a package without a name")?;
        let mut features: Vec<String> = p["features"]
            .as_object()
            .map(|f| f.keys().filter(|k| *k != "default").cloned().collect())
            .unwrap_or_default();
        features.sort();
        crates.push(Crate {
            name: name.to_owned(),
            features,
        });
    }
    Ok(crates)
}

/// The `cargo check` arguments past `-p CRATE` for each feature
/// combination worth building: none, each feature alone, all. (The
/// default features are built by the workspace's lints and tests.)
fn combinations(features: &[String]) -> Vec<Vec<String>> {
    if features.is_empty() {
        return Vec::new();
    }
    let mut out = vec![vec!["--no-default-features".to_owned()]];
    if features.len() > 1 {
        for f in features {
            out.push(vec![
                "--no-default-features".to_owned(),
                "--features".to_owned(),
                f.clone(),
            ]);
        }
    }
    out.push(vec!["--all-features".to_owned()]);
    out
}

/// Lint every library crate's library in each feature combination of
/// [`combinations`], with warnings denied (clippy checks it as `cargo
/// check` does, and shares the dependencies' builds with the workspace's
/// lint run); then check that `trace-convert`'s library leaves the
/// command-line crates out ([`cli_stays_in_the_binary`]).
pub fn features() -> Result<(), String> {
    for krate in library_crates()? {
        for combination in combinations(&krate.features) {
            let mut args = vec!["clippy", "--lib", "-p", krate.name.as_str()];
            args.extend(combination.iter().map(String::as_str));
            args.extend(["--", "-D", "warnings"]);
            cargo(&args)?;
        }
    }
    cli_stays_in_the_binary()
}

/// Crates only the `trace-convert` command uses (argument parsing,
/// progress bar, spelling suggestions): its library, built without the
/// default `cli` feature, must not depend on any of them.
const CLI_ONLY: [&str; 3] = ["clap", "indicatif", "strsim"];

/// `trace-convert`'s library without default features depends on none
/// of [`CLI_ONLY`] (checked on its resolved dependency tree).
fn cli_stays_in_the_binary() -> Result<(), String> {
    let args = [
        "tree",
        "-p",
        "trace-convert",
        "--no-default-features",
        "--edges",
        "normal",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ];
    eprintln!("xtask: cargo {}", args.join(" "));
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(args)
        .current_dir(root())
        .output()
        .map_err(|e| format!("cannot run cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo tree failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let found: Vec<&str> = CLI_ONLY
        .into_iter()
        .filter(|c| {
            tree.lines()
                .any(|l| l.split_whitespace().next() == Some(*c))
        })
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "trace-convert's library without the `cli` feature depends on {}: keep command-line crates behind that feature",
            found.join(", ")
        ))
    }
}

/// The workspace's `rust-version`, from its `Cargo.toml`.
fn msrv() -> Result<String, String> {
    let path = root().join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("rust-version"))
        .filter_map(|rest| rest.trim().strip_prefix('='))
        .map(|v| v.trim().trim_matches('"').to_owned())
        .next()
        .ok_or_else(|| format!("{}: no rust-version", path.display()))
}

/// Whether rustup has a toolchain for `version` installed (`1.85` is
/// matched by `1.85-…` and `1.85.0-…`). Never installs one.
fn toolchain_installed(version: &str) -> bool {
    let Ok(out) = Command::new("rustup").args(["toolchain", "list"]).output() else {
        return false;
    };
    String::from_utf8_lossy(&out.stdout).lines().any(|line| {
        line.strip_prefix(version).is_some_and(|rest| {
            rest.starts_with('-')
                || (rest.starts_with(".") && rest[1..].starts_with(|c: char| c.is_ascii_digit()))
        })
    })
}

/// Build the workspace's libraries and binaries with the MSRV toolchain,
/// in a target folder of its own; when rustup has no such toolchain, say
/// that the check is skipped (a missing toolchain is not a failure).
pub fn msrv_build() -> Result<(), String> {
    let version = msrv()?;
    if !toolchain_installed(&version) {
        eprintln!(
            "xtask: skipping the MSRV build: no Rust {version} toolchain \
             (`rustup toolchain install {version}` to run it)"
        );
        return Ok(());
    }
    let args = [
        "run",
        version.as_str(),
        "cargo",
        "build",
        "--workspace",
        "--lib",
        "--bins",
        "--target-dir",
        "target/msrv",
    ];
    eprintln!("xtask: rustup {}", args.join(" "));
    let status = Command::new("rustup")
        .args(args)
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO")
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run rustup: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the MSRV build with Rust {version} failed ({status})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::combinations;

    #[test]
    fn combinations_cover_none_each_and_all() {
        assert!(combinations(&[]).is_empty());
        let one = combinations(&["std".to_owned()]);
        assert_eq!(one, [vec!["--no-default-features"], vec!["--all-features"]]);
        let two = combinations(&["serde".to_owned(), "std".to_owned()]);
        assert_eq!(two.len(), 4);
        assert_eq!(two[1], ["--no-default-features", "--features", "serde"]);
        assert_eq!(two[2], ["--no-default-features", "--features", "std"]);
    }
}

#[cfg(test)]
mod readme {
    use crate::root;

    /// The Rust code blocks of a Markdown text.
    fn rust_blocks(text: &str) -> Vec<String> {
        let mut blocks = Vec::new();
        let mut current: Option<String> = None;
        for line in text.lines() {
            match &mut current {
                None if line.trim_start().starts_with("```rust") => current = Some(String::new()),
                Some(block) if line.trim_start().starts_with("```") => {
                    blocks.push(std::mem::take(block));
                    current = None;
                }
                Some(block) => {
                    block.push_str(line);
                    block.push('\n');
                }
                None => {}
            }
        }
        blocks
    }

    /// A doctest as it reads: without its hidden (`# `) lines.
    fn shown(block: &str) -> String {
        block
            .lines()
            .filter(|l| *l != "#" && !l.starts_with("# "))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// The workspace README's library examples are not compiled where they
    /// stand; each must be, word for word, one of the doctests of the
    /// `etm-packets` or `trace-core` README (their crate documentation),
    /// as it reads without its hidden lines.
    #[test]
    fn workspace_readme_example_is_a_doctest() {
        let read = |p: &str| std::fs::read_to_string(root().join(p)).expect(p);
        let front = rust_blocks(&read("README.md"));
        let doctests: Vec<String> = ["etm-packets/README.md", "trace-core/README.md"]
            .iter()
            .flat_map(|p| rust_blocks(&read(p)))
            .map(|b| shown(&b))
            .collect();
        assert!(!front.is_empty(), "README.md has no Rust example");
        for block in front {
            assert!(
                doctests.contains(&block),
                "README.md example is not a doctest of etm-packets or trace-core:\n{block}"
            );
        }
    }
}
