//! Text from input files made safe to print: control characters (escape
//! sequences, carriage returns, bells) are written as escapes (the rule
//! of [`crate::escape`], which every text output follows).

pub use crate::escape::shown;
