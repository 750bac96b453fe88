//! The header features: sections after the data (or HEADER_FEATURE
//! records in pipe mode) with the build IDs, the host, the command line
//! and the index of AUX data buffers.

use super::bytes::{c_string, size, Cursor};
use super::header::{FileHeader, Section};
use super::PerfError;

/// The features' names, by number.
pub const NAMES: [&str; 32] = [
    "RESERVED",
    "TRACING_DATA",
    "BUILD_ID",
    "HOSTNAME",
    "OSRELEASE",
    "VERSION",
    "ARCH",
    "NRCPUS",
    "CPUDESC",
    "CPUID",
    "TOTAL_MEM",
    "CMDLINE",
    "EVENT_DESC",
    "CPU_TOPOLOGY",
    "NUMA_TOPOLOGY",
    "BRANCH_STACK",
    "PMU_MAPPINGS",
    "GROUP_DESC",
    "AUXTRACE",
    "STAT",
    "CACHE",
    "SAMPLE_TIME",
    "MEM_TOPOLOGY",
    "CLOCKID",
    "DIR_FORMAT",
    "BPF_PROG_INFO",
    "BPF_BTF",
    "COMPRESSED",
    "CPU_PMU_CAPS",
    "CLOCK_DATA",
    "HYBRID_TOPOLOGY",
    "PMU_CAPS",
];

/// Feature numbers read here.
pub mod id {
    /// Build IDs of the files sampled.
    pub const BUILD_ID: u32 = 2;
    /// Host name.
    pub const HOSTNAME: u32 = 3;
    /// Kernel release.
    pub const OSRELEASE: u32 = 4;
    /// perf's version.
    pub const VERSION: u32 = 5;
    /// Machine architecture.
    pub const ARCH: u32 = 6;
    /// CPUs available and online.
    pub const NRCPUS: u32 = 7;
    /// The recording's command line.
    pub const CMDLINE: u32 = 11;
    /// Index of the AUXTRACE records.
    pub const AUXTRACE: u32 = 18;
}

/// A build ID entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildId {
    /// Process ID (`-1` as `u32::MAX` for the kernel).
    pub pid: u32,
    /// The build ID bytes.
    pub id: Vec<u8>,
    /// The file.
    pub filename: String,
}

impl BuildId {
    /// The build ID in lower-case hexadecimal, as in the build-ID cache.
    #[must_use]
    pub fn hex(&self) -> String {
        self.id.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The features read from a file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Features {
    /// Numbers of the features present.
    pub present: Vec<u32>,
    /// Build IDs.
    pub build_ids: Vec<BuildId>,
    /// Host name.
    pub hostname: Option<String>,
    /// Kernel release.
    pub os_release: Option<String>,
    /// perf version.
    pub version: Option<String>,
    /// Architecture.
    pub arch: Option<String>,
    /// CPUs available and online.
    pub nr_cpus: Option<(u32, u32)>,
    /// Command line words.
    pub cmdline: Option<Vec<String>>,
    /// The AUXTRACE index: file offset and size of each AUXTRACE record
    /// and its data.
    pub auxtrace_index: Vec<(u64, u64)>,
    /// Features present that could not be read, and why.
    pub unreadable: Vec<(u32, String)>,
}

/// The feature name of `bit`.
#[must_use]
pub fn name(bit: u32) -> String {
    NAMES
        .get(bit as usize)
        .map_or_else(|| format!("feature {bit}"), |s| (*s).to_owned())
}

/// Read the feature sections of a (not piped) file: their table follows
/// the data section.
///
/// # Errors
///
/// [`PerfError`] when the table of sections lies outside the file. A
/// feature whose own section is damaged is listed in
/// [`Features::unreadable`] instead.
pub fn read_features(file: &[u8], header: &FileHeader) -> Result<Features, PerfError> {
    let mut f = Features::default();
    let start = header
        .data
        .offset
        .checked_add(header.data.size)
        .ok_or(PerfError::Bad {
            offset: 40,
            what: "data section: offset and size overflow".into(),
        })?;
    let bits: Vec<u32> = (0..256).filter(|&b| header.has_feature(b)).collect();
    let table = Section {
        offset: start,
        size: 16 * bits.len() as u64,
    }
    .of(file, "the feature section table")?;
    let mut c = Cursor::new(table, start);
    for bit in bits {
        let sec = Section::read(&mut c, "a feature section")?;
        f.present.push(bit);
        match sec.of(file, &name(bit)) {
            Ok(bytes) => f.add(bit, bytes, sec.offset),
            Err(e) => f.unreadable.push((bit, e.to_string())),
        }
    }
    Ok(f)
}

impl Features {
    /// Read feature `bit` from its bytes (at file offset `offset`);
    /// a damaged one is noted in [`Features::unreadable`].
    pub fn add(&mut self, bit: u32, bytes: &[u8], offset: u64) {
        if !self.present.contains(&bit) {
            self.present.push(bit);
        }
        if let Err(e) = self.parse(bit, bytes, offset) {
            self.unreadable.push((bit, e.to_string()));
        }
    }

    fn parse(&mut self, bit: u32, bytes: &[u8], offset: u64) -> Result<(), PerfError> {
        let mut c = Cursor::new(bytes, offset);
        match bit {
            id::HOSTNAME => self.hostname = Some(string(&mut c)?),
            id::OSRELEASE => self.os_release = Some(string(&mut c)?),
            id::VERSION => self.version = Some(string(&mut c)?),
            id::ARCH => self.arch = Some(string(&mut c)?),
            id::NRCPUS => {
                let avail = c.u32("CPUs available")?;
                let online = c.u32("CPUs online")?;
                self.nr_cpus = Some((avail, online));
            }
            id::CMDLINE => {
                let n = c.u32("the number of command line words")?;
                let mut words = Vec::new();
                for _ in 0..n {
                    words.push(string(&mut c)?);
                }
                self.cmdline = Some(words);
            }
            id::BUILD_ID => {
                while c.left() > 0 {
                    let at = c.offset();
                    let mut h = c.clone();
                    h.u32("build ID entry type")?;
                    let misc = h.u16("build ID entry misc")?;
                    let n = h.u16("build ID entry size")?;
                    if n < 8 + 4 + 24 {
                        return Err(PerfError::Bad {
                            offset: at,
                            what: format!("build ID entry of {n} bytes: too small"),
                        });
                    }
                    let e = c.take(usize::from(n), "a build ID entry")?;
                    let mut e = Cursor::new(&e[8..], at + 8);
                    let pid = e.u32("pid")?;
                    let raw = e.take(24, "build ID")?;
                    // With bit 15 of misc, byte 20 gives the ID's size.
                    let len = if misc & (1 << 15) != 0 {
                        usize::from(raw[20]).min(20)
                    } else {
                        20
                    };
                    self.build_ids.push(BuildId {
                        pid,
                        id: raw[..len].to_vec(),
                        filename: c_string(e.rest()),
                    });
                }
            }
            id::AUXTRACE => {
                while c.left() > 0 {
                    let n = c.u64("the number of AUXTRACE index entries")?;
                    let at = c.offset();
                    let n = size(n, at, "AUXTRACE index")?;
                    if n > c.left() / 16 {
                        return Err(PerfError::Truncated {
                            offset: at,
                            what: "the AUXTRACE index".into(),
                            need: (n as u64).saturating_mul(16),
                            have: c.left() as u64,
                        });
                    }
                    for _ in 0..n {
                        let o = c.u64("AUXTRACE index offset")?;
                        let s = c.u64("AUXTRACE index size")?;
                        self.auxtrace_index.push((o, s));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// A perf header string: a `u32` length, then that many bytes, padded with
/// NULs.
fn string(c: &mut Cursor<'_>) -> Result<String, PerfError> {
    let n = c.u32("a string's length")?;
    let n = size(u64::from(n), c.offset(), "a string")?;
    Ok(c_string(c.take(n, "a string")?))
}
