//! The converting form of the command line: outputs, clock, symbols, the
//! bundled example, the summary.

use super::{exit, fail, input_code, SourceArgs};
use crate::outputs_cli::{output_failure, OutputArgs};
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use trace_convert::clock::ClockKind;
use trace_convert::convert::{
    self, ClockChoice, ConvertError, ConvertOptions, ConvertReport, Converter,
};
use trace_convert::escape::{escaped, guarded};
use trace_convert::input::capture::ReadError;
use trace_convert::input::memory::{no_memory_warning, ExtraMemory, Images, MemArg};
use trace_convert::input::saved::format::{Header, ImageInfo, SourceInfo};
use trace_convert::input::saved::SavedEvents;
use trace_convert::input::snapshot::is_snapshot;
use trace_convert::input::{self, Input};
use trace_convert::output::OutputPlan;
use trace_convert::plural::plural;
use trace_convert::sinks::folded::Weight;
use trace_convert::sinks::lcov::coverage::LcovOptions;
use trace_convert::sinks::registry::{self, Format, Setup, FORMATS};
use trace_convert::sinks::report::ReportOptions;
use trace_convert::symbols::path_map::PathMap;
use trace_convert::symbols::Symbolizer;
use trace_convert::tasks::{TaskOptions, TaskReport};
use trace_core::memory::MemoryImage;

/// The bundled example, relative to the repository root: a snapshot
/// directory (with the program's ELF beside its `snapshot.ini`).
pub const EXAMPLE_DIR: &str = "examples/snapshot";

/// Outputs, symbols and clock of a conversion.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// A snapshot directory (snapshot.ini) or a capture file; none at all
    /// converts the bundled example into ./out/.
    #[arg(value_name = "SNAPSHOT_DIR|FILE")]
    path: Option<PathBuf>,
    #[command(flatten)]
    source: SourceArgs,
    /// An ELF file: code for decoding, symbols and DWARF lines for the
    /// outputs (repeatable). Example: --elf app.elf
    #[arg(help_heading = "Code and symbols", long = "elf", value_name = "FILE")]
    elf: Vec<PathBuf>,
    /// A raw binary and its load address (repeatable). Example:
    /// --mem code.bin@0x80000000
    #[arg(
        help_heading = "Code and symbols",
        long = "mem",
        value_name = "FILE@ADDRESS"
    )]
    mem: Vec<MemArg>,
    /// Function names from a kernel symbol list, /proc/kallsyms or
    /// System.map (`ADDRESS TYPE NAME [MODULE]`), for code without an ELF
    /// file (repeatable). Example: --kallsyms System.map
    #[arg(
        help_heading = "Code and symbols",
        long = "kallsyms",
        value_name = "FILE"
    )]
    kallsyms: Vec<PathBuf>,
    #[command(flatten)]
    outputs: OutputArgs,
    #[command(flatten)]
    window: crate::window_cli::WindowArgs,
    /// Convert events saved by --save-events instead of decoding a
    /// capture. Example: --from-events run.events --folded app.folded
    #[arg(
        help_heading = "Input",
        long,
        value_name = "FILE",
        conflicts_with = "path"
    )]
    from_events: Option<PathBuf>,
    /// With --from-events: go on (with a warning) when an --elf or --mem
    /// file is not one the events were decoded with. Without it such a
    /// file is refused, as its names and lines would describe another
    /// program.
    #[arg(help_heading = "Input", long, requires = "from_events")]
    ignore_image_mismatch: bool,
    /// LCOV: also report every conditional instruction that is not a
    /// branch as a two-way branch (passed, failed). Only ETMv3 traces their
    /// outcome (one atom per instruction); under PTM they are left out.
    /// Example: --lcov app.info --lcov-conditionals
    #[arg(help_heading = "Outputs", long)]
    lcov_conditionals: bool,
    /// Weight of folded stacks: instructions, or cycles (cycle-accurate
    /// trace). Example: --folded-weight cycles
    #[arg(help_heading = "Outputs", long, value_enum, default_value_t = WeightArg::Instructions)]
    folded_weight: WeightArg,
    /// The time axis: auto picks cycles for cycle-accurate trace, else
    /// timestamps, else instruction count. Example: --clock instructions
    #[arg(help_heading = "Time and windows", long, value_enum, default_value_t = ClockArg::Auto)]
    clock: ClockArg,
    /// Processor clock in Hz, to show cycle counts as time (default: one
    /// cycle shown as 1 ns). Example: --cpu-hz 1.2e9
    #[arg(help_heading = "Time and windows", long, value_name = "HZ", value_parser = parse_hz)]
    cpu_hz: Option<f64>,
    /// Timestamp counter frequency in Hz (default: one tick shown as
    /// 1 ns). Example: --timestamp-hz 100e6
    #[arg(help_heading = "Time and windows", long, value_name = "HZ", value_parser = parse_hz)]
    timestamp_hz: Option<f64>,
    /// Deepest call stack kept; deeper calls are counted and dropped.
    /// Example: --max-depth 256
    #[arg(help_heading = "Outputs", long, value_name = "N", default_value_t = 1024, value_parser = parse_depth)]
    max_depth: usize,
    /// Show no inlined functions: by default code that DWARF says was
    /// inlined gets frames of its own (the inlined function above the one
    /// it was inlined into) in the Chrome, Perfetto and folded outputs,
    /// rows in the report and FN records in LCOV; with this flag it counts
    /// for the function it was inlined into everywhere.
    /// Example: --no-inline
    #[arg(help_heading = "Code and symbols", long)]
    no_inline: bool,
    /// Rewrite source paths that begin with FROM to begin with TO
    /// (repeatable: the first that matches; paths get `/` separators
    /// first, and so do FROM and TO), in LCOV and every other output that
    /// names source files, so that they lead to the sources on this
    /// machine. Example: --path-map 'C:\ti\sdk=/opt/ti/sdk'
    #[arg(
        help_heading = "Code and symbols",
        long,
        value_name = "FROM=TO",
        value_parser = parse_path_map
    )]
    pub path_map: Vec<String>,
    /// Keep function names as the ELF files spell them: by default C++
    /// and Rust mangled names are demangled (`_ZN4demo8crc_taskEv` is
    /// shown as `demo::crc_task()`).
    /// Example: --no-demangle
    #[arg(help_heading = "Code and symbols", long)]
    no_demangle: bool,
    /// Find no RTOS tasks: by default the code of each task gets a call
    /// stack, a timeline track and folded stacks of its own, found from
    /// the flow alone (docs/tasks.md). Example: --no-tasks
    #[arg(help_heading = "Code and symbols", long)]
    no_tasks: bool,
    /// A function that resumes or starts another task where it leaves (a
    /// scheduler exit or context restore the known RTOS routines do not
    /// name), repeatable. Example: --task-switch my_restore_context
    #[arg(help_heading = "Code and symbols", long, value_name = "SYMBOL")]
    task_switch: Vec<String>,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// How `report` makes its table (set by that subcommand).
    #[arg(skip)]
    pub report: ReportOptions,
}

impl ConvertArgs {
    /// The outputs, to add one.
    pub fn outputs_mut(&mut self) -> &mut OutputArgs {
        &mut self.outputs
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum WeightArg {
    /// Instructions executed.
    Instructions,
    /// Processor cycles (cycle-accurate trace).
    Cycles,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ClockArg {
    /// Cycles, else timestamps, else instructions, from the configuration.
    Auto,
    /// Cycle counts.
    Cycles,
    /// Timestamps.
    Timestamps,
    /// Instruction count.
    Instructions,
}

/// Frequencies accepted, in Hz: 1 kHz to 100 GHz (a slower or faster
/// processor or timestamp counter is surely a typing mistake).
const HZ_BOUNDS: (f64, f64) = (1e3, 1e11);

fn parse_hz(s: &str) -> Result<f64, String> {
    let (lo, hi) = HZ_BOUNDS;
    match s.trim().parse::<f64>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        Ok(v) if v.is_finite() && v > 0.0 => Err(format!(
            "{s} Hz is outside the frequencies accepted, {lo:e} (1 kHz) to {hi:e} (100 GHz)"
        )),
        _ => Err(format!("`{s}` is not a positive frequency in Hz")),
    }
}

/// Call-stack depths accepted by `--max-depth`.
const DEPTH_BOUNDS: (usize, usize) = (1, 1_000_000);

/// A `--path-map` value: `FROM=TO`, FROM not empty.
pub fn parse_path_map(s: &str) -> Result<String, String> {
    PathMap::new().add_spec(s)?;
    Ok(s.to_owned())
}

/// The path map of `--path-map` values (each checked by
/// [`parse_path_map`]).
pub fn path_map(specs: &[String]) -> PathMap {
    let mut map = PathMap::new();
    for s in specs {
        // Checked when parsed.
        let _ = map.add_spec(s);
    }
    map
}

fn parse_depth(s: &str) -> Result<usize, String> {
    let (lo, hi) = DEPTH_BOUNDS;
    match s.trim().parse::<usize>() {
        Ok(v) if (lo..=hi).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a depth from {lo} to {hi}")),
    }
}

/// One output: its format, where, and whether it goes into the output
/// folder (which is then made when the outputs are committed).
#[derive(Debug, Clone)]
struct Target {
    format: &'static Format,
    path: PathBuf,
    in_folder: bool,
}

/// Where each output goes, in the order of [`FORMATS`]: the files given,
/// and those of `folder` for the formats not given (those that need
/// source lines only `with_lines`).
fn targets(outputs: &OutputArgs, folder: Option<&Path>, with_lines: bool) -> Vec<Target> {
    let mut v = Vec::new();
    for format in FORMATS {
        if let Some(p) = outputs.file(format) {
            v.push(Target {
                format,
                path: p.to_path_buf(),
                in_folder: false,
            });
            continue;
        }
        let Some(dir) = folder else { continue };
        let Some(name) = format.in_folder else {
            continue;
        };
        if format.needs.lines && !with_lines {
            continue;
        }
        v.push(Target {
            format,
            path: dir.join(name),
            in_folder: true,
        });
    }
    v
}

/// Find the bundled example: [`EXAMPLE_DIR`] beside the sources this
/// binary was built from, else below the current directory; failing both,
/// the first snapshot directory (by name) in either `examples` folder.
fn find_example() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bases = [root, PathBuf::from(".")];
    if let Some(p) = bases
        .iter()
        .map(|b| b.join(EXAMPLE_DIR))
        .find(|p| is_snapshot(p))
    {
        return Some(p);
    }
    bases.iter().find_map(|b| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(b.join("examples"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| is_snapshot(p))
            .collect();
        dirs.sort();
        dirs.into_iter().next()
    })
}

/// ELF files in the example directory.
fn elves_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "elf"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Run a conversion as `args` say; the exit code (messages printed).
pub fn run(args: &ConvertArgs) -> ExitCode {
    match convert_as(args, None) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// A view that watches a conversion as it goes (`top`): a sink of its
/// own among the outputs' (none needed), a stop flag that also ends a
/// stream, and what it does while the decode runs.
pub trait Watch {
    /// Its sink.
    fn sink(&mut self) -> Box<dyn trace_convert::sinks::DynSink + 'static>;
    /// The flag that stops the decode (and a stream).
    fn stop(&self) -> input::stream::Stop;
    /// The input is about to be decoded: `name` names it, `received`
    /// counts a stream's bytes (`None`: a file, of `size` bytes).
    fn started(&mut self, name: &str, received: Option<input::stream::Received>, size: u64);
    /// How far the decode has got (a file's byte offset).
    fn progress(&mut self) -> &mut dyn trace_convert::progress::Progress;
    /// The decode has ended (`ok`) or failed: show the last view as asked
    /// (not held after a failure, whose message follows), and give the
    /// terminal back.
    fn ended(&mut self, ok: bool);
}

/// Run a conversion as `args` say, watched by `watch`; the exit code
/// (messages printed).
pub fn run_watched(args: &ConvertArgs, watch: &mut dyn Watch) -> ExitCode {
    match convert_as(args, Some(watch)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => code,
    }
}

/// A [`trace_convert::progress::Progress`] through a `&mut dyn`.
struct DynProgress<'a>(&'a mut dyn trace_convert::progress::Progress);

impl trace_convert::progress::Progress for DynProgress<'_> {
    fn start(&mut self, path: &Path, size: u64) {
        self.0.start(path, size);
    }
    fn at(&mut self, offset: u64) {
        self.0.at(offset);
    }
    fn done(&mut self) {
        self.0.done();
    }
}

/// The steps of [`run`]: every output and input checked, then the
/// symbols, input and memory read, before any output is created; then
/// one conversion into all of them, committed together.
fn convert_as(args: &ConvertArgs, watch: Option<&mut dyn Watch>) -> Result<(), ExitCode> {
    let (path, elves, example) = choose_input(args)?;
    let saved = args.from_events.is_some()
        || input::Kind::detect(&path).is_ok_and(|k| k == input::Kind::SavedEvents);
    let targets = if watch.is_some() && args.outputs.is_empty() {
        Vec::new()
    } else {
        choose_targets(args, &path, example, !elves.is_empty(), saved)?
    };
    let mut plan = plan_outputs(args, &targets, &path, &elves)?;
    check_input_path(Some(&path))?;
    let symbols = load_symbols(args, &elves, &targets)?;
    let extra = ExtraMemory {
        elves,
        raw: args.mem.clone(),
    };
    let stop = watch.as_ref().map(|w| w.stop());
    let input = open_input(args, &path, &extra, &mut plan, stop)?;
    if let Some(saved) = &input.saved {
        check_images(saved, &extra.elves, &args.mem, args.ignore_image_mismatch)
            .map_err(|e| fail(exit::INPUT, e))?;
    }
    let options = convert_options(args, &input);
    let clock = options.clock_for(&input);
    eprintln!("trace-convert: {}", clock.describe());
    let window = args.window.spec(crate::window_cli::window_ids(
        Some(&input),
        &args.source.trace_id,
    ));
    let windowed = !window.is_everything();
    let window = if windowed {
        Some(window.on(&clock).map_err(|e| fail(exit::USAGE, e))?)
    } else {
        None
    };
    let read = read_for_sinks(&targets, &input, &extra)?;
    let mut set = crate::outputs_cli::create(plan)?;
    let weight = folded_weight(args);
    let setup = Setup {
        symbols: &symbols,
        code: read.code,
        header: read.header,
        folded_weight: weight,
        lcov: LcovOptions {
            test_name: None,
            conditional_instructions: args.lcov_conditionals,
        },
        report: args.report,
    };
    let mut conv = Converter::new(&symbols, clock, options.max_depth)
        .with_decode_options(crate::jobs::decode_options());
    conv.set_task_options(&TaskOptions {
        on: !args.no_tasks,
        switches: args.task_switch.clone(),
    });
    if let Some(w) = window {
        conv.set_window(w);
    }
    for (t, out) in targets.iter().zip(set.writers()) {
        let sink = (t.format.open)(out, &setup).map_err(|e| {
            // An input the sink reads (DWARF) rather than its output.
            let input = e.kind() == std::io::ErrorKind::InvalidData;
            fail(if input { exit::INPUT } else { exit::OUTPUT }, e)
        })?;
        conv.add_sink(sink);
    }
    input.captures.iter().for_each(super::print_skipped);
    let report = match watch {
        Some(w) => {
            conv.add_sink(w.sink());
            let received = input
                .captures
                .iter()
                .find_map(|c| c.stream.as_ref().map(|s| s.live.received.clone()));
            let size = input.captures.iter().map(|c| c.size()).sum();
            w.started(&path.display().to_string(), received, size);
            let done =
                convert::convert_loaded(&input, &read.images, conv, &mut DynProgress(w.progress()));
            w.ended(done.is_ok());
            done
        }
        None => {
            let stream = input.captures.iter().find_map(|c| c.stream.as_ref());
            let mut bar = crate::progress_bar::Bar::new(!args.no_progress && input.saved.is_none())
                .streaming(stream.map(|s| s.live.received.clone()));
            convert::convert_loaded(&input, &read.images, conv, &mut bar)
        }
    }
    .map_err(|e| conversion_failure(&e))?;
    check_decoded(args, &input, &report)?;
    // Every output is complete: all of them take their final names now.
    set.commit().map_err(|e| output_failure(&e))?;
    print_summary(&report, windowed);
    for n in &report.notes {
        eprintln!("trace-convert: note: {}", guarded(n));
    }
    if let (Some(names), Some(w)) = (args.window.functions_alone(), report.window) {
        if w.shown == 0 {
            eprintln!(
                "trace-convert: --function {}: no function of that name was ever on a call stack \
                 (the names are those the outputs show: `trace-convert report` lists them)",
                names
                    .iter()
                    .map(|n| escaped(n))
                    .collect::<Vec<_>>()
                    .join(", --function ")
            );
        }
    }
    let cycles: u64 = report.ids.values().map(|r| r.cycles).sum();
    let folded = targets.iter().any(|t| t.format.flag == "folded");
    if folded && weight == Weight::Cycles && cycles == 0 {
        eprintln!(
            "trace-convert: note: the trace has no cycle counts (not cycle-accurate): \
             every folded weight is 0; use --folded-weight instructions"
        );
    }
    print_written(&targets, example);
    Ok(())
}

/// The input path (`--from-events` names one too), the ELF files and
/// whether the bundled example is converted (no input given: the
/// example's directory, with the ELF files in it).
fn choose_input(args: &ConvertArgs) -> Result<(PathBuf, Vec<PathBuf>, bool), ExitCode> {
    let mut elves = args.elf.clone();
    let given = args.path.as_ref().or(args.from_events.as_ref());
    let example = given.is_none();
    let path = match given {
        Some(p) => p.clone(),
        None => {
            let Some(dir) = find_example() else {
                return Err(fail(
                    exit::INPUT,
                    format!(
                        "no input given and the bundled example ({EXAMPLE_DIR} in the repository) was not found; \
                         give a snapshot directory or capture file (see --help)"
                    ),
                ));
            };
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            eprintln!(
                "trace-convert: no input given: converting the bundled example {}",
                dir.display()
            );
            elves.extend(elves_in(&dir));
            dir
        }
    };
    Ok((path, elves, example))
}

/// Refuse an input that does not exist, or a folder that is not a
/// snapshot, before anything is read.
fn check_input_path(path: Option<&Path>) -> Result<(), ExitCode> {
    let Some(p) = path else {
        return Ok(());
    };
    match input::Kind::detect(p) {
        Err(e) => Err(fail(input_code(&e), e)),
        Ok(input::Kind::Snapshot) if p.join("snapshot.ini").symlink_metadata().is_err() => {
            Err(fail(
                exit::INPUT,
                input::InputError::NotASnapshot(p.to_path_buf()),
            ))
        }
        Ok(_) => Ok(()),
    }
}

/// The outputs to write (into `out` for the bundled example when none is
/// given), refused when there are none, when one needs a capture and
/// the input is `saved` events, or when `--out-dir` names a file.
fn choose_targets(
    args: &ConvertArgs,
    path: &Path,
    example: bool,
    with_lines: bool,
    saved: bool,
) -> Result<Vec<Target>, ExitCode> {
    let out_dir = args.outputs.out_dir();
    let mut targets = targets(&args.outputs, out_dir, with_lines);
    if example && targets.is_empty() {
        targets = self::targets(&args.outputs, Some(Path::new("out")), true);
    }
    if targets.is_empty() {
        if let Some(p) = Some(path).filter(|p| !p.exists()) {
            // A missing input, as with a subcommand (and not one either).
            return Err(fail(
                exit::INPUT,
                format!(
                    "{}: no such file or directory (nor a subcommand: packets, decode, convert, report; see --help)",
                    p.display()
                ),
            ));
        }
        let flags: Vec<String> = FORMATS.iter().map(|f| format!("--{}", f.flag)).collect();
        return Err(fail(
            exit::USAGE,
            format!(
                "nothing to write: give {} or --out-dir (see --help)",
                flags.join(", ")
            ),
        ));
    }
    if saved {
        if let Some(t) = targets.iter().find(|t| t.format.needs.capture) {
            return Err(fail(
                exit::USAGE,
                format!(
                    "--{} needs a capture to decode, not --from-events",
                    t.format.flag
                ),
            ));
        }
    }
    if let Some(dir) = out_dir {
        if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
            return Err(fail(
                exit::OUTPUT,
                format!(
                    "--out-dir {}: is a file, not a folder (give a folder to write the outputs into)",
                    dir.display()
                ),
            ));
        }
    }
    Ok(targets)
}

/// Every output checked before anything is read: none may be another
/// output or an input named on the command line.
fn plan_outputs(
    args: &ConvertArgs,
    targets: &[Target],
    path: &Path,
    elves: &[PathBuf],
) -> Result<OutputPlan, ExitCode> {
    let out_dir = args.outputs.out_dir();
    let mut plan = OutputPlan::new();
    for t in targets {
        let flag = format!("--{}", t.format.flag);
        let label = if t.in_folder { "--out-dir" } else { &flag };
        // An output given inside the output folder may wait for it too.
        let make_folders = t.in_folder || out_dir.is_some_and(|d| t.path.starts_with(d));
        plan.add(label, &t.path, make_folders)
            .map_err(|e| output_failure(&e))?;
    }
    let named = std::iter::once(path)
        .chain(elves.iter().map(PathBuf::as_path))
        .chain(args.mem.iter().map(|m| m.path.as_path()))
        .chain(args.kallsyms.iter().map(PathBuf::as_path));
    plan.check_inputs(named).map_err(|e| output_failure(&e))?;
    Ok(plan)
}

/// The flag of the first output that needs what `need` picks, for
/// messages.
fn needing(targets: &[Target], need: fn(&registry::Needs) -> bool) -> Option<String> {
    targets
        .iter()
        .find(|t| need(&t.format.needs))
        .map(|t| format!("--{}", t.format.flag))
}

/// The symbols of `elves`, with notes on what they lack; refused when an
/// output needs source lines they do not give.
fn load_symbols(
    args: &ConvertArgs,
    elves: &[PathBuf],
    targets: &[Target],
) -> Result<Symbolizer, ExitCode> {
    let mut symbols = Symbolizer::default();
    symbols.set_demangle(!args.no_demangle);
    symbols.set_path_map(path_map(&args.path_map));
    for e in elves {
        symbols.add_elf(e).map_err(|e| fail(exit::INPUT, e))?;
    }
    for k in &args.kallsyms {
        symbols.add_kallsyms(k).map_err(|e| fail(exit::INPUT, e))?;
    }
    symbols.set_inline_scopes(!args.no_inline);
    for p in symbols.dwarf_problems() {
        eprintln!(
            "trace-convert: warning: DWARF section not readable: {}: that file gives no source lines",
            guarded(p)
        );
    }
    if symbols.is_empty() {
        eprintln!(
            "trace-convert: note: no ELF file given (--elf, or --kallsyms for a kernel): functions are named by address (0x...)"
        );
    } else if !symbols.has_lines() && !elves.is_empty() {
        eprintln!("trace-convert: note: the ELF files have no DWARF line information");
    }
    if let Some(flag) = needing(targets, |n| n.lines) {
        let problems = symbols.check_dwarf();
        if let Some(p) = problems.first() {
            return Err(fail(
                exit::INPUT,
                format!(
                    "{flag}: DWARF section not readable: {p}: the coverage would be incomplete"
                ),
            ));
        }
        if !symbols.has_lines() {
            return Err(fail(
                exit::USAGE,
                format!("{flag} needs an ELF file with DWARF line information (--elf app.elf)"),
            ));
        }
    }
    Ok(symbols)
}

/// The input at `path`, with its notes, a warning for each source
/// without memory, and its own files (known once its `.ini` files are
/// read) checked against the outputs; with `--from-events`, only saved
/// events.
fn open_input(
    args: &ConvertArgs,
    p: &Path,
    extra: &ExtraMemory,
    plan: &mut OutputPlan,
    stop: Option<input::stream::Stop>,
) -> Result<Input, ExitCode> {
    let mut input = if args.from_events.is_some() {
        input::saved::open(p).map_err(|e| fail(input_code(&e), e))?
    } else {
        args.source.resolve_stopped(p, stop)?
    };
    args.source
        .keep_ids(&mut input)
        .map_err(|e| fail(exit::CONFIG, e))?;
    super::print_notes(&input);
    for s in input.captures.iter().flat_map(|c| &c.sources) {
        if s.protocol.traces_instructions() && !input.has_memory(&s.name, extra) {
            eprintln!("trace-convert: {}", guarded(&no_memory_warning(&s.name)));
        }
    }
    plan.check_inputs(input.files().iter().map(PathBuf::as_path))
        .map_err(|e| output_failure(&e))?;
    Ok(input)
}

/// The settings of the conversion; the timestamp frequency, when not
/// given, from the snapshot's `trace.ini`.
fn convert_options(args: &ConvertArgs, input: &Input) -> ConvertOptions {
    ConvertOptions {
        clock: match args.clock {
            ClockArg::Auto => ClockChoice::Auto,
            ClockArg::Cycles => ClockChoice::Fixed(ClockKind::Cycles),
            ClockArg::Timestamps => ClockChoice::Fixed(ClockKind::Timestamps),
            ClockArg::Instructions => ClockChoice::Fixed(ClockKind::Instructions),
        },
        cpu_hz: args.cpu_hz,
        timestamp_hz: args.timestamp_hz.or_else(|| {
            input
                .snapshot
                .as_ref()
                .and_then(|s| s.timestamp_hz)
                .map(|hz| hz as f64)
        }),
        max_depth: args.max_depth,
    }
}

fn folded_weight(args: &ConvertArgs) -> Weight {
    match args.folded_weight {
        WeightArg::Instructions => Weight::Instructions,
        WeightArg::Cycles => Weight::Cycles,
    }
}

/// What the conversion and the sinks read, read before any output is
/// created.
struct SinkReads {
    /// The memory image of every source, loaded once: the decode reads
    /// them, and the outputs that look at code are given the first
    /// source's.
    images: Images,
    /// The code image, for the formats that need it.
    code: Option<Arc<dyn MemoryImage>>,
    /// The saved-events header, for a run that decodes a capture.
    header: Option<Header>,
}

fn read_for_sinks(
    targets: &[Target],
    input: &Input,
    extra: &ExtraMemory,
) -> Result<SinkReads, ExitCode> {
    let images = input.images(extra).map_err(|e| fail(exit::INPUT, e))?;
    let code = needing(targets, |n| n.code).map(|_| {
        let first = input
            .captures
            .iter()
            .flat_map(|c| &c.sources)
            .next()
            .map_or("", |s| s.name.as_str());
        images.of(first)
    });
    let header = match (
        input.saved.is_none(),
        needing(targets, |n| n.capture).is_some(),
    ) {
        (true, true) => Some(events_header(input, extra).map_err(|e| fail(exit::INPUT, e))?),
        _ => None,
    };
    Ok(SinkReads {
        images,
        code,
        header,
    })
}

/// The exit code and message of a failed conversion.
fn conversion_failure(e: &ConvertError) -> ExitCode {
    let code = match e {
        ConvertError::Input(i) => input_code(i),
        ConvertError::Memory(_) | ConvertError::Symbols(_) => exit::INPUT,
        ConvertError::Read { source, .. } => match source {
            ReadError::Input(i) => input_code(i),
            ReadError::Io { .. } => exit::INPUT,
            _ => exit::OUTPUT,
        },
        _ => exit::OUTPUT,
    };
    fail(code, e)
}

/// Refuse a run that read capture bytes of instruction trace and decoded
/// nothing from them (no output takes its final name; see
/// [`super::nothing_decoded`]), and warn of one that decoded instructions
/// from a capture whose bytes fit other flags ([`super::misfit_warning`]);
/// saved events are taken as they are.
fn check_decoded(
    args: &ConvertArgs,
    input: &Input,
    report: &ConvertReport,
) -> Result<(), ExitCode> {
    if input.saved.is_some() || !input.expects_instructions() {
        return Ok(());
    }
    let bytes: u64 = report.captures.iter().map(|(_, b)| b).sum();
    let instructions: u64 = report.ids.values().map(|r| r.instructions).sum();
    let nacc: u64 = report
        .ids
        .values()
        .map(|r| r.nacc.values().sum::<u64>())
        .sum();
    let flags = args.source.flags();
    if let Some(why) = super::nothing_decoded(input, &flags, bytes, instructions, nacc) {
        return Err(fail(exit::CONFIG, why));
    }
    if let Some(w) = super::misfit_warning(input, &flags, instructions) {
        eprintln!("trace-convert: warning: {}", guarded(&w));
    }
    Ok(())
}

/// List the outputs written and how to open each (`example`: of the
/// bundled example, whose source paths lead from the repository root).
fn print_written(targets: &[Target], example: bool) {
    if targets.is_empty() {
        return;
    }
    eprintln!("trace-convert: wrote:");
    for t in targets {
        let what = t.format.what;
        if t.path.as_os_str() == "-" {
            eprintln!("  {what:<15} standard output");
        } else {
            let p = t.path.display().to_string();
            let note = if example && t.format.flag == "lcov" {
                "; the example's lead from the repository root"
            } else {
                ""
            };
            eprintln!(
                "  {what:<15} {p}  ({}{note})",
                t.format.how_to_open.replace("FILE", &p)
            );
        }
    }
}

fn print_summary(r: &ConvertReport, windowed: bool) {
    for (path, bytes) in &r.captures {
        eprintln!(
            "trace-convert: {}: {}",
            escaped(&path.display().to_string()),
            plural(*bytes, "byte")
        );
    }
    for (id, p) in &r.parsed {
        if !r.ids.contains_key(id) {
            eprintln!(
                "trace-convert: ID {id:#04x}: {}, {}, {} skipped, no instructions decoded",
                plural(p.bytes, "byte"),
                plural(p.packets, "packet"),
                plural(p.skipped, "byte")
            );
        }
    }
    for (id, c) in &r.ids {
        let mut line = format!("trace-convert: ID {id:#04x}: ");
        if let Some(p) = r.parsed.get(id) {
            line.push_str(&format!(
                "{}, {}, {} skipped, ",
                plural(p.bytes, "byte"),
                plural(p.packets, "packet"),
                plural(p.skipped, "byte")
            ));
        }
        line.push_str(&format!(
            "{} in {}, {}, {}, {} trace-on",
            plural(c.instructions, "instruction"),
            plural(c.ranges, "range"),
            plural(c.exceptions, "exception"),
            plural(c.gaps, "gap"),
            c.trace_on
        ));
        if c.cycles > 0 {
            line.push_str(&format!(", {}", plural(c.cycles, "cycle")));
        }
        let nacc: u64 = c.nacc.values().sum();
        if nacc > 0 {
            let top: Vec<String> = c
                .top_nacc(3)
                .iter()
                .map(|(a, n)| format!("{a:#010x} ×{n}"))
                .collect();
            line.push_str(&format!(
                ", {nacc} memory not accessible (most: {})",
                top.join(", ")
            ));
        }
        eprintln!("{}", guarded(&line));
        if c.cycles_ignored > 0 {
            let at: Vec<String> = c.cycles_ignored_at.iter().map(u64::to_string).collect();
            eprintln!(
                "trace-convert: ID {id:#04x}: {} ignored: the source is not cycle-accurate (ETMCR bit 12 clear), so its trace carries no cycle counts; first at offset {}{}",
                plural(c.cycles_ignored, "cycle count"),
                at.join(", "),
                if c.cycles_ignored > at.len() as u64 { ", ..." } else { "" }
            );
        }
        for line in c.mismatches.lines(*id) {
            eprintln!("trace-convert: {}", guarded(&line));
        }
    }
    if let Some(w) = r.window.filter(|w| w.unplaced > 0) {
        eprintln!(
            "trace-convert: warning: {} ({}) came before their source's first timestamp: \
             they have no place on the timestamp axis and are left out of every output \
             (--clock cycles keeps them, each core from its own zero)",
            plural(w.unplaced, "event"),
            plural(w.unplaced_instructions, "instruction")
        );
    }
    if let Some(w) = r.window.filter(|_| windowed) {
        eprintln!(
            "trace-convert: window: {} of {} handed to the outputs ({} in ranges)",
            plural(w.shown, "event"),
            w.shown + w.hidden,
            plural(w.instructions, "instruction")
        );
        if w.shown == 0 {
            eprintln!(
                "trace-convert: warning: the window holds no event: check --since, --until, --function and --trace-id against the summary above"
            );
        }
    }
    print_tasks(&r.tasks);
    if r.stacks_built {
        let s = r.stacks;
        eprintln!(
            "trace-convert: call stacks: {} calls, {} returns ({} unmatched, {} inferred callers), {} tail calls, {} (at {}, {}, {} memory not accessible), deepest {}{}",
            s.calls,
            s.returns,
            s.unmatched_returns,
            s.inferred,
            s.tail_calls,
            plural(s.resets, "reset"),
            plural(s.resets_at_trace_on, "trace-on"),
            plural(s.resets_at_gaps, "gap"),
            s.resets_at_nacc,
            s.max_depth,
            if s.dropped > 0 {
                format!(", {} calls beyond the depth bound dropped", s.dropped)
            } else {
                String::new()
            }
        );
    }
}

/// The RTOS tasks found and their shares of the instructions, when any.
fn print_tasks(t: &TaskReport) {
    for name in &t.missing {
        eprintln!(
            "trace-convert: warning: --task-switch {}: no function of that name",
            escaped(name)
        );
    }
    if t.tasks.is_empty() {
        return;
    }
    let total: u64 = t.instructions.iter().map(|(_, n)| n).sum();
    let share = |n: u64| {
        if total == 0 {
            0.0
        } else {
            n as f64 * 100.0 / total as f64
        }
    };
    let mut cores: Vec<u8> = t.tasks.iter().map(|k| k.id).collect();
    cores.dedup();
    eprintln!(
        "trace-convert: tasks: {} on {}, {}",
        t.tasks.len(),
        plural(cores.len() as u64, "core"),
        if t.switches == 1 {
            "1 switch".to_owned()
        } else {
            format!("{} switches", t.switches)
        }
    );
    for (key, n) in &t.instructions {
        let name = match key.rtos.and_then(|k| t.task(k)) {
            Some(task) => format!("{} (trace ID {:#04x})", escaped(&task.name), task.id),
            None if cores.contains(&key.id) => {
                format!("before the first switch (trace ID {:#04x})", key.id)
            }
            None => continue,
        };
        eprintln!(
            "trace-convert:   {name}: {} ({:.1}%)",
            plural(*n, "instruction"),
            share(*n)
        );
    }
    if t.unresolved > 0 {
        eprintln!(
            "trace-convert: warning: {} of {} resumptions where several tasks waited could not be told apart (same code, same stack): their instructions are counted as `unknown`",
            t.unresolved, t.held
        );
    }
}

/// The header of a saved-events file for `input`.
fn events_header(input: &Input, extra: &ExtraMemory) -> Result<Header, String> {
    let mut images = Vec::new();
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(snap) = &input.snapshot {
        // Dumps are read through the snapshot folder, each file once (and
        // each device once, however many cores lie over it).
        let mut devices = std::collections::HashSet::new();
        let mut dumps: Vec<(&Path, &Path)> = input
            .captures
            .iter()
            .flat_map(|c| &c.sources)
            .filter_map(|s| snap.core_of(&s.name))
            .flat_map(|core| snap.layers(core))
            .filter(|device| devices.insert(device.name.as_str()))
            .flat_map(|device| {
                device
                    .dumps
                    .iter()
                    .map(|d| (d.file.as_path(), d.path.as_path()))
            })
            .collect();
        dumps.sort_unstable();
        dumps.dedup();
        for (file, shown) in dumps {
            let info = snap
                .open(file)
                .and_then(|f| ImageInfo::of_open(shown, f))
                .map_err(|e| format!("{}: {e}", shown.display()))?;
            images.push(info);
        }
    }
    paths.extend(extra.elves.iter().cloned());
    paths.extend(extra.raw.iter().map(|m| m.path.clone()));
    paths.sort();
    paths.dedup();
    for p in paths {
        images.push(ImageInfo::of_file(&p).map_err(|e| format!("{}: {e}", p.display()))?);
    }
    let sources = input
        .captures
        .iter()
        .flat_map(|c| &c.sources)
        .map(|s| SourceInfo {
            trace_id: s.id,
            protocol: s.protocol,
            core: convert::core_label(input, s),
        })
        .collect();
    Ok(Header {
        input: input
            .captures
            .first()
            .map(|c| c.path.display().to_string())
            .unwrap_or_default(),
        images,
        sources,
    })
}

/// Refuse `--elf` and `--mem` files that the saved events were not
/// decoded with (compared by size and contents hash): their
/// symbols and code would describe another program. With `ignore`, warn
/// instead.
fn check_images(
    saved: &SavedEvents,
    elves: &[PathBuf],
    mem: &[MemArg],
    ignore: bool,
) -> Result<(), String> {
    let (header, events) = (&saved.header, &saved.path);
    let given = elves.iter().chain(mem.iter().map(|m| &m.path));
    for p in given {
        let info = ImageInfo::of_file(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if header
            .images
            .iter()
            .any(|i| i.size == info.size && i.hash == info.hash)
        {
            continue;
        }
        let saved = if header.images.is_empty() {
            "none".to_owned()
        } else {
            header
                .images
                .iter()
                .map(|i| format!("{} ({} bytes)", input::shown::shown(&i.path), i.size))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let what = format!(
            "{}: not an image the events in {} were decoded with (those: {saved}); \
             its symbols and code would describe another program",
            p.display(),
            events.display()
        );
        if !ignore {
            return Err(format!("{what} (--ignore-image-mismatch to go on)"));
        }
        eprintln!("trace-convert: warning: {}", guarded(&what));
    }
    Ok(())
}
