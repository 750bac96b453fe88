#![doc = include_str!("../README.md")]

pub mod capture;
mod drive;
mod error;
mod etm;
pub mod flow;
mod itm;
mod options;
pub mod perf;
mod ptm;
mod repeat;
mod rstack;
pub mod snapshot;
pub mod swo;

pub use error::EncodeError;
pub use etm::{m_profile_exception_number, EtmOptions};
pub use etm_packets::EtmVersion;
pub use flow::{Cond, ExceptionKind, Flow, FlowError, FlowItem, Isa};
pub use itm::{encode_itm, ItmOptions, ItmTrace};
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
