//! Turn an executed instruction flow into the trace a real macrocell would
//! emit: PTM (PFT v1.1) or ETMv3 packets, CoreSight-formatted captures of
//! several sources, and snapshot directories `trace-convert` reads. For
//! tests (decode the trace and compare with the flow), benchmarks (traces
//! of any size) and probe simulation.
//!
//! - [`flow`]: the executed flow ([`Flow`], [`FlowItem`]) and its text
//!   form (`.flow` files).
//! - [`encode_ptm`] / [`encode_etm`]: one source's trace bytes and the
//!   ETMCR/ETMCCER/ETMIDR values that describe it ([`Trace`]), under
//!   [`PtmOptions`] / [`EtmOptions`].
//! - [`capture`]: several sources in CoreSight formatter frames (ETB
//!   memory layout or TPIU continuous mode).
//! - [`snapshot`]: a snapshot directory (`snapshot.ini`, device files with
//!   registers and memory dumps, `trace.ini`, the capture).
//! - [`write_repeated`]: a large trace made by repeating a flow, streamed
//!   to a writer.
//!
//! The encoders read the code from a memory image
//! ([`trace_core::memory::MemoryImage`]) to classify each instruction with
//! `isa-decode` (waypoint or not, direct or indirect, link), check that
//! the flow agrees with the code, and emit packets through the
//! `ptm-packets` and `etm-packets` encoders.
//!
//! ```no_run
//! use trace_core::memory::{MemoryMap, Space};
//! use trace_encode::{encode_ptm, Flow, PtmOptions};
//!
//! let flow = Flow::parse(&std::fs::read_to_string("prog.flow")?)?;
//! let mut memory = MemoryMap::new();
//! memory.add_elf("prog.elf".as_ref(), Space::Any)?;
//! let opts = PtmOptions { return_stack: true, ..PtmOptions::default() };
//! let trace = encode_ptm(&flow.items, &memory, &opts)?;
//! println!("{} bytes, ETMCR {:#x}", trace.bytes.len(), trace.regs.etmcr);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Options
//!
//! | option | PTM ([`PtmOptions`]) | ETMv3 ([`EtmOptions`]) |
//! |---|---|---|
//! | cycle-accurate (ETMCR\[12\]) | one atom per packet with its cycle count; cycle counts on branch addresses, trace-on I-syncs, timestamps | W atoms in P-header formats 1 to 4; I-sync with cycle count at trace on |
//! | return stack (ETMCR\[29\]) | addresses of predicted returns left out | — |
//! | branch broadcast (ETMCR\[8\]) | a branch address for every taken branch | the same |
//! | DMB/DSB waypoints (ETMCCER\[24\]) | yes | — (one atom per instruction anyway) |
//! | branch encoding (ETMIDR\[20\]) | — | original or alternative |
//! | version (ETMIDR\[7:4\]) | PFT v1.1 | ETMv3.0 to v3.5 |
//! | context ID (ETMCR\[15:14\]) | 0, 1, 2 or 4 bytes, in I-syncs and on change | the same |
//! | timestamps (ETMCR\[28\]) | after every I-sync and every N instructions | the same (ETMv3.5) |
//! | periodic sync | A-sync + I-sync after N bytes or instructions, right after a waypoint | the same, between any two instructions |
//! | trace start | A-sync + I-sync (trace on) at instruction K | the same |
//! | timing | [`CycleModel`]: cycles per instruction, extra for taken branches | the same |
//!
//! [`Trace::regs`] holds the ETMCR, ETMCCER and ETMIDR values of the
//! configuration, so a decoder can be set up the way a capture tool
//! would ([`Trace::source_config`], [`Trace::decoder_config`]).
//!
//! # Exceptions
//!
//! A-profile exceptions carry the architecture's trace numbers (reset 8,
//! undefined 9, SVC 10, prefetch abort 11, data abort 12, IRQ 14, FIQ 15,
//! [`a_profile_exception_number`]); ARMv7-M exceptions in ETMv3 the
//! ARMv7-M encoding ([`m_profile_exception_number`]). An exception return
//! is traced as the indirect branch it is, followed (PTM) or preceded
//! (ETMv3) by an exception return packet, the order the Cortex-A15 PTM and
//! Cortex-A7 ETMs of ARM's TC2 board use. ARMv7-M flows are encoded as
//! ETMv3 only: no ARMv7-M core has a PTM.
//!
//! # What the trace cannot show
//!
//! PTM traces waypoints only: instructions after the last waypoint before
//! an exception are closed with a waypoint update, and the end of trace
//! with one too. An instruction that raised a fault (undefined
//! instruction, abort: the exception's preferred return address is its
//! own) did not complete: PTM leaves it out, ETMv3 traces it and sets the
//! Cancel bit, so decoders drop it either way.

pub mod capture;
mod drive;
mod error;
mod etm;
pub mod flow;
mod options;
pub mod perf;
mod ptm;
mod repeat;
mod rstack;
pub mod snapshot;

pub use error::EncodeError;
pub use etm::{m_profile_exception_number, EtmOptions};
pub use etm_packets::EtmVersion;
pub use flow::{Cond, ExceptionKind, Flow, FlowError, FlowItem, Isa};
pub use options::{
    source_config, CycleModel, EncodeStats, Protocol, Regs, SyncPeriod, Trace, TraceOptions,
};
pub use ptm::{a_profile_exception_number, PtmOptions};
pub use repeat::{write_repeated, Encoding, RepeatStats};
pub use rstack::RETURN_STACK_DEPTH;

use drive::{Classifier, Driver};
use trace_core::memory::MemoryImage;

/// Encodes `flow` as a PTM would trace it.
///
/// # Errors
///
/// [`EncodeError`] when the flow disagrees with the code in `memory` (an
/// instruction not in the image, of another size, UNDEFINED, or followed
/// by an instruction the code cannot lead to), when trace would start
/// after the last instruction, or when the options are inconsistent.
pub fn encode_ptm(
    flow: &[FlowItem],
    memory: &dyn MemoryImage,
    opts: &PtmOptions,
) -> Result<Trace, EncodeError> {
    let mut b = ptm::PtmBackend::new(opts)?;
    let mut cls = Classifier::new(memory);
    Driver::new(&opts.trace).run(&mut b, &mut cls, flow)?;
    Ok(Trace {
        protocol: Protocol::Ptm,
        regs: opts.regs()?,
        stats: *drive::Backend::stats(&mut b),
        bytes: b.out,
    })
}

/// Encodes `flow` as an ETMv3 would trace it.
///
/// # Errors
///
/// As [`encode_ptm`].
pub fn encode_etm(
    flow: &[FlowItem],
    memory: &dyn MemoryImage,
    opts: &EtmOptions,
) -> Result<Trace, EncodeError> {
    let mut b = etm::EtmBackend::new(opts)?;
    let mut cls = Classifier::new(memory);
    Driver::new(&opts.trace).run(&mut b, &mut cls, flow)?;
    Ok(Trace {
        protocol: Protocol::Etmv3,
        regs: opts.regs()?,
        stats: *drive::Backend::stats(&mut b),
        bytes: b.out,
    })
}
