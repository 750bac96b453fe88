//! The seam's packet functions for a packet crate shaped like
//! `etm-packets` (`Parser::new(config)`, `feed_at`, `finish`, `stats()`
//! with `bytes_fed`, `bytes_in_packets`, `bytes_skipped`, `packets` and
//! `errors`, `same_state`, errors with an `offset`): written once,
//! expanded in each such protocol's implementation.

/// Expands, inside `impl PacketProtocol for ...`, to the associated
/// types `Packet`, `Error`, `Parser` of the packet crate `$krate` and
/// the functions `parser`, `feed`, `finish`, `stats`, `same_state` and
/// `error_offset`.
macro_rules! packet_crate_parser {
    ($krate:ident) => {
        type Packet = $krate::Packet;
        type Error = $krate::Error;
        type Parser = $krate::Parser;

        fn parser(cfg: $krate::Config) -> $krate::Parser {
            $krate::Parser::new(cfg)
        }

        #[inline(always)]
        fn feed<'p>(
            parser: &'p mut $krate::Parser,
            offset: u64,
            data: &'p [u8],
        ) -> impl Iterator<Item = Result<(u64, $krate::Packet), $krate::Error>> + 'p {
            parser.feed_at(offset, data)
        }

        fn finish(parser: &mut $krate::Parser) -> Option<$krate::Error> {
            parser.finish()
        }

        fn stats(parser: &$krate::Parser) -> $crate::protocol::SourceStats {
            let s = parser.stats();
            $crate::protocol::SourceStats {
                bytes: s.bytes_fed,
                in_packets: s.bytes_in_packets,
                packets: s.packets,
                skipped: s.bytes_skipped,
                errors: s.errors,
            }
        }

        fn same_state(a: &$krate::Parser, b: &$krate::Parser) -> bool {
            a.same_state(b)
        }

        fn error_offset(e: &$krate::Error) -> u64 {
            e.offset
        }
    };
}
pub(crate) use packet_crate_parser;
