//! The task stage on hand-made flows: tasks started and resumed through a
//! handler, a shared SVC site told apart by the returns, and one that
//! nothing tells apart.

use crate::clock::ClockInfo;
use crate::convert::Converter;
use crate::sinks::folded::{FoldedSink, Weight};
use crate::sinks::SharedBuffer;
use crate::symbols::{Function, Symbolizer};
use crate::test_events::range;
use trace_core::event::{Event, EventKind, InsnClass};

use InsnClass::{Branch, IndirectBranch, Other};

fn f(start: u32, end: u32, name: &str) -> Function {
    Function {
        start,
        end,
        name: name.to_owned(),
        thumb: false,
    }
}

fn ev(kind: EventKind) -> Event {
    Event {
        offset: 0,
        id: 1,
        kind,
    }
}

/// An SVC taken before `ret`, its handler, and its exception return.
fn svc(ret: u32) -> Vec<Event> {
    vec![
        ev(EventKind::Exception {
            number: 10,
            ret: Some(ret),
        }),
        range(0x400, 3, IndirectBranch, false, false),
        ev(EventKind::ExceptionReturn),
    ]
}

/// Code at `entry` that calls `sys_yield` (an SVC at 0x3000, returning
/// with `BX LR` at 0x3004).
fn yields(entry: u32) -> Vec<Event> {
    let mut v = vec![
        range(entry, 2, Branch, true, false),
        range(0x3000, 1, Other, false, false),
    ];
    v.extend(svc(0x3004));
    v
}

/// Convert `events` with `functions`: the folded stacks and the report.
fn convert(mut functions: Vec<Function>, events: &[Event]) -> (String, crate::tasks::TaskReport) {
    functions.sort_by_key(|f| f.start);
    let symbols = Symbolizer::with_functions(functions);
    let folded = SharedBuffer::new();
    let mut conv = Converter::new(&symbols, ClockInfo::default(), 64);
    conv.add_sink(Box::new(FoldedSink::new(
        folded.clone(),
        Weight::Instructions,
    )));
    for e in events {
        conv.event(e, None).expect("event");
    }
    let report = conv.finish().expect("finish");
    (
        String::from_utf8(folded.bytes()).expect("UTF-8"),
        report.tasks,
    )
}

fn common() -> Vec<Function> {
    vec![
        f(0x100, 0x200, "main"),
        f(0x400, 0x500, "svc_handler"),
        f(0x3000, 0x3010, "sys_yield"),
    ]
}

#[test]
fn tasks_waiting_at_one_svc_site_are_told_apart_by_their_returns() {
    let mut functions = common();
    functions.push(f(0x1000, 0x1100, "task_a"));
    functions.push(f(0x2000, 0x2100, "task_b"));
    let mut events = vec![range(0x100, 2, Other, false, false)];
    events.extend(svc(0x108)); // main starts the scheduler: task_a starts
    events.extend(yields(0x1000)); // task_a yields: task_b starts
    events.extend(yields(0x2000)); // task_b yields: one of them resumes
    events.push(range(0x3004, 1, IndirectBranch, false, true));
    events.push(range(0x1008, 3, Other, false, false)); // task_a's code
    let (folded, report) = convert(functions, &events);
    let names: Vec<&str> = report.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["task_a", "task_b"]);
    assert_eq!((report.switches, report.held, report.unresolved), (3, 1, 0));
    let lines: Vec<&str> = folded.lines().collect();
    // The resumed stretch (the return in sys_yield and task_a's code) is
    // task_a's, on task_a's stack.
    assert!(lines.contains(&"task_a;task_a 5"), "{folded}");
    assert!(lines.contains(&"task_a;task_a;sys_yield 2"), "{folded}");
    assert!(lines.contains(&"task_b;task_b;sys_yield 1"), "{folded}");
    assert!(lines.iter().all(|l| !l.starts_with("unknown")), "{folded}");
}

#[test]
fn tasks_with_the_same_code_and_stack_are_not_guessed() {
    let mut functions = common();
    functions.push(f(0x1000, 0x1100, "worker"));
    let mut events = vec![range(0x100, 2, Other, false, false)];
    events.extend(svc(0x108));
    events.extend(yields(0x1000)); // the first worker yields: a second starts
    events.extend(yields(0x1000)); // the second yields: one of them resumes
    events.push(range(0x3004, 1, IndirectBranch, false, true));
    events.push(range(0x1008, 3, Other, false, false));
    events.extend(svc(0x1014)); // and is switched away before anything tells
    let (folded, report) = convert(functions, &events);
    let names: Vec<&str> = report.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["worker", "worker", "unknown"]);
    assert_eq!((report.held, report.unresolved), (1, 1));
    // The stretch that nothing told apart is unknown's, and no worker's.
    assert!(
        folded.lines().any(|l| l.starts_with("unknown;")),
        "{folded}"
    );
    let worker: u64 = folded
        .lines()
        .filter(|l| l.starts_with("worker;"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum();
    assert_eq!(worker, 2 * (2 + 1 + 3), "{folded}");
}

#[test]
fn an_interrupt_that_returns_where_it_interrupted_switches_nothing() {
    let mut functions = common();
    functions.push(f(0x1000, 0x1100, "task_a"));
    let mut events = vec![range(0x100, 2, Other, false, false)];
    events.extend(svc(0x108));
    events.push(range(0x1000, 2, Branch, true, false));
    events.push(range(0x3000, 1, Other, false, false));
    // An interrupt in sys_yield, back to where it was taken.
    events.push(ev(EventKind::Exception {
        number: 14,
        ret: Some(0x3004),
    }));
    events.push(range(0x400, 3, IndirectBranch, false, false));
    events.push(ev(EventKind::ExceptionReturn));
    events.push(range(0x3004, 1, IndirectBranch, false, true));
    events.push(range(0x1008, 3, Other, false, false));
    let (folded, report) = convert(functions, &events);
    assert_eq!(report.tasks.len(), 1, "{folded}");
    assert_eq!(report.switches, 1);
    assert!(folded.lines().any(|l| l == "task_a;task_a 5"), "{folded}");
}

#[test]
fn without_an_rtos_there_are_no_tasks() {
    // main, interrupted twice, each handler returning where it
    // interrupted.
    let mut events = vec![range(0x100, 2, Other, false, false)];
    events.extend(svc(0x108));
    events.push(range(0x108, 2, Other, false, false));
    events.extend(svc(0x110));
    events.push(range(0x110, 1, Other, false, false));
    let (folded, report) = convert(common(), &events);
    assert!(report.tasks.is_empty());
    assert_eq!(folded, "main 5\nmain;svc_handler 6\n");
}
