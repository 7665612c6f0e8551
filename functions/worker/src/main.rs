//! The worker Lambda: builds configuration and AWS clients once, then hands
//! every invocation to [`worker::WorkerFunction`].

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;
use worker::{Clients, Config, WorkerFunction};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    lambda_support::logging::init();
    let config = Config::from_env().inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    let aws = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;
    let function = WorkerFunction::load(config, Clients::new(&aws))
        .await
        .inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    run(service_fn(|event: LambdaEvent<Value>| function.handle(event.payload, event.context.deadline))).await
}
