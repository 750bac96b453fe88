//! What an ARMv7-M core's ITM and DWT send while it runs a flow: exception
//! trace (DWT_CTRL.EXCTRCENA) and periodic PC samples (DWT_CTRL.PCSAMPLENA),
//! as ITM/DWT packets from the `itm-packets` encoder.

use crate::error::EncodeError;
use crate::flow::{ExceptionKind, FlowItem};
use itm_packets::{Encoder, ExceptionAction, ExceptionTrace, Packet, PcSample};

/// What the ITM and DWT trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItmOptions {
    /// A periodic PC sample after every this many instructions (the
    /// address of each `n`-th instruction of the flow); 0 for none.
    pub pc_sample_every: u64,
    /// Exception trace: entry into each exception, and on each exception
    /// return the exit from it and the return to the exception (or thread
    /// mode, 0) it resumes.
    pub exception_trace: bool,
    /// A synchronization packet first (ITM_TCR.SYNCENA at trace start).
    pub sync: bool,
}

impl Default for ItmOptions {
    fn default() -> Self {
        ItmOptions {
            pc_sample_every: 64,
            exception_trace: true,
            sync: true,
        }
    }
}

/// The ITM/DWT packets of a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItmTrace {
    /// The packets' bytes.
    pub bytes: Vec<u8>,
    /// The offset of each packet's first byte.
    pub packets: Vec<usize>,
}

/// Encodes the ITM/DWT packets an ARMv7-M core sends while it runs `flow`.
///
/// # Errors
///
/// [`EncodeError::Options`] for an A-profile exception in the flow (ITM
/// exception trace numbers ARMv7-M exceptions) or an exception return
/// with no exception to return from; [`EncodeError::Packet`] if the packet
/// encoder refuses a packet.
pub fn encode_itm(flow: &[FlowItem], opts: &ItmOptions) -> Result<ItmTrace, EncodeError> {
    let mut enc = Encoder::new();
    let mut out = ItmTrace {
        bytes: Vec::new(),
        packets: Vec::new(),
    };
    let mut buf = [0u8; 8];
    let mut put = |p: Packet, index: u64, out: &mut ItmTrace| -> Result<(), EncodeError> {
        let n = enc.encode(&p, &mut buf).map_err(|e| EncodeError::Packet {
            index,
            reason: e.to_string(),
        })?;
        out.packets.push(out.bytes.len());
        out.bytes.extend_from_slice(&buf[..n]);
        Ok(())
    };
    if opts.sync {
        put(Packet::Sync, 0, &mut out)?;
    }
    let exception = |number, action| Packet::ExceptionTrace(ExceptionTrace { number, action });
    let mut active: Vec<u16> = Vec::new();
    let mut count = 0u64;
    for item in flow {
        match *item {
            FlowItem::Insn { addr, .. } => {
                count += 1;
                if opts.pc_sample_every > 0 && count % opts.pc_sample_every == 0 {
                    put(
                        Packet::PcSample(PcSample { pc: Some(addr) }),
                        count,
                        &mut out,
                    )?;
                }
            }
            FlowItem::Exception { kind, .. } => {
                let ExceptionKind::M(number) = kind else {
                    return Err(EncodeError::Options(format!(
                        "ITM exception trace of an A-profile exception ({}) at instruction {count}",
                        kind.name()
                    )));
                };
                active.push(number);
                if opts.exception_trace {
                    put(exception(number, ExceptionAction::Enter), count, &mut out)?;
                }
            }
            FlowItem::ExceptionReturn { .. } => {
                let Some(left) = active.pop() else {
                    return Err(EncodeError::Options(format!(
                        "exception return with no exception active at instruction {count}"
                    )));
                };
                if opts.exception_trace {
                    let resumed = active.last().copied().unwrap_or(0);
                    put(exception(left, ExceptionAction::Exit), count, &mut out)?;
                    put(exception(resumed, ExceptionAction::Return), count, &mut out)?;
                }
            }
            FlowItem::Halt => break,
        }
    }
    Ok(out)
}
