//! Header bytes: what each announces (IHI 0014Q table 7.1) and the
//! P-header encodings (tables 7.2 and 7.3).

use crate::config::Config;
use crate::packet::{Atoms, PHeaderFormat};

/// What a header byte announces, for one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    PHeader,
    Branch,
    ASync,
    CycleCount,
    ISync,
    Trigger,
    OutOfOrderData,
    StoreFailed,
    Placeholder,
    Vmid,
    NormalData,
    Timestamp,
    DataSuppressed,
    Ignore,
    ValueNotTraced,
    ContextId,
    ExceptionExit,
    ExceptionEntry,
    Reserved,
    /// A data trace header while the configuration traces no data (or no
    /// data values, for the headers that carry values).
    NoDataTrace,
}

/// Classifies a header byte (IHI 0014Q table 7.1).
pub(crate) fn classify(b: u8, cfg: &Config) -> Class {
    let v35 = cfg.has_hyp();
    if b & 1 == 1 {
        return Class::Branch;
    }
    if b & 0x80 != 0 {
        return if decode_pheader(b, cfg).is_some() {
            Class::PHeader
        } else {
            Class::Reserved
        };
    }
    let class = match b {
        0x00 => Class::ASync,
        0x04 => Class::CycleCount,
        0x08 | 0x70 => Class::ISync,
        0x0C => Class::Trigger,
        0x50 => Class::StoreFailed,
        0x3C if v35 => Class::Vmid,
        0x42 | 0x46 if v35 => Class::Timestamp,
        0x62 => Class::DataSuppressed,
        0x66 => Class::Ignore,
        0x6A | 0x7A => Class::ValueNotTraced,
        0x6E => Class::ContextId,
        0x76 => Class::ExceptionExit,
        0x7E => Class::ExceptionEntry,
        // b0TT0SS00, TT != 0
        _ if b & 0x93 == 0 && b & 0x60 != 0 => Class::OutOfOrderData,
        // b01A1TT00, TT != 0
        _ if b & 0xD3 == 0x50 && b & 0x0C != 0 => Class::Placeholder,
        // b00A0SS10
        _ if b & 0xD3 == 0x02 => Class::NormalData,
        _ => Class::Reserved,
    };
    // Data packets appear only when ETMCR enables data trace: in a stream
    // without it such a header means the stream is damaged or the
    // configuration is wrong (OpenCSD reports BAD_TRACEMODE).
    let data = cfg.data_address() || cfg.data_value();
    match class {
        Class::OutOfOrderData | Class::StoreFailed if !cfg.data_value() => Class::NoDataTrace,
        Class::Placeholder | Class::NormalData | Class::DataSuppressed | Class::ValueNotTraced
            if !data =>
        {
            Class::NoDataTrace
        }
        other => other,
    }
}

/// Decodes a P-header byte, `None` if the encoding is reserved in this
/// configuration (IHI 0014Q tables 7.2 and 7.3).
pub(crate) fn decode_pheader(b: u8, cfg: &Config) -> Option<Atoms> {
    let low = |n: u8| -> u16 { (1u16 << n) - 1 };
    // Format 2 (both modes): b1000FF10; bit 3 is the first atom, 1 = N.
    let format2 = |cycles: u8| Atoms {
        format: PHeaderFormat::Format2,
        count: 2,
        executed: u16::from((b >> 3) & 1 == 0) | (u16::from((b >> 2) & 1 == 0) << 1),
        cycles,
    };
    if !cfg.cycle_accurate() {
        if b & 0x83 == 0x80 {
            // b1NEEEE00: EEEE x E then optionally one N.
            let e = (b >> 2) & 0xF;
            let n = (b >> 6) & 1;
            return Some(Atoms {
                format: PHeaderFormat::Format1,
                count: e + n,
                executed: low(e),
                cycles: 0,
            });
        }
        if b & 0xF3 == 0x82 {
            return Some(format2(0));
        }
        return None;
    }
    if b == 0x80 {
        // Format 0: one W, ETMv3.0 only.
        return (cfg.version() == crate::EtmVersion::V3_0).then_some(Atoms {
            format: PHeaderFormat::Format0,
            count: 0,
            executed: 0,
            cycles: 1,
        });
    }
    if b & 0xA3 == 0x80 {
        // b1N0EEE00: EEE x WE then optionally WN.
        let e = (b >> 2) & 7;
        let n = (b >> 6) & 1;
        return Some(Atoms {
            format: PHeaderFormat::Format1,
            count: e + n,
            executed: low(e),
            cycles: e + n,
        });
    }
    if b & 0xF3 == 0x82 {
        return Some(format2(1));
    }
    if b & 0xA3 == 0xA0 {
        // b1E1WWW00: WWW+1 x W then optionally E.
        let e = (b >> 6) & 1;
        return Some(Atoms {
            format: PHeaderFormat::Format3,
            count: e,
            executed: u16::from(e),
            cycles: ((b >> 2) & 7) + 1,
        });
    }
    if b & 0xFB == 0x92 && cfg.has_alt_isa() {
        // b10010F10, ETMv3.3 and later.
        return Some(Atoms {
            format: PHeaderFormat::Format4,
            count: 1,
            executed: u16::from((b >> 2) & 1 == 0),
            cycles: 0,
        });
    }
    None
}
