//! Function names from a kernel's symbol list, for traces of code with no
//! ELF file at hand (a Linux kernel, firmware shipped with only a map):
//! `/proc/kallsyms` and `System.map`, both one symbol per line,
//!
//! ```text
//! c0008000 T stext
//! c0008060 t __create_page_tables
//! bf000000 t ext4_init_fs [ext4]
//! ```
//!
//! an address in hex, a type letter as `nm` prints it and the name, and
//! in `/proc/kallsyms` the module in brackets. The code symbols (types
//! `T`, `t`, `W`) become functions; each extends to the next symbol of any
//! type at a higher address (the list has no sizes), the last one over
//! one instruction (4 bytes). Bit 0 of an address marks Thumb code and is
//! cleared, as in an ELF symbol table. Lines without an address (`nm`'s
//! undefined symbols, `U name`) and empty lines are passed over. Symbols
//! above 4 GiB are left out; a list with no other code symbol (a 64-bit
//! kernel's) is an error that says so.
//!
//! ```
//! use trace_convert::symbols::kallsyms;
//!
//! let map = "c0008000 T stext\nc0008040 d some_data\nc0008100 t helper\n";
//! let f = kallsyms::parse(map)?;
//! assert_eq!(f.len(), 2);
//! assert_eq!((f[0].start, f[0].end, f[0].name.as_str()), (0xc000_8000, 0xc000_8040, "stext"));
//! assert_eq!((f[1].start, f[1].end), (0xc000_8100, 0xc000_8104));
//! # Ok::<(), kallsyms::KallsymsError>(())
//! ```

use super::Function;

/// Why a symbol list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KallsymsError {
    /// A line is not `ADDRESS TYPE NAME [MODULE]`.
    #[error("line {line}: `{text}` is not `ADDRESS TYPE NAME [MODULE]` (the format of /proc/kallsyms and System.map)")]
    BadLine {
        /// Line number, from 1.
        line: usize,
        /// The line (shortened).
        text: String,
    },
    /// No line names a code symbol.
    #[error("no function symbols (type T, t or W) in the list")]
    NoFunctions,
    /// Every code symbol lies above 4 GiB: the list of a 64-bit kernel,
    /// whose code is not ARMv7's.
    #[error("all {count} function symbols lie above 4 GiB (the list of a 64-bit kernel): ARMv7 code has 32-bit addresses")]
    Above4GiB {
        /// How many code symbols the list has.
        count: usize,
    },
    /// Every address is 0: `/proc/kallsyms` read without the right to see
    /// addresses.
    #[error("every address is 0: /proc/kallsyms hides addresses from unprivileged readers (read it as root, or set kernel.kptr_restrict=0)")]
    Hidden,
}

/// Longest line text quoted in an error.
const QUOTED: usize = 80;

/// The most bytes read from a symbol list that has no size (a procfs
/// file, a pipe): a kernel's list is tens of megabytes.
pub const MAX_STREAMED: u64 = 1 << 28;

/// The bytes of the symbol list at `path`: a regular file with a size is
/// mapped; one whose size is 0 (`/proc/kallsyms`: procfs gives no sizes)
/// and a pipe (`<(ssh board cat /proc/kallsyms)`) are read to their end,
/// at most [`MAX_STREAMED`] bytes.
///
/// # Errors
///
/// The error of opening or reading it; anything but a regular file or a
/// pipe, and a stream longer than [`MAX_STREAMED`], are
/// [`std::io::ErrorKind::InvalidInput`].
pub fn read(path: &std::path::Path) -> std::io::Result<trace_core::memory::Contents> {
    use std::io::{Error, ErrorKind};
    let meta = std::fs::metadata(path)?;
    #[cfg(unix)]
    let pipe = std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type());
    #[cfg(not(unix))]
    let pipe = false;
    if meta.is_file() && meta.len() > 0 {
        return trace_core::memory::Contents::map_path(path);
    }
    if !meta.is_file() && !pipe {
        // The error that names what it is.
        trace_core::memory::open_regular(path)?;
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let file = std::fs::File::open(path)?;
    match crate::input::folder::read_capped(file, MAX_STREAMED)? {
        Ok(bytes) => Ok(trace_core::memory::Contents::from(bytes)),
        Err(_) => Err(Error::new(
            ErrorKind::InvalidInput,
            format!("holds more than {MAX_STREAMED} bytes: not a symbol list"),
        )),
    }
}

/// The functions of a `/proc/kallsyms` or `System.map` text, sorted by
/// start address (see the [module](self) docs). Symbols whose address does
/// not fit 32 bits are left out (they cannot be ARMv7 code).
///
/// # Errors
///
/// [`KallsymsError`] for a line of another format, a list without code
/// symbols, or one whose addresses are all hidden.
pub fn parse(text: &str) -> Result<Vec<Function>, KallsymsError> {
    // Every symbol's address (for the sizes) and the code symbols.
    let mut all: Vec<u32> = Vec::new();
    let mut code: Vec<(u32, bool, &str)> = Vec::new();
    let mut nonzero = false;
    let mut wide_code = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let bad = || KallsymsError::BadLine {
            line: i + 1,
            text: line.chars().take(QUOTED).collect(),
        };
        let mut fields = line.split_whitespace();
        let (Some(first), Some(second)) = (fields.next(), fields.next()) else {
            return Err(bad());
        };
        let Some(name) = fields.next() else {
            // `U name`: an undefined symbol, with no address.
            if first.len() == 1 && first.chars().all(|c| c.is_ascii_alphabetic()) {
                continue;
            }
            return Err(bad());
        };
        // The module, if any, must be bracketed and last.
        match (fields.next(), fields.next()) {
            (None, None) => {}
            (Some(m), None) if m.starts_with('[') && m.ends_with(']') => {}
            _ => return Err(bad()),
        }
        let Ok(addr) = u64::from_str_radix(first, 16) else {
            return Err(bad());
        };
        let mut kind = second.chars();
        let (Some(kind), None) = (kind.next(), kind.next()) else {
            return Err(bad());
        };
        if !kind.is_ascii_alphabetic() && kind != '?' && kind != '-' {
            return Err(bad());
        }
        nonzero |= addr != 0;
        let code_kind = matches!(kind, 'T' | 't' | 'W');
        let Ok(addr) = u32::try_from(addr) else {
            wide_code += usize::from(code_kind);
            continue;
        };
        all.push(addr & !1);
        if code_kind {
            code.push((addr & !1, addr & 1 == 1, name));
        }
    }
    if !nonzero && !all.is_empty() {
        return Err(KallsymsError::Hidden);
    }
    if code.is_empty() && wide_code > 0 {
        return Err(KallsymsError::Above4GiB { count: wide_code });
    }
    if code.is_empty() {
        return Err(KallsymsError::NoFunctions);
    }
    all.sort_unstable();
    all.dedup();
    let mut functions: Vec<Function> = code
        .into_iter()
        .map(|(start, thumb, name)| {
            let next = all.partition_point(|&a| a <= start);
            let end = all
                .get(next)
                .copied()
                .unwrap_or_else(|| start.saturating_add(4));
            Function {
                start,
                end,
                name: name.to_owned(),
                thumb,
            }
        })
        .collect();
    functions.sort_by(|a, b| a.start.cmp(&b.start).then(a.name.cmp(&b.name)));
    Ok(functions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_lines_with_modules_and_types() {
        let text = "\
c0008000 T stext
c0008000 T _text
c0008040 t __create_page_tables
c0008100 D some_data
c0008101 t thumb_helper
c0009000 r ro_data
bf000000 t ext4_init_fs\t[ext4]
bf000010 W weak_fn\t[ext4]
";
        let f = parse(text).expect("parses");
        let got: Vec<(u32, u32, &str, bool)> = f
            .iter()
            .map(|f| (f.start, f.end, f.name.as_str(), f.thumb))
            .collect();
        assert_eq!(
            got,
            vec![
                (0xbf00_0000, 0xbf00_0010, "ext4_init_fs", false),
                (0xbf00_0010, 0xc000_8000, "weak_fn", false),
                (0xc000_8000, 0xc000_8040, "_text", false),
                (0xc000_8000, 0xc000_8040, "stext", false),
                (0xc000_8040, 0xc000_8100, "__create_page_tables", false),
                (0xc000_8100, 0xc000_9000, "thumb_helper", true),
            ]
        );
    }

    #[test]
    fn undefined_symbols_and_blank_lines_are_passed_over() {
        let f = parse("         U memcpy\n\n00000020 T main\n").expect("parses");
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].start, f[0].end), (0x20, 0x24));
    }

    #[test]
    fn other_formats_are_refused_with_the_line() {
        let e = parse("c0008000 T stext\nthis is not a map line at all\n").expect_err("refused");
        assert!(matches!(e, KallsymsError::BadLine { line: 2, .. }), "{e:?}");
        assert!(matches!(
            parse("zz T name").expect_err("refused"),
            KallsymsError::BadLine { line: 1, .. }
        ));
        assert!(matches!(
            parse("c0008000 Tx name").expect_err("refused"),
            KallsymsError::BadLine { .. }
        ));
        assert!(matches!(
            parse("c0008000 T name extra").expect_err("refused"),
            KallsymsError::BadLine { .. }
        ));
        // An ELF file given by mistake is not a list either.
        assert!(matches!(
            parse("\u{7f}ELF\u{1}\u{1}\u{1}").expect_err("refused"),
            KallsymsError::BadLine { .. }
        ));
    }

    #[test]
    fn hidden_addresses_and_data_only_lists_are_errors() {
        assert_eq!(
            parse("00000000 T stext\n00000000 t x\n").expect_err("refused"),
            KallsymsError::Hidden
        );
        assert_eq!(
            parse("c0000000 D data\n").expect_err("refused"),
            KallsymsError::NoFunctions
        );
        assert_eq!(parse("").expect_err("refused"), KallsymsError::NoFunctions);
    }

    #[test]
    fn addresses_beyond_32_bits_are_left_out() {
        let f = parse("ffffffc010080000 T arm64_fn\nc0008000 T arm_fn\n").expect("parses");
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].name, "arm_fn");
    }

    #[test]
    fn a_list_with_every_function_above_4_gib_says_so() {
        // An arm64 kernel's list: code and data, all 64-bit addresses.
        let text = "ffffffc010000000 T _text\nffffffc010001000 t helper\nffffffc011000000 D data\n";
        assert_eq!(
            parse(text).expect_err("refused"),
            KallsymsError::Above4GiB { count: 2 }
        );
        assert_eq!(
            parse("ffffffc011000000 D data\n").expect_err("refused"),
            KallsymsError::NoFunctions
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn procfs_files_are_read_though_their_size_is_zero() {
        // procfs gives every file the size 0, /proc/kallsyms too.
        let path = std::path::Path::new("/proc/self/maps");
        assert_eq!(std::fs::metadata(path).expect("procfs").len(), 0);
        let bytes = read(path).expect("read");
        assert!(bytes.len() > 100, "{} bytes", bytes.len());
        if std::path::Path::new("/proc/kallsyms").exists() {
            assert!(!read(std::path::Path::new("/proc/kallsyms"))
                .expect("kallsyms")
                .is_empty());
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_list_from_a_pipe_is_read_and_devices_are_refused() {
        let dir = std::env::temp_dir().join(format!("tc-kallsyms-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let fifo = dir.join("map");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()));
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                std::fs::write(fifo, "c0008000 T stext\nc0008100 t helper\n")
            })
        };
        let bytes = read(&fifo).expect("read the pipe");
        writer.join().expect("writer").expect("write");
        let f = parse(std::str::from_utf8(bytes.bytes()).expect("text")).expect("parse");
        assert_eq!(f.len(), 2);
        let e = read(std::path::Path::new("/dev/zero")).expect_err("a device");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
