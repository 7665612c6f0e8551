//! The load test's workloads, for `infra/bench.sh --load`: `load [--seed S]
//! [--steady-minutes M] [--workers N] [--only steady|burst|storm]` runs
//! each workload on a fresh stack, prints the table of figures, and exits
//! non-zero when a question was lost, doubled or left unanswered. Needs
//! the local AWS emulator (`AWS_ENDPOINT_URL`), as the tests do.

use tests::load::{Load, Workload, run, table};

#[tokio::main]
async fn main() {
    let mut load = Load::full(7);
    let mut only: Option<Workload> = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        let number = value.parse::<u64>().ok();
        match (flag.as_str(), number, value.as_str()) {
            ("--seed", Some(n), _) => {
                load = Load { seed: n, bedrock: tests::fake_bedrock::Realism { seed: n, ..load.bedrock }, ..load }
            }
            ("--steady-minutes", Some(n), _) => load.steady_minutes = n as u32,
            ("--workers", Some(n), _) => load.workers = n as usize,
            ("--only", _, "steady") => only = Some(Workload::SteadyDay),
            ("--only", _, "burst") => only = Some(Workload::Burst),
            ("--only", _, "storm") => only = Some(Workload::AlertStorm),
            _ => {
                eprintln!("usage: load [--seed S] [--steady-minutes M] [--workers N] [--only steady|burst|storm]");
                std::process::exit(2);
            }
        }
    }
    let mut all = Vec::new();
    for workload in Workload::ALL.into_iter().filter(|w| only.is_none_or(|only| only == *w)) {
        eprintln!("load: {} …", workload.name());
        let figures = run(&load, workload).await;
        eprintln!("load: {} took {:.0} s", workload.name(), figures.elapsed.as_secs_f64());
        all.push(figures);
    }
    println!(
        "load (seed {}, {} workers; Bedrock: first token ~{:.0} ms, ~{:.0} tokens/s, {} tokens a minute, 1 call in {} a 503; Slack's rate limits)",
        load.seed,
        load.workers,
        load.bedrock.first_token_median_ms,
        load.bedrock.tokens_per_second_median,
        load.bedrock.quota_tokens,
        load.bedrock.server_error_one_in
    );
    println!("{}", table(&all));
    let broken: Vec<_> = all.iter().filter(|f| !f.kept_every_promise()).collect();
    if !broken.is_empty() {
        for figures in broken {
            eprintln!("{}: {}", figures.workload, figures.problems.join("\n"));
        }
        std::process::exit(1);
    }
}
