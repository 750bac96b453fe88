//! sigrok's protocol decoders (Debian's `sigrok-cli`) as an independent
//! reference for ITM/DWT: bytes are sent as a UART signal through its
//! `uart` decoder, then `arm_tpiu` (formatted streams) and `arm_itm`.

use std::process::Command;

/// UART bit samples per bit of the signal made for sigrok.
const SAMPLES_PER_BIT: usize = 4;

/// Whether `sigrok-cli` can be run; says why not when it cannot.
///
/// # Panics
///
/// When it cannot and the `CI` environment variable is set.
#[must_use]
pub fn present() -> bool {
    crate::tool("sigrok-cli", &["--version"], "sigrok-cli")
}

/// The bytes as an 8N1 UART signal, one sample byte per sample, with
/// `gap` idle byte times before each stretch and after the last (a gap
/// resets sigrok's decoders).
#[must_use]
pub fn uart_signal(stretches: &[&[u8]], gap: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let idle =
        |out: &mut Vec<u8>, bytes: usize| out.resize(out.len() + bytes * 10 * SAMPLES_PER_BIT, 1);
    for s in stretches {
        idle(&mut out, gap);
        for &b in *s {
            let bits = std::iter::once(0)
                .chain((0..8).map(|i| (b >> i) & 1))
                .chain(std::iter::once(1));
            for bit in bits {
                out.resize(out.len() + SAMPLES_PER_BIT, bit);
            }
        }
    }
    idle(&mut out, gap);
    out
}

/// sigrok's `arm_itm` annotations (its `trace`, `software`,
/// `dwt_watchpoint`, `dwt_exc` and `dwt_pc` rows) of `stretches`, sent as
/// one UART signal with idle gaps between them, through `arm_tpiu`
/// (stream 1) when `tpiu`: one line each, `arm_itm-1: ...`.
///
/// # Panics
///
/// When sigrok-cli cannot be run or fails.
#[must_use]
pub fn itm_annotations(stretches: &[&[u8]], tpiu: bool) -> String {
    let signal = uart_signal(stretches, 20);
    let path = std::env::temp_dir().join(format!(
        "itm_sigrok_{}_{tpiu}_{:p}.bin",
        std::process::id(),
        stretches
    ));
    std::fs::write(&path, &signal).expect("write the signal");
    let rate = 1_000_000 * SAMPLES_PER_BIT;
    let stack = if tpiu {
        "uart:rx=0:baudrate=1000000,arm_tpiu:stream=1,arm_itm"
    } else {
        "uart:rx=0:baudrate=1000000,arm_itm"
    };
    let out = Command::new("sigrok-cli")
        .arg("-I")
        .arg(format!("binary:numchannels=1:samplerate={rate}"))
        .arg("-i")
        .arg(&path)
        .args(["-P", stack])
        .args(["-A", "arm_itm=trace:software:dwt_watchpoint:dwt_exc:dwt_pc"])
        .output()
        .expect("run sigrok-cli");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 annotations")
}
