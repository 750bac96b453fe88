//! `gen-corpus` and `check-corpus`: the ground-truth corpus of small ARM
//! programs in `corpus/`.
//!
//! `gen-corpus` builds every program with `arm-none-eabi-gcc` into
//! `corpus/fixtures/<program>-<flavour>.elf`, runs `corpus/tools/truth.py`
//! (unicorn) to record the executed flow (and, for the RTOS program, which
//! task runs each instruction) and `corpus/tools/coverage.py` to derive
//! the expected coverage, and writes `corpus/fixtures/manifest.json`.
//! `check-corpus` reruns the two tools on the committed ELFs and compares
//! their output with the committed files; with `--qemu` it also compares
//! the executed addresses with QEMU's execution log.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

/// One way of building a program.
#[derive(Clone, Copy)]
enum Flavour {
    /// A-profile, A32 code.
    A32,
    /// A-profile, T32 code (the startup code stays A32).
    T32,
    /// ARMv7-M (Cortex-M3), T32 only.
    M,
}

impl Flavour {
    fn tag(self) -> &'static str {
        match self {
            Flavour::A32 => "a",
            Flavour::T32 => "t",
            Flavour::M => "m",
        }
    }

    fn profile(self) -> &'static str {
        match self {
            Flavour::A32 | Flavour::T32 => "a",
            Flavour::M => "m",
        }
    }

    fn cflags(self) -> &'static [&'static str] {
        match self {
            Flavour::A32 => &["-marm", "-march=armv7-a", "-mfloat-abi=soft"],
            Flavour::T32 => &["-mthumb", "-march=armv7-a", "-mfloat-abi=soft"],
            Flavour::M => &["-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft"],
        }
    }

    fn startup(self) -> &'static str {
        match self {
            Flavour::A32 | Flavour::T32 => "src/start_a.S",
            Flavour::M => "src/start_m.S",
        }
    }

    /// The corpus RTOS's port: vectors, reset and the task switch.
    fn rtos_port(self) -> &'static str {
        match self {
            Flavour::A32 | Flavour::T32 => "src/rtos_port_a.S",
            Flavour::M => "src/rtos_port_m.S",
        }
    }

    fn linker_script(self) -> &'static str {
        match self {
            Flavour::A32 | Flavour::T32 => "src/link_a.ld",
            Flavour::M => "src/link_m.ld",
        }
    }
}

/// A corpus program: its source, optimisation level and flavours.
struct Program {
    name: &'static str,
    opt: &'static str,
    flavours: &'static [Flavour],
    /// Built on the corpus RTOS: its port replaces the startup code, and
    /// the emulator records which task runs each instruction
    /// (`<program>-<flavour>.tasks`).
    rtos: bool,
}

impl Program {
    fn startup(&self, flavour: Flavour) -> &'static str {
        if self.rtos {
            flavour.rtos_port()
        } else {
            flavour.startup()
        }
    }
}

const ALL: &[Flavour] = &[Flavour::A32, Flavour::T32, Flavour::M];

const PROGRAMS: &[Program] = &[
    Program {
        name: "example",
        opt: "-O2",
        flavours: ALL,
        rtos: false,
    },
    Program {
        name: "controlflow",
        opt: "-O2",
        flavours: ALL,
        rtos: false,
    },
    Program {
        name: "exceptions",
        opt: "-O2",
        flavours: ALL,
        rtos: false,
    },
    Program {
        name: "interwork",
        opt: "-O2",
        flavours: &[Flavour::A32, Flavour::T32],
        rtos: false,
    },
    Program {
        name: "longrun",
        opt: "-O1",
        flavours: ALL,
        rtos: false,
    },
    Program {
        name: "rtos",
        opt: "-O2",
        flavours: ALL,
        rtos: true,
    },
];

const GCC: &str = "arm-none-eabi-gcc";

fn corpus_dir() -> PathBuf {
    crate::root().join("corpus")
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn check_python() -> Result<(), String> {
    let ok = Command::new(python())
        .args(["-c", "import unicorn, elftools, capstone"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{} cannot import unicorn, elftools and capstone; install them with \
             `pip install unicorn==2.1.4 pyelftools capstone`",
            python()
        ))
    }
}

fn check_gcc() -> Result<(), String> {
    match Command::new(GCC).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err(format!(
            "{GCC} not found; install it with `apt-get install gcc-arm-none-eabi` \
             (check-corpus works without it)"
        )),
    }
}

/// What the Python tools write for one fixture: its flow, its coverage
/// and, for an RTOS program, its task record.
struct Truth<'a> {
    flow: &'a Path,
    cov: &'a Path,
    tasks: Option<&'a Path>,
}

/// Runs the two Python tools for one fixture, writing `out`.
fn run_tools(
    corpus: &Path,
    elf: &Path,
    profile: &str,
    program: &str,
    flavour: &str,
    out: &Truth<'_>,
) -> Result<(), String> {
    let mut truth = Command::new(python());
    truth.arg(corpus.join("tools/truth.py")).arg(elf).args([
        "--profile",
        profile,
        "--program",
        program,
        "--flavour",
        flavour,
    ]);
    if let Some(tasks) = out.tasks {
        truth.arg("--tasks").arg(tasks);
    }
    run(truth.arg("-o").arg(out.flow), "truth.py")?;
    let mut coverage = Command::new(python());
    coverage
        .arg(corpus.join("tools/coverage.py"))
        .arg(elf)
        .arg(out.flow);
    if let Some(tasks) = out.tasks {
        coverage.arg("--tasks").arg(tasks);
    }
    run(coverage.arg("-o").arg(out.cov), "coverage.py")
}

/// Reads `key: value` header lines of a flow file.
fn flow_header(flow: &Path, key: &str) -> Result<String, String> {
    let text =
        fs::read_to_string(flow).map_err(|e| format!("cannot read {}: {e}", flow.display()))?;
    let prefix = format!("# {key}: ");
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .ok_or_else(|| format!("{}: no `{key}` header", flow.display()))
}

fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("cannot rename to {}: {e}", path.display()))
}

/// `cargo xtask gen-corpus`: build, emulate, write fixtures and manifest.
pub fn generate() -> Result<(), String> {
    check_gcc()?;
    check_python()?;
    let corpus = corpus_dir();
    let fixtures = corpus.join("fixtures");
    fs::create_dir_all(&fixtures)
        .map_err(|e| format!("cannot create {}: {e}", fixtures.display()))?;
    // Source paths in the DWARF data are relative to the repository root,
    // where the README's commands run (genhtml finds the sources there).
    let prefix_map = format!("{}=corpus", corpus.display());
    let mut manifest = Vec::new();
    for program in PROGRAMS {
        for &flavour in program.flavours {
            let name = format!("{}-{}", program.name, flavour.tag());
            let elf_name = format!("{name}.elf");
            let tmp_elf = fixtures.join(format!("{name}.elf.tmp"));
            let mut gcc = Command::new(GCC);
            gcc.current_dir(&corpus)
                .args([
                    "-g",
                    program.opt,
                    "-ffreestanding",
                    "-nostdlib",
                    "-fno-common",
                ])
                .args(["-Wall", "-Wextra", "-Isrc"])
                .arg(format!("-ffile-prefix-map={prefix_map}"))
                .arg(format!("-fdebug-prefix-map={prefix_map}"))
                .arg(format!("-Wa,--debug-prefix-map,{prefix_map}"))
                .args(flavour.cflags())
                .args(["-T", flavour.linker_script(), "-o"])
                .arg(&tmp_elf)
                .arg(program.startup(flavour))
                .arg(format!("src/{}.c", program.name))
                .arg("-lgcc");
            run(&mut gcc, &format!("{GCC} for {name}"))?;
            let elf = fixtures.join(&elf_name);
            fs::rename(&tmp_elf, &elf)
                .map_err(|e| format!("cannot write {}: {e}", elf.display()))?;
            let flow = fixtures.join(format!("{name}.flow"));
            let cov = fixtures.join(format!("{name}.cov.json"));
            let tasks = program.rtos.then(|| fixtures.join(format!("{name}.tasks")));
            run_tools(
                &corpus,
                &elf,
                flavour.profile(),
                program.name,
                flavour.tag(),
                &Truth {
                    flow: &flow,
                    cov: &cov,
                    tasks: tasks.as_deref(),
                },
            )?;
            let entry = u64::from_str_radix(&flow_header(&flow, "entry")?, 16)
                .map_err(|e| format!("{}: bad entry: {e}", flow.display()))?;
            let instructions: u64 = flow_header(&flow, "instructions")?
                .parse()
                .map_err(|e| format!("{}: bad instruction count: {e}", flow.display()))?;
            eprintln!("gen-corpus: {name}: {instructions} instructions");
            let mut entry = json!({
                "name": name,
                "program": program.name,
                "flavour": flavour.tag(),
                "profile": flavour.profile(),
                "entry": entry,
                "instructions": instructions,
                "elf": elf_name,
                "flow": format!("{name}.flow"),
                "cov": format!("{name}.cov.json"),
            });
            if program.rtos {
                entry["tasks"] = json!(format!("{name}.tasks"));
            }
            manifest.push(entry);
        }
    }
    let text = serde_json::to_string_pretty(&Value::Array(manifest))
        .map_err(|e| format!("cannot format the manifest: {e}"))?;
    write_atomic(&fixtures.join("manifest.json"), &(text + "\n"))?;
    eprintln!("gen-corpus: wrote {}", fixtures.display());
    Ok(())
}

fn field<'a>(entry: &'a Value, key: &str) -> Result<&'a str, String> {
    entry
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("manifest entry without `{key}`: {entry}"))
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The first line where two texts differ, for error messages.
fn first_difference(a: &str, b: &str) -> String {
    for (n, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}: committed `{x}`, emulator `{y}`", n + 1);
        }
    }
    format!(
        "lengths differ: {} vs {} lines",
        a.lines().count(),
        b.lines().count()
    )
}

/// `cargo xtask check-corpus [--qemu]`: rerun the tools, compare.
pub fn check(args: &[String]) -> Result<(), String> {
    check_python()?;
    let corpus = corpus_dir();
    let fixtures = corpus.join("fixtures");
    let manifest = read_json(&fixtures.join("manifest.json"))?;
    let entries = manifest
        .as_array()
        .ok_or("manifest.json is not an array")?
        .clone();
    let scratch = std::env::temp_dir().join(format!("check-corpus-{}", std::process::id()));
    fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    let mut failures = Vec::new();
    let mut total = 0u64;
    for entry in &entries {
        let name = field(entry, "name")?;
        let elf = fixtures.join(field(entry, "elf")?);
        let flow = fixtures.join(field(entry, "flow")?);
        let cov = fixtures.join(field(entry, "cov")?);
        let new_flow = scratch.join(format!("{name}.flow"));
        let new_cov = scratch.join(format!("{name}.cov.json"));
        let tasks = match entry.get("tasks") {
            Some(_) => Some(fixtures.join(field(entry, "tasks")?)),
            None => None,
        };
        let new_tasks = tasks
            .as_ref()
            .map(|_| scratch.join(format!("{name}.tasks")));
        run_tools(
            &corpus,
            &elf,
            field(entry, "profile")?,
            field(entry, "program")?,
            field(entry, "flavour")?,
            &Truth {
                flow: &new_flow,
                cov: &new_cov,
                tasks: new_tasks.as_deref(),
            },
        )?;
        let old_text = fs::read_to_string(&flow)
            .map_err(|e| format!("cannot read {}: {e}", flow.display()))?;
        let new_text = fs::read_to_string(&new_flow)
            .map_err(|e| format!("cannot read {}: {e}", new_flow.display()))?;
        let instructions = flow_header(&flow, "instructions")?;
        let records = old_text.lines().filter(|l| !l.starts_with('#')).count();
        total += instructions.parse::<u64>().unwrap_or(0);
        let flow_ok = old_text == new_text;
        let cov_ok = read_json(&cov)? == read_json(&new_cov)?;
        println!(
            "check-corpus: {name}: flow {} ({instructions} instructions, {records} records), \
             coverage {}",
            if flow_ok { "identical" } else { "DIFFERS" },
            if cov_ok { "identical" } else { "DIFFERS" },
        );
        if !flow_ok {
            failures.push(format!(
                "{name}.flow: {}",
                first_difference(&old_text, &new_text)
            ));
        }
        if !cov_ok {
            failures.push(format!("{name}.cov.json differs"));
        }
        if let (Some(old), Some(new)) = (&tasks, &new_tasks) {
            let old_text = fs::read_to_string(old)
                .map_err(|e| format!("cannot read {}: {e}", old.display()))?;
            let new_text = fs::read_to_string(new)
                .map_err(|e| format!("cannot read {}: {e}", new.display()))?;
            let same = old_text == new_text;
            println!(
                "check-corpus: {name}: task record {}",
                if same { "identical" } else { "DIFFERS" }
            );
            if !same {
                failures.push(format!(
                    "{name}.tasks: {}",
                    first_difference(&old_text, &new_text)
                ));
            }
        }
    }
    println!(
        "check-corpus: {} fixtures, {total} instructions compared",
        entries.len()
    );
    let status = Command::new(python())
        .arg(corpus.join("tools/flow_check.py"))
        .arg(&fixtures)
        .status()
        .map_err(|e| format!("cannot run flow_check.py: {e}"))?;
    if !status.success() {
        failures.push("flow_check.py found a mismatch".into());
    }
    if args.iter().any(|a| a == "--qemu") {
        let status = Command::new(python())
            .arg(corpus.join("tools/qemu_check.py"))
            .arg(&fixtures)
            .status()
            .map_err(|e| format!("cannot run qemu_check.py: {e}"))?;
        if !status.success() {
            failures.push("qemu comparison failed".into());
        }
    }
    let _ = fs::remove_dir_all(&scratch);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("check-corpus:\n  {}", failures.join("\n  ")))
    }
}
