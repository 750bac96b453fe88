//! `cargo xtask assets [DIR]`: shell completions and man pages of
//! `trace-convert`, made from its command-line definition by its hidden
//! `assets` subcommand, into `DIR` (default `target/assets`):
//! `completions/` (bash, zsh, fish, elvish, PowerShell) and `man/`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The shells and the file names their scripts are installed under.
const SHELLS: [(&str, &str); 5] = [
    ("bash", "trace-convert"),
    ("zsh", "_trace-convert"),
    ("fish", "trace-convert.fish"),
    ("elvish", "trace-convert.elv"),
    ("powershell", "_trace-convert.ps1"),
];

/// Build `trace-convert` and make the assets.
///
/// # Errors
///
/// A failed build, run or write, as a message.
pub fn run(args: &[String]) -> Result<(), String> {
    let root = crate::root();
    let dir = args
        .first()
        .map_or_else(|| root.join("target").join("assets"), PathBuf::from);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--quiet", "-p", "trace-convert"])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("cannot build trace-convert".into());
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let bin = target.join("debug").join("trace-convert");
    make(&bin, &dir)?;
    println!("completions and man pages in {}", dir.display());
    Ok(())
}

fn make(bin: &Path, dir: &Path) -> Result<(), String> {
    let completions = dir.join("completions");
    std::fs::create_dir_all(&completions).map_err(|e| format!("{}: {e}", completions.display()))?;
    for (shell, file) in SHELLS {
        let out = Command::new(bin)
            .args(["assets", "completions", shell])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{shell} completions: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let path = completions.join(file);
        std::fs::write(&path, &out.stdout).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let man = dir.join("man");
    let status = Command::new(bin)
        .args(["assets", "man"])
        .arg(&man)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if !status.success() {
        return Err("man pages not written".into());
    }
    Ok(())
}
