//! How the DWARF sections of an ELF file are read: shared by the line
//! tables and frames ([`super::dwarf`]), the inline scopes
//! ([`super::inline`]) and the AutoFDO profile's scopes.

/// A DWARF section held in memory shared between readers.
pub(crate) type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;
