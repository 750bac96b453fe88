//! Reading OpenCSD `trc_pkt_lister` packet listings (`.ppl`) into values.
//!
//! A packet line looks like
//! `Idx:884; ID:10;\tI_SYNC : Instruction Packet synchronisation.; (Periodic); Addr=0xc002115c; S;  ISA=Thumb2; `
//! (decode listings add the raw bytes in brackets after the ID). Only the
//! facts are kept: offset, trace ID, packet type and field values.

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
    /// `Addr=`: address (I-sync, branch address).
    pub addr: Option<u64>,
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
    /// `Excep=Name [nn]`: exception number.
    pub exception: Option<u16>,
    /// `CtxtID=` / context ID.
    pub context_id: Option<u32>,
    /// `VMID=`.
    pub vmid: Option<u8>,
    /// The line's text, for messages.
    pub text: String,
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

fn parse_line(line_no: usize, line: &str) -> Option<ListedPacket> {
    let rest = line.strip_prefix("Idx:")?;
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
        p.addr = hex(v.split_whitespace().next().unwrap_or(v));
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
}
