//! What can go wrong while encoding a flow.

/// Why a flow could not be encoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The memory image does not hold the instruction.
    #[error("instruction {index} at {addr:#010x}: not in the memory image")]
    Memory {
        /// Index of the instruction in the flow (from 0).
        index: u64,
        /// Its address.
        addr: u32,
    },
    /// The flow gives an instruction size the memory image disagrees with.
    #[error(
        "instruction {index} at {addr:#010x}: the flow says {flow} bytes, the code is {decoded}"
    )]
    SizeMismatch {
        /// Index of the instruction in the flow.
        index: u64,
        /// Its address.
        addr: u32,
        /// Size given by the flow.
        flow: u8,
        /// Size of the instruction decoded from memory.
        decoded: u8,
    },
    /// The flow executes an encoding that is UNDEFINED in ARMv7.
    #[error("instruction {index} at {addr:#010x}: UNDEFINED encoding executed")]
    Undefined {
        /// Index of the instruction in the flow.
        index: u64,
        /// Its address.
        addr: u32,
    },
    /// The next instruction is not where the code says execution goes.
    #[error(
        "instruction {index} at {addr:#010x}: next instruction at {found:#010x}, the code leads to {expected:#010x}"
    )]
    Discontinuity {
        /// Index of the instruction in the flow.
        index: u64,
        /// Its address.
        addr: u32,
        /// Where the code says the next instruction is.
        expected: u32,
        /// Where the flow's next instruction is.
        found: u32,
    },
    /// An exception return follows an instruction that is not a taken
    /// indirect branch.
    #[error("instruction {index} at {addr:#010x}: exception return after an instruction that is not a taken indirect branch")]
    NotABranch {
        /// Index of the instruction in the flow.
        index: u64,
        /// Its address.
        addr: u32,
    },
    /// Trace is to start after the last instruction.
    #[error("trace start at instruction {start}, but the flow has {instructions}")]
    StartBeyondEnd {
        /// Requested first instruction.
        start: u64,
        /// Instructions in the flow.
        instructions: u64,
    },
    /// The options cannot be honoured together.
    #[error("options: {0}")]
    Options(String),
    /// The packet encoder refused a packet (a bug in this crate or an
    /// option combination the protocol cannot express).
    #[error("instruction {index}: packet encoder: {reason}")]
    Packet {
        /// Index of the instruction being encoded.
        index: u64,
        /// The packet encoder's message.
        reason: String,
    },
    /// Writing the output failed.
    #[error("write: {0}")]
    Io(#[from] std::io::Error),
}
