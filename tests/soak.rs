//! A longer soak under injected faults, for `infra/bench.sh`: `soak
//! [--questions N] [--seed S] [--one-in K]` prints the report and exits
//! non-zero when a question was lost or doubled. Needs the local AWS
//! emulator (`AWS_ENDPOINT_URL`), as the tests do.

use tests::soak::{Soak, run};

#[tokio::main]
async fn main() {
    let mut soak = Soak { seed: 7, questions: 200, one_in: 8 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().and_then(|v| v.parse::<u64>().ok());
        match (flag.as_str(), value) {
            ("--questions", Some(n)) => soak.questions = n as usize,
            ("--seed", Some(n)) => soak.seed = n,
            ("--one-in", Some(n)) => soak.one_in = n,
            _ => {
                eprintln!("usage: soak [--questions N] [--seed S] [--one-in K]");
                std::process::exit(2);
            }
        }
    }
    let report = run(soak).await;
    println!("soak (seed {}, one call in {} failing): {report}", soak.seed, soak.one_in);
    if !report.problems.is_empty() || report.lost + report.doubled + report.wrong > 0 {
        eprintln!("{}", report.problems.join("\n"));
        std::process::exit(1);
    }
}
