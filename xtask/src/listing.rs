//! Reading OpenCSD `trc_pkt_lister` packet listings (`.ppl`) into values.
//!
//! A packet line looks like
//! `Idx:884; ID:10;\tI_SYNC : Instruction Packet synchronisation.; (Periodic); Addr=0xc002115c; S;  ISA=Thumb2; `
//! (decode listings add the raw bytes in brackets after the ID). Only the
//! facts are kept: offset, trace ID, packet type and field values.

use std::path::Path;

/// One packet of an OpenCSD listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedPacket {
    /// 1-based line in the listing.
    pub line: usize,
    /// `Idx`: OpenCSD's index of the packet's first byte.
    pub idx: u64,
    /// `ID`: trace ID (hex in the listing).
    pub id: u8,
    /// Packet type name as printed, e.g. `I_SYNC_CYCLE`, `ATOM`.
    pub kind: String,
    /// `Addr=`: address (I-sync, branch address); unknown high bits
    /// (printed `?`) are 0.
    pub addr: Option<u64>,
    /// How many low bits of `addr` are known when OpenCSD prints a partial
    /// address (`Addr=0x??09F49C (21:0)`: 22); `None` when all are.
    pub addr_bits: Option<u8>,
    /// `ISA=`: `arm`, `thumb`, `jazelle` or `thumbee`.
    pub isa: Option<String>,
    /// `S`/`N`: whether the state is non-secure.
    pub ns: Option<bool>,
    /// I-sync reason in parentheses, normalised: `periodic`, `trace_on`,
    /// `overflow`, `debug_exit`.
    pub reason: Option<String>,
    /// `Cycles=`.
    pub cycles: Option<u64>,
    /// Atoms as printed (`E`, `N`, `W` letters).
    pub atoms: Option<String>,
    /// `TS=`: timestamp value.
    pub timestamp: Option<u64>,
    /// `Excep=Name [nn]` (PTM) or `Exception=Name` (ETMv3): exception
    /// number.
    pub exception: Option<u16>,
    /// `Exception=Name` (ETMv3) as printed.
    pub exception_name: Option<String>,
    /// `Cancel prev instr`: the ETMv3 branch packet's cancel bit.
    pub cancel: bool,
    /// `CtxtID=` / context ID.
    pub context_id: Option<u32>,
    /// `VMID=`.
    pub vmid: Option<u8>,
    /// The line's text, for messages.
    pub text: String,
}

/// The text of a listing file, decompressed first when its name ends in
/// `.xz`.
///
/// # Errors
///
/// When the file cannot be read, is not valid xz, or is not UTF-8.
pub fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bytes = if path.extension().is_some_and(|x| x == "xz") {
        let mut out = Vec::new();
        lzma_rs::xz_decompress(&mut &bytes[..], &mut out)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        out
    } else {
        bytes
    };
    String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Read every packet line of a listing, leaving out `NOTSYNC` lines (their
/// number depends on OpenCSD's mode, see LISTINGS.md).
#[must_use]
pub fn parse_listing(text: &str) -> Vec<ListedPacket> {
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| parse_line(n + 1, line))
        .filter(|p| p.kind != "NOTSYNC")
        .collect()
}

fn hex(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u64::from_str_radix(s, 16).ok()
}

/// The ETMv3 exception number (ARMv7-A/R numbering of IHI 0014) of a
/// name OpenCSD prints; `None` for `Reserved` (several numbers) and names
/// not listed here.
fn etmv3_exception(name: &str) -> Option<u16> {
    Some(match name.trim() {
        "Debug Halt" => 1,
        "SMC" => 2,
        "Hyp" => 3,
        "SVC" => 10,
        "IRQ" => 14,
        "FIQ" => 15,
        _ => return None,
    })
}

pub(crate) fn parse_line(line_no: usize, line: &str) -> Option<ListedPacket> {
    // After an error OpenCSD prints the packet on the message's line.
    let rest = &line[line.find("Idx:")? + "Idx:".len()..];
    let (idx, rest) = rest.split_once(';')?;
    let rest = rest.trim_start().strip_prefix("ID:")?;
    let (id, rest) = rest.split_once(';')?;
    let (_, body) = rest.split_once('\t')?;
    let (kind, fields) = body.split_once(" : ").unwrap_or((body, ""));
    let mut p = ListedPacket {
        line: line_no,
        idx: idx.trim().parse().ok()?,
        id: u8::try_from(hex(id)?).ok()?,
        kind: kind.trim().to_owned(),
        text: line.to_owned(),
        ..ListedPacket::default()
    };
    // The first field is the packet description; the rest are `;`-separated.
    for field in fields.split(';').skip(1).map(str::trim) {
        parse_field(&mut p, field);
    }
    Some(p)
}

fn parse_field(p: &mut ListedPacket, field: &str) {
    if field.is_empty() {
        return;
    }
    if let Some(v) = field.strip_prefix("Addr=") {
        let mut words = v.split_whitespace();
        let digits = words.next().unwrap_or(v);
        p.addr = hex(&digits.replace('?', "0"));
        if digits.contains('?') {
            // `(21:0)`: the highest known bit and bit 0.
            p.addr_bits = words
                .next()
                .and_then(|w| w.strip_prefix('('))
                .and_then(|w| w.split_once(':'))
                .and_then(|(hi, _)| hi.parse::<u8>().ok())
                .map(|hi| hi + 1);
        }
    } else if let Some(v) = field.strip_prefix("ISA=") {
        p.isa = Some(
            match v {
                "ARM(32)" => "arm",
                "Thumb2" => "thumb",
                "Jazelle" => "jazelle",
                "ThumbEE" => "thumbee",
                other => other,
            }
            .to_owned(),
        );
    } else if let Some(v) = field.strip_prefix("Cycles=") {
        p.cycles = v.trim().parse().ok();
    } else if let Some(v) = field.strip_prefix("TS=") {
        p.timestamp = hex(v.split(['~', ' ', '(']).next().unwrap_or(v));
    } else if let Some(v) = field.strip_prefix("Excep=") {
        p.exception = v
            .rsplit_once('[')
            .and_then(|(_, n)| hex(n.trim_end_matches(']')))
            .and_then(|n| u16::try_from(n).ok());
    } else if let Some(v) = field.strip_prefix("Exception=") {
        p.exception = etmv3_exception(v);
        p.exception_name = Some(v.trim().to_owned());
    } else if field == "Cancel prev instr" {
        p.cancel = true;
    } else if let Some(v) = field
        .strip_prefix("CtxtID=")
        .or_else(|| field.strip_prefix("CID="))
    {
        p.context_id = hex(v).and_then(|n| u32::try_from(n).ok());
    } else if let Some(v) = field.strip_prefix("VMID=") {
        p.vmid = hex(v).and_then(|n| u8::try_from(n).ok());
    } else if (field == "S" || field == "N") && !matches!(p.kind.as_str(), "ATOM" | "P_HDR") {
        p.ns = Some(field == "N");
    } else if let Some(r) = field.strip_prefix('(').and_then(|f| f.strip_suffix(')')) {
        p.reason = Some(
            match r {
                "Periodic" => "periodic",
                "Trace Enable" => "trace_on",
                "Trace Restart" | "Restart Overflow" | "Trace Restart after Overflow" => "overflow",
                "Debug Exit" => "debug_exit",
                other => other,
            }
            .to_owned(),
        );
    } else if field.chars().all(|c| matches!(c, 'E' | 'N' | 'W')) {
        p.atoms = Some(field.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etm_and_ptm_lines() {
        let text = "Idx:884; ID:10;\tI_SYNC : Instruction Packet synchronisation.; (Periodic); Addr=0xc002115c; S;  ISA=Thumb2; \n\
Idx:875; ID:10;\tP_HDR : Atom P-header.; WWWE; Cycles=3\n\
Idx:22; ID:10;\tNOTSYNC : Trace Stream not synchronised\n\
Idx:13; ID:0;\tBRANCH_ADDRESS : Branch address packet; Addr=0x00000000 ~[0x0]; S; Excep=Debug Halt [01]; \n\
Idx:26579; ID:13;\tTIMESTAMP : Timestamp packet; TS=0x00000082F9D18BCC ~[0x82F9D18BCC](562537008076); Cycles=0; \n";
        let p = parse_listing(text);
        assert_eq!(p.len(), 4);
        assert_eq!(
            (p[0].idx, p[0].id, p[0].kind.as_str()),
            (884, 0x10, "I_SYNC")
        );
        assert_eq!(p[0].addr, Some(0xc002_115c));
        assert_eq!(p[0].isa.as_deref(), Some("thumb"));
        assert_eq!(p[0].ns, Some(false));
        assert_eq!(p[0].reason.as_deref(), Some("periodic"));
        assert_eq!(p[1].atoms.as_deref(), Some("WWWE"));
        assert_eq!(p[1].cycles, Some(3));
        assert_eq!(p[2].exception, Some(1));
        assert_eq!(p[2].addr, Some(0));
        assert_eq!(p[3].timestamp, Some(0x82_F9D1_8BCC));
        assert_eq!(p[3].cycles, Some(0));
    }

    #[test]
    fn etmv3_partial_addresses_exceptions_and_lines_after_errors() {
        let text = "Idx:691; ID:10;\tBRANCH_ADDRESS : Branch address.; Addr=0x??09F49C (21:0) ~[0x9F49C]; \n\
Idx:23; ID:10;\tBRANCH_ADDRESS : Branch address.; Addr=0x700ACE34 ~[0x700ACE34]; S; Exception=Debug Halt; ; Cancel prev instr\n\
PKTP_ETMV3_0016 : 0x0014 (OCSD_ERR_INVALID_PCKT_HDR) [Invalid packet header]; TrcIdx=28612; CS ID=10; Invalid data trace header.Idx:28612; ID:10;\tBAD_TRACEMODE : Invalid packet type for this trace mode.[BRANCH_ADDRESS]\n\
Idx:9; ID:10;\tBRANCH_ADDRESS : Branch address.; Addr=0x1 ~[0x1]; Exception=Reserved; \n";
        let p = parse_listing(text);
        assert_eq!(p.len(), 4);
        assert_eq!((p[0].addr, p[0].addr_bits), (Some(0x0009_F49C), Some(22)));
        assert_eq!((p[1].addr, p[1].addr_bits), (Some(0x700A_CE34), None));
        assert_eq!(p[1].exception, Some(1));
        assert!(p[1].cancel);
        assert_eq!((p[2].idx, p[2].kind.as_str()), (28612, "BAD_TRACEMODE"));
        assert_eq!(p[3].exception, None);
        assert_eq!(p[3].exception_name.as_deref(), Some("Reserved"));
        assert!(!p[3].cancel);
    }

    #[test]
    fn xz_listings_are_decompressed() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let path = dir.path().join("a.ppl.xz");
        let text = "Idx:2; ID:10;\tA_SYNC : Alignment Synchronisation.\n";
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut text.as_bytes(), &mut xz).expect("compress");
        std::fs::write(&path, &xz).expect("write");
        assert_eq!(read_text(&path).as_deref(), Ok(text));
    }
}
