//! Integration tests of `trace-convert`, one test binary: a module per
//! subject (the library, the command line, the outputs against their
//! consumers, damaged and hostile inputs), plus the helpers they share.
//! Filter by module as by test name, e.g. `cargo test -p trace-convert
//! --test integration convert_golden::`.

mod autofdo_profile;
mod callstack_fast_path;
mod cli_assets;
mod cli_misuse;
mod cli_outputs;
mod coalesced_instants;
mod common_addr2line;
mod convert_cli;
mod convert_common;
mod convert_consumers;
mod convert_corpus;
mod convert_coverage_truth;
mod convert_events;
mod convert_golden;
mod convert_lcov_alone;
mod convert_parts;
mod convert_real;
mod convert_slices;
mod convert_stop;
mod coverage_inlined;
mod coverage_spaces;
mod cycles_ignored;
mod damage_modes;
mod damaged_captures;
mod decode_cli;
mod decode_format_none;
mod escaping;
mod formats_events;
mod formats_lcov;
mod formats_perfetto;
mod formats_speedscope;
mod fuzz_smoke;
mod help_examples;
mod help_groups;
mod inline_scopes;
mod inline_stacks;
mod kallsyms_names;
mod lcov_paths;
mod listing_lines;
mod listing_symbols;
mod listing_threads;
mod multicore_time;
mod packets_cli;
mod packets_known_bits;
mod parallel_decode;
mod perf_cli;
mod perf_common;
mod perf_container;
mod perf_damaged;
mod perf_hostile;
mod perf_linux;
mod perf_recordings;
mod perf_threads;
mod report_cli;
mod report_counts;
mod snapshot;
mod snapshot_hostile;
mod summary_names;
mod tpiu_streams;
mod track_names;
mod window_filters;
