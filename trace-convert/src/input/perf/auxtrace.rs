//! The CoreSight ETM decoder configuration of PERF_RECORD_AUXTRACE_INFO:
//! a header of three words, then one block of words per CPU.

use super::PerfError;

/// The AUX area type of CoreSight ETM.
pub const TYPE_CS_ETM: u32 = 3;

/// The magic word of an ETMv3 or PTM block.
pub const MAGIC_ETMV3: u64 = 0x3030_3030_3030_3030;
/// The magic word of an ETMv4 block.
pub const MAGIC_ETMV4: u64 = 0x4040_4040_4040_4040;
/// The magic word of an ETE block.
pub const MAGIC_ETE: u64 = 0x5050_5050_5050_5050;

/// Words of an ETMv3/PTM block in header version 0: magic, CPU, ETMCR,
/// ETMTRACEIDR, ETMCCER, ETMIDR.
const ETMV3_V0_WORDS: usize = 6;
/// Words of an ETMv4 block in header version 0.
const ETMV4_V0_WORDS: usize = 9;

/// Bit 31 of a trace ID word (header version 2): the ID is not set yet;
/// an AUX_OUTPUT_HW_ID record gives it.
pub const TRACE_ID_UNSET: u64 = 1 << 31;

/// One CPU's ETMv3 or PTM configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtmV3 {
    /// The CPU.
    pub cpu: u64,
    /// The event's configuration (`attr.config`), whose option bits
    /// (cycle accurate 12, timestamps 28, return stack 29) are those of
    /// ETMCR.
    pub etmcr: u64,
    /// The trace ID word.
    pub traceid: u64,
    /// ETMCCER.
    pub etmccer: u64,
    /// ETMIDR.
    pub etmidr: u64,
}

impl EtmV3 {
    /// Whether ETMIDR says PTM (bits 11:8 = 3).
    #[must_use]
    pub fn is_ptm(&self) -> bool {
        (self.etmidr >> 8) & 0xF == 3
    }
}

/// One CPU's block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuBlock {
    /// ETMv3 or PTM: decoded.
    EtmV3(EtmV3),
    /// Another trace unit (ETMv4, ETE, unknown): named, not decoded.
    Other {
        /// Its magic word.
        magic: u64,
        /// The CPU.
        cpu: u64,
        /// Its parameter words.
        params: Vec<u64>,
    },
}

impl CpuBlock {
    /// The CPU.
    #[must_use]
    pub fn cpu(&self) -> u64 {
        match self {
            CpuBlock::EtmV3(e) => e.cpu,
            CpuBlock::Other { cpu, .. } => *cpu,
        }
    }
}

/// The name of the trace unit of magic word `magic`.
#[must_use]
pub fn unit_name(magic: u64) -> String {
    match magic {
        MAGIC_ETMV3 => "ETMv3/PTM".into(),
        MAGIC_ETMV4 => "ETMv4".into(),
        MAGIC_ETE => "ETE".into(),
        m => format!("an unknown trace unit (magic {m:#018x})"),
    }
}

/// The CoreSight ETM configuration of a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsEtmInfo {
    /// Header version (0, 1 or 2).
    pub version: u64,
    /// The `cs_etm` PMU's type number.
    pub pmu_type: u32,
    /// CPUs described.
    pub nr_cpu: u32,
    /// Snapshot mode.
    pub snapshot: u64,
    /// One block per CPU.
    pub cpus: Vec<CpuBlock>,
}

impl CsEtmInfo {
    /// Parse the words of an AUXTRACE_INFO record of type `kind`, found at
    /// file offset `offset`.
    ///
    /// # Errors
    ///
    /// [`PerfError`] when the type is not CoreSight ETM, the version is not
    /// 0 to 2, or the words end before the blocks the header announces.
    pub fn parse(kind: u32, words: &[u64], offset: u64) -> Result<CsEtmInfo, PerfError> {
        let bad = |what: String| PerfError::Bad { offset, what };
        if kind != TYPE_CS_ETM {
            return Err(bad(format!(
                "AUX area type {kind}: not CoreSight ETM ({TYPE_CS_ETM}); this recording holds other trace"
            )));
        }
        let short = |what: &str| {
            bad(format!(
                "AUXTRACE_INFO: its {} words end in {what}",
                words.len()
            ))
        };
        let version = *words.first().ok_or_else(|| short("the header"))?;
        if version > 2 {
            return Err(bad(format!(
                "AUXTRACE_INFO header version {version}: versions 0 to 2 are read"
            )));
        }
        let pmu = *words.get(1).ok_or_else(|| short("the header"))?;
        let snapshot = *words.get(2).ok_or_else(|| short("the header"))?;
        let nr_cpu = (pmu & 0xFFFF_FFFF) as u32;
        let mut cpus = Vec::new();
        let mut i = 3usize;
        for n in 0..nr_cpu {
            let (block, next) = cpu_block(words, i, version, n, offset)?;
            cpus.push(block);
            i = next;
        }
        Ok(CsEtmInfo {
            version,
            pmu_type: (pmu >> 32) as u32,
            nr_cpu,
            snapshot,
            cpus,
        })
    }
}

/// The CPU block `n` of AUXTRACE_INFO `words` (at file offset `offset`,
/// header `version`), starting at word `i`, and the index of the word
/// after it.
///
/// # Errors
///
/// [`PerfError::Bad`] when the words end inside the block, a version 0
/// block's magic is unknown (its size with it), or an ETMv3/PTM block has
/// fewer than its four registers.
fn cpu_block(
    words: &[u64],
    i: usize,
    version: u64,
    n: u32,
    offset: u64,
) -> Result<(CpuBlock, usize), PerfError> {
    let bad = |what: String| PerfError::Bad { offset, what };
    let what = format!("CPU block {n}");
    let short = || {
        bad(format!(
            "AUXTRACE_INFO: its {} words end in {what}",
            words.len()
        ))
    };
    let magic = *words.get(i).ok_or_else(short)?;
    let cpu = *words.get(i + 1).ok_or_else(short)?;
    let (params_at, count) = if version == 0 {
        let total = if magic == MAGIC_ETMV3 {
            ETMV3_V0_WORDS
        } else if magic == MAGIC_ETMV4 {
            ETMV4_V0_WORDS
        } else {
            return Err(bad(format!(
                "AUXTRACE_INFO version 0, {what}: magic {magic:#018x} is not ETMv3/PTM or ETMv4, so its size is unknown"
            )));
        };
        (i + 2, total - 2)
    } else {
        let nr = *words.get(i + 2).ok_or_else(short)?;
        let nr = usize::try_from(nr)
            .ok()
            .filter(|&n| n <= words.len())
            .ok_or_else(short)?;
        (i + 3, nr)
    };
    let params = words.get(params_at..params_at + count).ok_or_else(short)?;
    let block = if magic == MAGIC_ETMV3 {
        if params.len() < 4 {
            return Err(bad(format!(
                "AUXTRACE_INFO {what}: {} ETMv3/PTM parameters, 4 needed (ETMCR, ETMTRACEIDR, ETMCCER, ETMIDR)",
                params.len()
            )));
        }
        CpuBlock::EtmV3(EtmV3 {
            cpu,
            etmcr: params[0],
            traceid: params[1],
            etmccer: params[2],
            etmidr: params[3],
        })
    } else {
        CpuBlock::Other {
            magic,
            cpu,
            params: params.to_vec(),
        }
    };
    Ok((block, params_at + count))
}
