//! The worker Lambda: builds configuration and AWS clients once, then hands
//! every invocation to [`worker::WorkerFunction`].
//!
//! Nothing slow stands before the runtime's first poll: the AWS SDK's
//! configuration (the credential chain, every root certificate parsed) is
//! built on another thread while this one registers with the runtime; then
//! the assistant configuration is read from S3 here while the HTTP client
//! for Slack and the tools (its own root store) is built on a third, and
//! the worker is assembled. The first invocation waits for what is left.
//! A worker that cannot start logs why and exits, as a failed init did.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use lambda_support::deferred::{Deferred, Starting};
use serde_json::Value;
use worker::{Clients, Config, WorkerFunction};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // SAFETY: first thing in main: no other thread has started.
    unsafe { lambda_support::tls::read_roots_from_one_file() };
    lambda_support::logging::init();
    let config = Config::from_env().inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    // The SDK first, the S3 client with it; then, while this thread reads
    // the configuration with it, the HTTP client on a thread of its own.
    let aws = Deferred::spawn(|| async {
        let aws = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;
        let s3 = adapters_s3::client(&aws);
        let http = Deferred::spawn(|| async { adapters_slack::http_client() });
        (aws, s3, http)
    });
    let function = Starting::new();
    let assemble = function.build(async {
        let (aws, s3, http) = aws.get().await;
        let (assistant, http) = tokio::join!(WorkerFunction::read_configuration(&config, s3), http.get());
        let started = match assistant {
            Ok(assistant) => {
                WorkerFunction::load_with(config, Clients::with(aws, s3.clone(), http.clone()), assistant).await
            }
            Err(err) => Err(err),
        };
        started.unwrap_or_else(|err| {
            tracing::error!("cannot start: {err}");
            std::process::exit(1)
        })
    });
    let function = &function;
    let serve = run(service_fn(|event: LambdaEvent<Value>| async move {
        function.get().await.handle(event.payload, event.context.deadline).await
    }));
    tokio::join!(assemble, serve).1
}
