//! Where trace comes from: snapshot directories, or capture files described
//! by command-line flags.

pub mod ini;
pub mod snapshot;
