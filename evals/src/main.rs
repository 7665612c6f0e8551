//! `infra/eval.sh [--model ID] [--config FILE] [--min-pass-rate R] [cases…]`:
//! runs the evaluation set (all of `evals/cases/` unless cases are named)
//! and prints, per case, pass or fail with the reason, steps, tokens, cost
//! and latency, then a summary; exits non-zero under the pass rate (1.0
//! unless given).

use anyhow::Context;
use evals::{Answerer, load_case, pass_rate, run, table};
use std::path::PathBuf;
use worker_config::AssistantConfig;

const USAGE: &str = "usage: eval [--model MODEL_ID] [--config assistant.json] [--min-pass-rate 0.9] [case.json…]";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut model, mut config, mut min_rate, mut cases) = (None, None, 1.0_f64, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model" => model = Some(args.next().context(USAGE)?),
            "--config" => config = Some(PathBuf::from(args.next().context(USAGE)?)),
            "--min-pass-rate" => min_rate = args.next().context(USAGE)?.parse().context(USAGE)?,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            path => cases.push(PathBuf::from(path)),
        }
    }
    if cases.is_empty() {
        cases = evals::all_cases()?;
    }
    let config = match &config {
        Some(path) => AssistantConfig::parse(&std::fs::read(path)?).with_context(|| format!("{}", path.display()))?,
        None => AssistantConfig::default(),
    };
    let answerer = match model {
        Some(model_id) => {
            let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
            println!("model: {model_id} on Bedrock ({})", aws.region().map_or("no region".into(), |r| r.to_string()));
            Answerer::Bedrock { client: aws_sdk_bedrockruntime::Client::new(&aws), model_id }
        }
        None => {
            println!("model: the cases' recorded replies (priced as {})", evals::RECORDED_PRICES_AS);
            Answerer::Recorded
        }
    };
    let mut verdicts = Vec::new();
    for path in &cases {
        let case = load_case(path)?;
        let verdict = run(&case, &config, &answerer).await.with_context(|| case.name.clone())?;
        verdicts.push(verdict);
    }
    print!("{}", table(&verdicts));
    let rate = pass_rate(&verdicts);
    if rate < min_rate {
        anyhow::bail!("pass rate {:.0}% is under the {:.0}% asked for", rate * 100.0, min_rate * 100.0);
    }
    Ok(())
}
