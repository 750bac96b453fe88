//! The inline scopes read from DWARF equal, at every 2-byte (T32) or
//! 4-byte (A32) address of every function of every corpus program, the
//! inlined functions GNU addr2line reports there (`-f -i`).
//!
//! addr2line runs once per function: its answer can depend on which
//! compilation units earlier questions made it read (the assembly unit of
//! the corpus declares `irq_handler` as a weak alias, and its DWARF entry
//! is relocated onto the C function of that name).

use crate::common_addr2line;

use trace_convert::symbols::Symbolizer;

#[test]
fn inline_chains_match_addr2line_at_every_address() {
    let Some(dir) = test_support::corpus_fixtures() else {
        return;
    };
    if !common_addr2line::available("inline_chains_match_addr2line_at_every_address") {
        return;
    }
    let mut elves: Vec<_> = std::fs::read_dir(&dir)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "elf"))
        .collect();
    elves.sort();
    assert!(!elves.is_empty());
    let (mut checked, mut inlined) = (0usize, 0usize);
    for elf in &elves {
        let symbols = Symbolizer::from_elves(std::slice::from_ref(elf)).expect("symbols");
        let mut addrs: Vec<u32> = Vec::new();
        for f in symbols.functions() {
            let mine: Vec<u32> = (f.start..f.end)
                .step_by(if f.thumb { 2 } else { 4 })
                .collect();
            addrs.extend(&mine);
            let truth = common_addr2line::inline_chains(elf, &mine);
            for (addr, want) in &truth {
                let scope = symbols.inline_scope(*addr);
                assert!(
                    (scope.lo..scope.hi).contains(addr),
                    "{}: {addr:#x} outside its scope {:#x}..{:#x}",
                    elf.display(),
                    scope.lo,
                    scope.hi
                );
                let got: Vec<String> = scope
                    .chain
                    .iter()
                    .map(|s| symbols.inline_name(s.name))
                    .collect();
                assert_eq!(&got, want, "{}: {addr:#x}", elf.display());
                checked += 1;
                inlined += usize::from(!want.is_empty());
            }
        }
        // Turned off: nothing inlined anywhere.
        let mut off = Symbolizer::from_elves(std::slice::from_ref(elf)).expect("symbols");
        off.set_inline_scopes(false);
        assert!(addrs.iter().all(|a| off.inline_scope(*a).chain.is_empty()));
    }
    eprintln!("{checked} addresses checked against addr2line, {inlined} in inlined code");
    assert!(inlined > 50, "the corpus has inlined code: {inlined}");
}
