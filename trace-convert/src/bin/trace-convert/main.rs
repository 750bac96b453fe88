//! `trace-convert`: decode CoreSight ETMv3/PTM trace captures.
//!
//! The command line over the `trace_convert` library, in this folder
//! only: the arguments (clap), the `packets` and `decode` listings here,
//! the conversion in `convert_cli`, the output checks in `outputs_cli`,
//! the progress bar in `progress_bar` and spelling suggestions in `typo`.
//! The library builds without any of it (the `cli` feature).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use trace_convert::input::capture::{self as dec, ReadError};
use trace_convert::input::flags::{Layout, SourceFlags};
use trace_convert::input::memory::Images;
use trace_convert::input::memory::{no_memory_warning, ExtraMemory};
use trace_convert::input::source::CaptureSpec;
use trace_convert::input::source::Protocol;
use trace_convert::input::{self, Input, InputError};
use trace_convert::plural::plural;
use trace_convert::profile::Profiles;
use trace_convert::sinks::listing::event_lines::EventListing;
use trace_convert::sinks::listing::events::EventFormat;
use trace_convert::sinks::listing::packet_lines::PacketListing;
use trace_convert::sinks::listing::packets::ListFormat;
use trace_convert::sinks::listing::symbolized::write_event_symbolized;
use trace_convert::symbols::Symbolizer;

mod assets_cli;
mod convert_cli;
mod counted;
mod jobs;
mod listing_threads;
mod outputs_cli;
mod progress_bar;
mod report_cli;
mod top_cli;
mod typo;
mod window_cli;

use convert_cli::ConvertArgs;
use listing_threads::{decode_pipelined, packets_pipelined, pipelines};
use outputs_cli::{listing_plan, output_failure, with_output};
use trace_convert::escape::{escaped, guarded};
use trace_convert::output::OutputPlan;

/// Decode CoreSight ETMv3 and PTM (PFT) program trace and convert it into
/// timelines, flame graphs and coverage.
///
/// Without a subcommand, converts a capture into any combination of
/// outputs in one decoding pass:
///
///   trace-convert snapshot_dir --chrome trace.json --perfetto trace.pftrace
///   trace-convert PTM_0_2.bin --protocol ptm --return-stack --elf app.elf --lcov app.info --folded app.folded
///   trace-convert snapshot_dir --out-dir out          (every format into out/)
///   trace-convert snapshot_dir --save-events ev.bin   (decode once...)
///   trace-convert --from-events ev.bin --lcov app.info --elf app.elf   (...convert later)
///
/// With no arguments at all, converts the bundled example into ./out/.
///
/// Outputs appear together when all are complete; a failed or interrupted
/// run leaves none of them and no temporary file. An output may not be an
/// input or another output; `-` is standard output.
#[derive(Debug, Parser)]
#[command(
    version,
    about,
    verbatim_doc_comment,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    convert: ConvertArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the packets of a capture.
    ///
    /// Examples:
    ///   trace-convert packets ../shared/testdata/opencsd/TC2
    ///   trace-convert packets --format jsonl --trace-id 0x13 TC2
    ///   trace-convert packets --protocol ptm --return-stack PTM_0_2.bin
    ///   trace-convert packets --protocol etm --layout frames --cycle-accurate etb.bin
    #[command(verbatim_doc_comment)]
    Packets(PacketsArgs),
    /// Decode the executed instruction flow (JSONL schema in docs/jsonl.md).
    ///
    /// Lists executed ranges, exceptions, context changes, timestamps and
    /// addresses the memory image does not cover; --instructions lists
    /// every instruction with its disassembly.
    ///
    /// Examples:
    ///   trace-convert decode ../shared/testdata/opencsd/tc2-ptm-rstk-t32
    ///   trace-convert decode --instructions --trace-id 0x13 TC2
    ///   trace-convert decode --protocol ptm --return-stack --mem code.bin@0x80000000 PTM_0_2.bin
    #[command(verbatim_doc_comment)]
    Decode(DecodeArgs),
    /// Convert into timelines, flame graphs and coverage (the same as
    /// giving the arguments without a subcommand).
    ///
    /// Examples:
    ///   trace-convert convert TC2 --chrome tc2.json --folded tc2.folded
    ///   trace-convert convert app.snapshot --elf app.elf --out-dir out
    #[command(verbatim_doc_comment)]
    Convert(ConvertArgs),
    /// Per-function report, as `perf report`: calls, self and total
    /// instructions (and cycles with cycle-accurate trace), sorted.
    ///
    /// Self counts what a function ran as the innermost frame (the folded
    /// stacks' weights), total what ran while it was on the stack.
    /// Takes every argument of `convert`; other outputs given are written
    /// from the same decode.
    ///
    /// Examples:
    ///   trace-convert report                       (the bundled example)
    ///   trace-convert report app.snapshot --elf app.elf --sort total
    ///   trace-convert report TC2 --format csv -o tc2.csv
    #[command(verbatim_doc_comment)]
    Report(report_cli::ReportArgs),
    /// A live view of the functions that run most, refreshed about once a
    /// second while a stream (or a file) decodes, as orbtop's: per RTOS
    /// task when tasks are known, exceptions per second and the trace's
    /// health (gaps, overflows). q or Ctrl-C quits.
    ///
    /// Takes every argument of `convert` (outputs are optional and are
    /// written from the same decode). See docs/live.md.
    ///
    /// Examples:
    ///   trace-convert top                          (the bundled example)
    ///   trace-convert top tcp://localhost:3443 --snapshot app.snapshot --elf app.elf
    ///   trace-convert top PTM_0_2.bin --protocol ptm --elf app.elf --once
    #[command(verbatim_doc_comment)]
    Top(top_cli::TopArgs),
    /// Shell completions and man pages (`cargo xtask assets` runs it).
    #[command(hide = true)]
    Assets(assets_cli::AssetsArgs),
}

#[derive(Debug, Args)]
struct DecodeArgs {
    #[command(flatten)]
    input: InputArgs,
    /// An ELF file whose loadable segments hold code (repeatable).
    #[arg(help_heading = "Code and symbols", long = "elf", value_name = "FILE")]
    elf: Vec<PathBuf>,
    /// A raw binary and its load address, FILE@ADDRESS (repeatable).
    #[arg(
        help_heading = "Code and symbols",
        long = "mem",
        value_name = "FILE@ADDRESS"
    )]
    mem: Vec<trace_convert::input::memory::MemArg>,
    /// Rewrite source paths that begin with FROM to begin with TO
    /// (repeatable; see `trace-convert --help`). Example: --path-map
    /// 'C:\ti\sdk=/opt/ti/sdk'
    #[arg(
        help_heading = "Code and symbols",
        long,
        value_name = "FROM=TO",
        value_parser = convert_cli::parse_path_map
    )]
    path_map: Vec<String>,
    /// List every instruction with its disassembly instead of ranges.
    #[arg(help_heading = "Listing", long)]
    instructions: bool,
    /// Listing format: readable text, one JSON object per line, or none
    /// (decode everything and print only the per-ID summary).
    #[arg(help_heading = "Listing", long, value_enum, default_value_t = DecodeFormatArg::Text)]
    format: DecodeFormatArg,
    /// Write the listing to FILE instead of standard output (`-`: standard
    /// output). The file appears only when the listing is complete.
    #[arg(help_heading = "Listing", short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// The listing formats of `decode`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum DecodeFormatArg {
    /// Readable lines.
    Text,
    /// One JSON object per line (schema in docs/jsonl.md).
    Jsonl,
    /// No listing: decode everything and print the per-ID summary only
    /// (refuses -o).
    None,
}

#[derive(Debug, Args)]
struct PacketsArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Listing format: readable text, or one JSON object per line.
    #[arg(help_heading = "Listing", long, value_enum, default_value_t = FormatArg::Text)]
    format: FormatArg,
    /// Write the listing to FILE instead of standard output (`-`: standard
    /// output). The file appears only when the listing is complete.
    #[arg(help_heading = "Listing", short, long, value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    /// One readable line per packet.
    Text,
    /// One JSON object per line (schema in docs/jsonl.md).
    Jsonl,
}

/// A value of `--protocol`: one per protocol of trace-core's registry,
/// named and described by it.
#[derive(Debug, Clone, Copy)]
struct ProtocolArg(Protocol);

/// Every value of `--protocol`.
const PROTOCOL_ARGS: [ProtocolArg; Protocol::ALL.len()] = {
    let mut args = [ProtocolArg(Protocol::ALL[0]); Protocol::ALL.len()];
    let mut i = 0;
    while i < args.len() {
        args[i] = ProtocolArg(Protocol::ALL[i]);
        i += 1;
    }
    args
};

impl ValueEnum for ProtocolArg {
    fn value_variants<'a>() -> &'a [Self] {
        &PROTOCOL_ARGS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.flag()).help(self.0.about()))
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LayoutArg {
    /// One source's raw bytes.
    Raw,
    /// CoreSight formatter frames (ETB, ETF, ETR buffers).
    Frames,
    /// CoreSight frames from a TPIU in continuous mode (with syncs).
    Tpiu,
}

/// Where the trace is and how it was configured.
#[derive(Debug, Args)]
struct InputArgs {
    /// A snapshot directory (snapshot.ini), a perf.data file or a capture
    /// file.
    #[arg(value_name = "SNAPSHOT_DIR|FILE")]
    path: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
}

/// How a capture file was configured (refines a snapshot's registers).
#[derive(Debug, Args)]
struct SourceArgs {
    /// Protocol of a capture file (required without a snapshot).
    #[arg(help_heading = "Input", long, value_enum)]
    protocol: Option<ProtocolArg>,
    /// Layout of a capture file.
    #[arg(help_heading = "Input", long, value_enum, default_value_t = LayoutArg::Raw)]
    layout: LayoutArg,
    /// Trace ID: reported for a raw capture, or the IDs decoded
    /// (repeatable).
    #[arg(help_heading = "Input", long, value_name = "ID", value_parser = parse_u8)]
    trace_id: Vec<u8>,
    /// The core traced: fills in its trace macrocell's protocol, ID
    /// registers (ETMIDR, ETMCCER) and exception numbering; explicit
    /// flags override it.
    #[arg(help_heading = "Trace configuration (capture files without a snapshot)", long, value_name = "CORE", value_parser = core_names())]
    core: Option<String>,
    /// Trace ID of the ITM/DWT source in a formatted capture whose other
    /// sources are of --protocol (or --core).
    #[arg(help_heading = "Input", long, value_name = "ID", value_parser = parse_u8)]
    itm_trace_id: Option<u8>,
    /// ETMCR register value, e.g. 0x10001000.
    #[arg(help_heading = "Trace configuration (capture files without a snapshot)", long, value_name = "VALUE", value_parser = parse_u32)]
    etmcr: Option<u32>,
    /// ETMCCER register value.
    #[arg(help_heading = "Trace configuration (capture files without a snapshot)", long, value_name = "VALUE", value_parser = parse_u32)]
    etmccer: Option<u32>,
    /// ETMIDR register value (architecture version and options).
    #[arg(help_heading = "Trace configuration (capture files without a snapshot)", long, value_name = "VALUE", value_parser = parse_u32)]
    etmidr: Option<u32>,
    /// Cycle-accurate trace (ETMCR bit 12).
    #[arg(
        help_heading = "Trace configuration (capture files without a snapshot)",
        long
    )]
    cycle_accurate: bool,
    /// Context ID size in bytes (ETMCR bits 15:14).
    #[arg(help_heading = "Trace configuration (capture files without a snapshot)", long, value_name = "N", value_parser = ["0", "1", "2", "4"])]
    context_id_bytes: Option<String>,
    /// Timestamps enabled (ETMCR bit 28).
    #[arg(
        help_heading = "Trace configuration (capture files without a snapshot)",
        long
    )]
    timestamps: bool,
    /// Timestamp size in bits (ETMCCER bit 29).
    #[arg(help_heading = "Trace configuration (capture files without a snapshot)", long, value_name = "BITS", value_parser = ["48", "64"])]
    timestamp_bits: Option<String>,
    /// VMID tracing enabled (ETMCR bit 30).
    #[arg(
        help_heading = "Trace configuration (capture files without a snapshot)",
        long
    )]
    vmid: bool,
    /// PTM return stack enabled (ETMCR bit 29).
    #[arg(
        help_heading = "Trace configuration (capture files without a snapshot)",
        long
    )]
    return_stack: bool,
    /// Branch broadcast: every branch traced with its address (ETMCR bit 8).
    #[arg(
        help_heading = "Trace configuration (capture files without a snapshot)",
        long
    )]
    branch_broadcast: bool,
    /// ETMv3 minor version, 3.0 to 3.5 (ETMIDR bits 7:4).
    #[arg(help_heading = "Trace configuration (capture files without a snapshot)", long, value_name = "VERSION", value_parser = ["3.0", "3.1", "3.2", "3.3", "3.4", "3.5"])]
    etm_version: Option<String>,
    /// ETMv3.4+ alternative branch address encoding (ETMIDR bit 20).
    #[arg(
        help_heading = "Trace configuration (capture files without a snapshot)",
        long
    )]
    alt_branch: bool,
    /// perf.data input: the directory under which the recorded files are
    /// found by their absolute path (as `perf report --symfs`).
    #[arg(help_heading = "Input", long, value_name = "DIR")]
    symfs: Option<PathBuf>,
    /// A stream's configuration (sources, registers, memory images) from
    /// this snapshot directory's first trace buffer, while its bytes come
    /// from the stream.
    #[arg(
        help_heading = "Streams (tcp://HOST:PORT, -, a FIFO)",
        long,
        value_name = "DIR"
    )]
    snapshot: Option<PathBuf>,
    /// End a stream after this long (e.g. 30s, 500ms, 2m; a number alone
    /// is seconds); it also ends when its peer closes it, or on Ctrl-C.
    #[arg(help_heading = "Streams (tcp://HOST:PORT, -, a FIFO)", long, value_name = "TIME", value_parser = parse_duration)]
    duration: Option<std::time::Duration>,
    /// Connect again when a TCP stream closes or drops (until Ctrl-C or
    /// --duration) rather than ending there (a close) or failing (a
    /// drop).
    #[arg(help_heading = "Streams (tcp://HOST:PORT, -, a FIFO)", long)]
    reconnect: bool,
}

/// A duration: a number and a unit (`ms`, `s`, `m`, `h`; none: seconds).
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("`{s}`: unknown unit `{u}` (ms, s, m or h)")),
    };
    num.parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e9)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("`{s}` is not a duration (e.g. 30s, 500ms, 2m)"))
}

/// The values of `--core`.
fn core_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(input::cores::CORES.iter().map(|c| c.flag))
}

fn parse_u32(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|e| format!("`{s}` is not a 32-bit number: {e}"))
}

fn parse_u8(s: &str) -> Result<u8, String> {
    let v = parse_u32(s)?;
    u8::try_from(v)
        .ok()
        .filter(|&v| v < 0x80)
        .ok_or_else(|| format!("`{s}` is not a trace ID (0 to 0x7f)"))
}

impl InputArgs {
    fn flags(&self) -> SourceFlags {
        self.source.flags()
    }
}

impl SourceArgs {
    /// Keep the sources of `input` that `--trace-id` names.
    fn keep_ids(&self, input: &mut input::Input) -> Result<(), String> {
        window_cli::keep_ids(input, &self.trace_id)
    }

    fn flags(&self) -> SourceFlags {
        let on = |b: bool| b.then_some(true);
        let core = self.core.as_deref().and_then(input::cores::core_preset);
        if let Some(c) = core {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("trace-convert: {}", c.assumed()));
        }
        SourceFlags {
            core,
            itm_trace_id: self.itm_trace_id,
            protocol: self.protocol.map(|p| p.0),
            layout: match self.layout {
                LayoutArg::Raw => Layout::Raw,
                LayoutArg::Frames => Layout::Frames,
                LayoutArg::Tpiu => Layout::Tpiu,
            },
            // One ID the input keeps itself; several, see `keep_ids`.
            trace_id: match self.trace_id.as_slice() {
                [id] => Some(*id),
                _ => None,
            },
            etmcr: self.etmcr,
            etmccer: self.etmccer,
            etmidr: self.etmidr,
            cycle_accurate: on(self.cycle_accurate),
            context_id_bytes: self
                .context_id_bytes
                .as_deref()
                .and_then(|s| s.parse().ok()),
            timestamps: on(self.timestamps),
            timestamp_64bit: self.timestamp_bits.as_deref().map(|b| b == "64"),
            vmid: on(self.vmid),
            return_stack: on(self.return_stack),
            branch_broadcast: on(self.branch_broadcast),
            etm_minor: self
                .etm_version
                .as_deref()
                .and_then(|v| v.strip_prefix("3."))
                .and_then(|m| m.parse().ok()),
            alt_branch: on(self.alt_branch),
            symfs: self.symfs.clone(),
            build_id_cache: build_id_cache(),
            snapshot: self.snapshot.clone(),
        }
    }

    /// The input at `path`, described by these flags; a stream is read as
    /// [`SourceArgs::live`] says. On failure, the exit code (the message is
    /// printed).
    fn resolve(&self, path: &Path) -> Result<Input, ExitCode> {
        self.resolve_stopped(path, None)
    }

    /// As [`SourceArgs::resolve`], a stream stopped by `stop` when given.
    fn resolve_stopped(
        &self,
        path: &Path,
        stop: Option<input::stream::Stop>,
    ) -> Result<Input, ExitCode> {
        let mut input = input::resolve(path, &self.flags()).map_err(|e| fail(input_code(&e), e))?;
        if input.is_stream() {
            input.set_live(&self.live(stop));
        } else if self.snapshot.is_some() || self.duration.is_some() || self.reconnect {
            return Err(fail(
                exit::USAGE,
                format!(
                    "{}: --snapshot, --duration and --reconnect are for streams \
                     (tcp://HOST:PORT, - for standard input, a FIFO)",
                    escaped(&path.display().to_string())
                ),
            ));
        }
        Ok(input)
    }

    /// How a stream input is read: until `--duration` or Ctrl-C (the next
    /// SIGINT or SIGTERM stops it, and the outputs of what arrived are
    /// committed), connecting again with `--reconnect`; stopped by `stop`
    /// too when given.
    fn live(&self, stop: Option<input::stream::Stop>) -> input::stream::Live {
        let live = input::stream::Live {
            duration: self.duration,
            reconnect: self.reconnect,
            stop: stop.unwrap_or_default(),
            ..input::stream::Live::default()
        };
        trace_convert::output::stop_streams_on_signal(live.stop.flag());
        live
    }
}

/// perf's build-ID cache: `$PERF_BUILDID_DIR`, else `~/.debug`.
fn build_id_cache() -> Option<PathBuf> {
    std::env::var_os("PERF_BUILDID_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")))
}

/// Exit codes (documented in docs/cli.md).
mod exit {
    pub const USAGE: u8 = 2;
    pub const INPUT: u8 = 3;
    pub const CONFIG: u8 = 4;
    pub const OUTPUT: u8 = 5;
}

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    // One line, whatever names from the inputs it quotes.
    let message = message.to_string();
    eprintln!("trace-convert: {}", guarded(&message));
    ExitCode::from(code)
}

fn input_code(e: &InputError) -> u8 {
    match e {
        InputError::NotFound(_) | InputError::NotASnapshot(_) | InputError::Saved { .. } => {
            exit::INPUT
        }
        _ => exit::CONFIG,
    }
}

/// Print the notes of a resolved input (what was repeated, overlaps or is
/// unused, and the rule applied), at most 20.
fn print_notes(input: &input::Input) {
    const SHOWN: usize = 20;
    let notes = input.snapshot.as_ref().map_or(&[][..], |s| &s.notes[..]);
    for n in notes.iter().take(SHOWN) {
        eprintln!("trace-convert: note: {}", guarded(n));
    }
    if notes.len() > SHOWN {
        eprintln!(
            "trace-convert: note: and {} more notes",
            notes.len() - SHOWN
        );
    }
}

/// The message of a run that decoded `instructions` instructions and
/// reached `nacc` addresses outside the memory image from `bytes` bytes
/// of capture, when that is a failure: no instruction, and either no
/// address either or a capture file whose first bytes fit another
/// protocol or layout than `flags` give (addresses outside the image
/// alone are what a run without the image gives, and stand).
fn nothing_decoded(
    input: &input::Input,
    flags: &SourceFlags,
    bytes: u64,
    instructions: u64,
    nacc: u64,
) -> Option<String> {
    if bytes == 0 || instructions > 0 {
        return None;
    }
    let hint = match (input.kind, input.captures.first()) {
        (input::Kind::Capture, Some(c)) => trace_convert::hint::better(&c.path, flags),
        _ => None,
    };
    if nacc > 0 && hint.is_none() {
        return None;
    }
    let sources: usize = input
        .captures
        .iter()
        .map(|c| c.sources.len() + usize::from(c.any_id.is_some()))
        .sum();
    let skipped: usize = input.captures.iter().map(|c| c.skipped.len()).sum();
    let why = if let Some(f) = hint {
        format!(
            "its first bytes fit `{}` ({:.0}% in packets, {:.1} errors per KiB), not the flags given: try that",
            f.flags(),
            100.0 * f.share(),
            f.errors_per_kib()
        )
    } else if sources == 0 && skipped > 0 {
        format!("no source could be decoded ({skipped} skipped, see above)")
    } else if sources == 0 {
        "no trace source is bound to the capture".to_owned()
    } else {
        "check the protocol, the layout and the source registers (ETMCR, ETMIDR)".to_owned()
    };
    let reached = if nacc > 0 {
        format!(" (only {nacc} addresses outside the memory image)")
    } else {
        String::new()
    };
    Some(format!(
        "decoded no instruction{reached} from {bytes} bytes of capture: {why}"
    ))
}

/// The warning for a run that decoded instructions from a capture file
/// whose first bytes fit another protocol or layout clearly better than
/// `flags` give (see [`trace_convert::hint`]): a TPIU stream read as a
/// source's raw bytes decodes a few instructions by chance, and those
/// are no failure of the run, but its events are not to be trusted.
fn misfit_warning(input: &input::Input, flags: &SourceFlags, instructions: u64) -> Option<String> {
    if instructions == 0 {
        return None;
    }
    let (input::Kind::Capture, Some(c)) = (input.kind, input.captures.first()) else {
        return None;
    };
    let f = trace_convert::hint::better(&c.path, flags)?;
    Some(format!(
        "the capture's first bytes fit `{}` ({:.0}% in packets, {:.1} errors per KiB), not the flags given: the events decoded are likely wrong; try that",
        f.flags(),
        100.0 * f.share(),
        f.errors_per_kib()
    ))
}

/// The exit code and message for a failed capture read.
fn read_failure(e: ReadError) -> ExitCode {
    match e {
        ReadError::Input(e) => fail(input_code(&e), e),
        e @ ReadError::Io { .. } => fail(exit::INPUT, e),
        // A closed pipe (e.g. `| head`) is the reader's choice, not an error.
        ReadError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        e => fail(exit::OUTPUT, e),
    }
}

/// The listing's output plan and the resolved input of a `packets` or
/// `decode` run, with the input's notes printed; `named` are the files
/// the command line names besides the input (which the listing may not
/// be). On failure, the exit code (the message is printed).
fn listing_input<'p>(
    args: &'p InputArgs,
    output: Option<&Path>,
    named: impl IntoIterator<Item = &'p Path>,
) -> Result<(OutputPlan, Input), ExitCode> {
    let named = std::iter::once(args.path.as_path()).chain(named);
    let plan = listing_plan(output, named)?;
    let mut input = args.source.resolve(&args.path)?;
    if input.saved.is_some() {
        return Err(fail(
            exit::USAGE,
            format!(
                "{}: saved events hold decoded events, not a capture to list: convert them \
                 (trace-convert {} --chrome FILE, ...)",
                args.path.display(),
                args.path.display()
            ),
        ));
    }
    args.source
        .keep_ids(&mut input)
        .map_err(|e| fail(exit::CONFIG, e))?;
    print_notes(&input);
    plan.check_inputs(input.files().iter().map(PathBuf::as_path))
        .map_err(|e| output_failure(&e))?;
    Ok((plan, input))
}

/// Print why each source of `capture` that is not decoded is not.
fn print_skipped(capture: &CaptureSpec) {
    for (name, why) in &capture.skipped {
        eprintln!(
            "trace-convert: {}: not decoded: {}",
            guarded(name),
            guarded(why)
        );
    }
}

fn run_packets(args: &PacketsArgs) -> ExitCode {
    let (plan, input) = match listing_input(&args.input, args.output.as_deref(), []) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let format = match args.format {
        FormatArg::Text => ListFormat::Text,
        FormatArg::Jsonl => ListFormat::Jsonl,
    };
    let mut listing = PacketListing::new(format);
    with_output(plan, |out| {
        for capture in &input.captures {
            print_skipped(capture);
            // With --trace-id, the bytes of the other IDs are not listed.
            let only = &args.input.source.trace_id;
            let listed = |item: &trace_core::demux::Item| match item {
                trace_core::demux::Item::Unconfigured { run } => {
                    only.is_empty() || only.contains(&run.id)
                }
                _ => true,
            };
            let summary = if pipelines(capture) {
                // Lines formatted on a second thread: the same bytes.
                packets_pipelined(capture, format, out, listed)?
            } else {
                let summary = dec::read_capture(capture, |item| {
                    if listed(item) {
                        listing.write(out, item)?;
                    }
                    Ok(())
                })
                .map_err(read_failure)?;
                listing
                    .finish(out)
                    .map_err(|e| read_failure(ReadError::Output(e)))?;
                summary
            };
            for (id, s) in &summary.sources {
                eprintln!(
                    "trace-convert: {}: ID {id:#04x}: {}, {} ({}), {} skipped, {}",
                    escaped(&capture.path.display().to_string()),
                    plural(s.bytes, "byte"),
                    plural(s.packets, "packet"),
                    plural(s.in_packets, "byte"),
                    plural(s.skipped, "byte"),
                    plural(s.errors, "error")
                );
            }
        }
        Ok(())
    })
}

/// Bytes read and instructions decoded (or addresses reached without
/// memory) over the captures of a `decode` run.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    bytes: u64,
    instructions: u64,
    /// Addresses reached outside the memory image.
    nacc: u64,
}

fn run_decode(args: &DecodeArgs) -> ExitCode {
    // `None`: no listing, the events are only counted by the decode.
    let format = match args.format {
        DecodeFormatArg::Text => Some(EventFormat::Text),
        DecodeFormatArg::Jsonl => Some(EventFormat::Jsonl),
        DecodeFormatArg::None => None,
    };
    if format.is_none() && args.output.is_some() {
        return fail(
            exit::USAGE,
            "--format none writes no listing: -o/--output does not go with it",
        );
    }
    let named = args
        .elf
        .iter()
        .map(PathBuf::as_path)
        .chain(args.mem.iter().map(|m| m.path.as_path()));
    let (plan, input) = match listing_input(&args.input, args.output.as_deref(), named) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let extra = ExtraMemory {
        elves: args.elf.clone(),
        raw: args.mem.clone(),
    };
    // One image per source, loaded before decoding starts.
    let images = match input.images(&extra) {
        Ok(images) => images,
        Err(e) => return fail(exit::INPUT, e),
    };
    for name in input.without_memory(&images) {
        eprintln!("trace-convert: {}", guarded(&no_memory_warning(name)));
    }
    // With ELF files, each line names its function (and, per
    // instruction, its source line).
    let symbols = if args.elf.is_empty() || format.is_none() {
        None
    } else {
        let mut s = Symbolizer::default();
        s.set_path_map(convert_cli::path_map(&args.path_map));
        for e in &args.elf {
            if let Err(e) = s.add_elf(e) {
                return fail(exit::INPUT, e);
            }
        }
        Some(s)
    };
    let mut totals = Totals::default();
    // Exceptions named as each source's core numbers them.
    let profiles = Profiles::of_sources(&trace_convert::convert::source_names(&input));
    let mut listing = format.map(|f| {
        let mut l = EventListing::new(f);
        l.set_profiles(profiles.clone());
        l
    });
    with_output(plan, |out| {
        for capture in &input.captures {
            print_skipped(capture);
            let listing = match (listing.as_mut(), &symbols, format) {
                (Some(l), None, _) => Listing::Fast(l),
                (_, Some(s), Some(f)) => Listing::Symbolized(f, s, &profiles),
                _ => Listing::None,
            };
            let t = match (&listing, format) {
                (Listing::Fast(_), Some(f)) if pipelines(capture) => {
                    decode_pipelined(args, f, &profiles, capture, &images, out)?
                }
                _ => decode_listing(args, listing, capture, &images, out)?,
            };
            totals.bytes += t.bytes;
            totals.instructions += t.instructions;
            totals.nacc += t.nacc;
        }
        let flags = args.input.flags();
        let why = input.expects_instructions().then(|| {
            nothing_decoded(
                &input,
                &flags,
                totals.bytes,
                totals.instructions,
                totals.nacc,
            )
        });
        if let Some(why) = why.flatten() {
            // The listing does not take its final name.
            return Err(fail(exit::CONFIG, why));
        }
        if input.expects_instructions() {
            if let Some(w) = misfit_warning(&input, &flags, totals.instructions) {
                eprintln!("trace-convert: warning: {}", guarded(&w));
            }
        }
        Ok(())
    })
}

/// How a decode listing is written.
enum Listing<'a> {
    /// Not at all (`--format none`).
    None,
    /// Through the buffered lines.
    Fast(&'a mut EventListing),
    /// With each line's function and source line (exceptions named by
    /// the cores' profiles).
    Symbolized(EventFormat, &'a Symbolizer, &'a Profiles),
}

/// Decode `capture`, list its events in `format` (when listed) into
/// `out`, and print its per-ID summary.
fn decode_listing(
    args: &DecodeArgs,
    mut listing: Listing<'_>,
    capture: &CaptureSpec,
    images: &Images,
    out: &mut dyn io::Write,
) -> Result<Totals, ExitCode> {
    let only = &args.input.source.trace_id;
    let by_id = images.by_id(capture);
    // Counted but not listed: ETMv3's instructions by runs, and on several
    // threads the events stay with the workers, which count them.
    let none = matches!(listing, Listing::None);
    let builder = dec::decoder(capture, |name| images.of(name))
        .map_err(read_failure)?
        .options(jobs::decode_options())
        .block_ranges(none);
    let mut decoder = if none && builder.runs_in_parallel() {
        builder.parts(std::sync::Arc::new(counted::CountedOnly))
    } else {
        builder
    }
    .build();
    let summary = if none {
        // Counted only: a consumer that takes nothing, so that the decode
        // loop keeps no call per event.
        dec::run(
            capture,
            &mut decoder,
            &mut trace_core::capture::each_event(|_| Ok(())),
        )
    } else {
        dec::run(
            capture,
            &mut decoder,
            &mut trace_core::capture::each_event(|e| {
                if !only.is_empty() && !only.contains(&e.id) {
                    return Ok(());
                }
                let mem = args
                    .instructions
                    .then(|| by_id.get(&e.id).map_or(&**images.other(), |m| &**m));
                match &mut listing {
                    Listing::Fast(l) => l.write(out, e, mem),
                    Listing::Symbolized(f, s, p) => {
                        write_event_symbolized(out, *f, e, mem, s, Some(p))
                    }
                    Listing::None => Ok(()),
                }
            }),
        )
    }
    .map_err(read_failure)?;
    if let Listing::Fast(listing) = listing {
        listing
            .finish(out)
            .map_err(|e| read_failure(ReadError::Output(e)))?;
    }
    Ok(decode_summary(capture, &summary))
}

/// Print the per-ID summary of a decode of `capture`; its totals.
fn decode_summary(capture: &CaptureSpec, summary: &trace_core::capture::DecodeSummary) -> Totals {
    for (id, c) in &summary.sources {
        eprintln!(
            "trace-convert: {}: ID {id:#04x}: {}, {}, {} not accessible, {}",
            escaped(&capture.path.display().to_string()),
            plural(c.ranges, "range"),
            plural(c.instructions, "instruction"),
            c.nacc,
            plural(c.gaps, "gap")
        );
        for line in c.mismatches.lines(*id) {
            eprintln!(
                "trace-convert: {}: {}",
                escaped(&capture.path.display().to_string()),
                guarded(&line)
            );
        }
    }
    Totals {
        bytes: summary.bytes,
        instructions: summary.sources.iter().map(|(_, c)| c.instructions).sum(),
        nacc: summary.sources.iter().map(|(_, c)| c.nacc).sum(),
    }
}

fn main() -> ExitCode {
    let first = std::env::args_os().nth(1);
    let first = first.as_ref().and_then(|a| a.to_str()).unwrap_or_default();
    if let Some(s) = typo::subcommand_typo(first) {
        let word = first;
        return fail(
            exit::USAGE,
            format!("`{word}` is neither a subcommand nor an existing input: did you mean `{s}`?"),
        );
    }
    let cli = Cli::parse();
    if let Err(e) = trace_convert::output::remove_temporaries_on_signal() {
        eprintln!("trace-convert: note: signals will not remove temporary files: {e}");
    }
    match cli.command {
        Some(Command::Packets(args)) => run_packets(&args),
        Some(Command::Decode(args)) => run_decode(&args),
        Some(Command::Convert(args)) => convert_cli::run(&args),
        Some(Command::Report(args)) => report_cli::run(args),
        Some(Command::Top(args)) => top_cli::run(&args),
        Some(Command::Assets(args)) => assets_cli::run(&args),
        None => convert_cli::run(&cli.convert),
    }
}
