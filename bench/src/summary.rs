//! The headline figures, collected as each part of the benchmark measures
//! them and printed at the end as one table: the table README.md's
//! "Benchmark" section and the book's benchmark chapter hold, pasted as
//! is (`tests/docs.rs` checks that both have exactly these rows, in this
//! order, and the command that printed them). Binary sizes are not among
//! them: they have their own table, the one place they are stated.

use std::sync::Mutex;

/// The rows, in order: what each states, and its budget.
pub const ROWS: &[(&str, &str)] = &[
    ("ingress: verify + parse + route, CPU only, warm (median)", "< 200 µs"),
    ("worker overhead per step, model and tools excluded (median of 10-step turns)", "< 5 ms"),
    ("responder CPU per answer: redact, render, split (median)", ""),
    ("first streamed words after the model's first token, prose at 60 tokens/s (median)", "< 1 s"),
    ("ingress: first invoke, a fresh process (× the floor's)", "≤ 1.5× the floor"),
    ("worker: first invoke, a fresh process, AWS answering at once (× the floor's)", "≤ 1.5× the floor"),
    ("responder: first invoke, a fresh process, AWS answering at once (× the floor's)", "≤ 1.5× the floor"),
    ("peak RSS: ingress / worker / responder", "< 40 MB"),
    ("mention → first status line: cold / warm worker (median)", ""),
    ("a turn's AWS cost, model excluded: 1 / 10 steps", ""),
    ("prompt cache: a 10-step turn's input tokens read from it", ""),
];

static MEASURED: Mutex<Vec<(&str, String)>> = Mutex::new(Vec::new());

/// Records `value` for the row that starts with `row` (a row measured
/// twice keeps the last).
pub fn record(row: &str, value: String) {
    let (label, _) = ROWS.iter().find(|(label, _)| label.starts_with(row)).expect("a summary row");
    let mut measured = MEASURED.lock().expect("summary lock");
    measured.retain(|(kept, _)| kept != label);
    measured.push((label, value));
}

/// The table, every row (a row not measured in this run says so).
pub fn print(commit: &str) {
    let measured = MEASURED.lock().expect("summary lock");
    println!("\n## The table (README.md's Benchmark section and docs/src/benchmark.md: paste it as is)\n");
    println!("`bash infra/bench.sh` at {commit}, {}:\n", machine());
    println!("| figure | measured | budget |");
    println!("|---|---|---|");
    for (label, budget) in ROWS {
        let value = measured.iter().find(|(kept, _)| kept == label).map_or("not measured in this run", |(_, v)| v);
        println!("| {label} | {value} | {budget} |");
    }
}

/// The machine, in a few words (cores and architecture).
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    format!("{cores} cores, {}", std::env::consts::ARCH)
}
