//! `cargo xtask gen-example`: the bundled example capture.
//!
//! The corpus program `example` (T32 flavour: a scheduler loop running a
//! CRC, a sort and a formatting task, with a periodic timer interrupt) is
//! encoded as a cycle-accurate PTM trace with the return stack on,
//! timestamps and periodic synchronization, the way a Cortex-A9 PTM behind
//! an ETB would record it, and written as a snapshot directory with the
//! program's memory and its ELF file (for symbols and source lines).
//!
//! The inputs are the committed corpus fixtures, so no cross-compiler or
//! emulator is needed; the output is deterministic.

use crate::root;
use std::fs;
use std::path::{Path, PathBuf};
use trace_core::memory::{MemoryMap, Space};
use trace_encode::capture::{format_capture, Layout, Source};
use trace_encode::snapshot::{dumps_of, write_snapshot, BufferFormat, Core, SnapshotSpec};
use trace_encode::{encode_ptm, CycleModel, Flow, PtmOptions, SyncPeriod, TraceOptions};

/// Where the example goes, relative to the workspace root (the CLI looks
/// for it there).
pub const EXAMPLE_DIR: &str = "examples/snapshot";
/// The corpus fixture it is made from.
const FIXTURE: &str = "example-t";
/// Trace ID of the PTM.
const TRACE_ID: u8 = 0x10;
/// Timestamp counter frequency written to `trace.ini`.
const TIMESTAMP_HZ: u64 = 100_000_000;

/// A committed corpus fixture (`example-t`, ...): its recorded flow, its
/// ELF file and the memory image loaded from it.
pub struct Fixture {
    /// The executed flow.
    pub flow: Flow,
    /// The ELF file.
    pub elf: PathBuf,
    /// The ELF's loadable segments.
    pub memory: MemoryMap,
}

/// Load the committed corpus fixture `name`.
pub fn fixture(name: &str) -> Result<Fixture, String> {
    let fixtures = root().join("corpus/fixtures");
    let elf = fixtures.join(format!("{name}.elf"));
    let flow_path = fixtures.join(format!("{name}.flow"));
    let text = fs::read_to_string(&flow_path)
        .map_err(|e| format!("{}: {e} (run cargo xtask gen-corpus)", flow_path.display()))?;
    let flow = Flow::parse(&text).map_err(|e| format!("{}: {e}", flow_path.display()))?;
    let mut memory = MemoryMap::new();
    memory
        .add_elf(&elf, Space::Any)
        .map_err(|e| format!("{}: {e}", elf.display()))?;
    Ok(Fixture { flow, elf, memory })
}

/// Build the example snapshot from the committed fixture.
pub fn generate() -> Result<(), String> {
    let Fixture { flow, elf, memory } = fixture(FIXTURE)?;
    let opts = PtmOptions {
        return_stack: true,
        cycle_accurate: true,
        trace: TraceOptions {
            sync: Some(SyncPeriod::Bytes(1024)),
            timestamps: true,
            timestamp_interval: 2000,
            cycles: CycleModel {
                per_instruction: 1,
                taken_branch: 2,
            },
            ..TraceOptions::default()
        },
        ..PtmOptions::default()
    };
    let trace = encode_ptm(&flow.items, &memory, &opts).map_err(|e| format!("encode: {e}"))?;
    let capture = format_capture(
        &[Source {
            id: TRACE_ID,
            bytes: &trace.bytes,
        }],
        Layout::Memory,
        16,
    )
    .map_err(|e| format!("format: {e}"))?;
    let spec = SnapshotSpec {
        cores: vec![Core {
            name: "cpu_0".into(),
            kind: "Cortex-A9".into(),
            pc: 0,
            dumps: dumps_of(&memory),
        }],
        sources: vec![trace_encode::snapshot::Source {
            name: "PTM_0".into(),
            protocol: trace.protocol,
            regs: trace.regs,
            id: TRACE_ID,
            core: "cpu_0".into(),
        }],
        trace: capture,
        format: BufferFormat::CoreSight,
        timestamp_hz: Some(TIMESTAMP_HZ),
    };
    let dir = root().join(EXAMPLE_DIR);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    write_snapshot(&dir, &spec).map_err(|e| format!("{}: {e}", dir.display()))?;
    copy(&elf, &dir.join("example.elf"))?;
    eprintln!(
        "xtask: wrote {} ({} instructions, {} trace bytes)",
        dir.display(),
        flow.instruction_count(),
        trace.bytes.len()
    );
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("{} -> {}: {e}", from.display(), to.display()))
}
