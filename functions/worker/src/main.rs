//! The worker Lambda: builds configuration and AWS clients once, then hands
//! every invocation to [`worker::WorkerFunction`].
//!
//! Nothing slow stands before the runtime's first poll: the AWS SDK's
//! configuration and clients are built on another thread while this one
//! registers with the runtime, and the HTTP client for Slack and the tools
//! (its own root store) on a third. Then two things go on together: the
//! assistant configuration is read from S3 and the worker assembled, and
//! the turns the first invocation's messages name are read
//! ([`worker::Arrival`]); the invocation's work waits for both. A worker
//! that cannot start logs why and exits, as a failed init did.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use lambda_support::deferred::{Deferred, Starting};
use serde_json::Value;
use worker::{Arrival, AwsClients, Clients, Config, WorkerEvent, WorkerFunction};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // SAFETY: first thing in main: no other thread has started.
    unsafe { lambda_support::tls::read_roots_from_one_file() };
    lambda_support::logging::init();
    let config = Config::from_env().inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    let for_arrival = config.clone();
    let aws = Deferred::spawn(move || async move {
        let sdk = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;
        let http = Deferred::spawn(|| async { adapters_slack::http_client() });
        let aws = AwsClients::new(&sdk);
        let arrival = Arrival::new(&aws.dynamodb, &aws.sqs, &for_arrival);
        (aws, arrival, http)
    });
    let function = Starting::new();
    let assemble = function.build(async {
        let (aws, arrival, http) = aws.get().await;
        let (assistant, http) = tokio::join!(WorkerFunction::read_configuration(&config, &aws.s3), http.get());
        let started = match assistant {
            Ok(assistant) => {
                let clients = Clients::with(aws.clone(), http.clone());
                Box::pin(WorkerFunction::load_with(config, clients, assistant, arrival.clone())).await
            }
            Err(err) => Err(err),
        };
        started.unwrap_or_else(|err| {
            tracing::error!("cannot start: {err}");
            std::process::exit(1)
        })
    });
    let (function, aws) = (&function, &aws);
    let serve = run(service_fn(|event: LambdaEvent<Value>| async move {
        let (deadline, event) = (event.context.deadline, WorkerEvent::read(event.payload));
        let (_, arrival, _) = aws.get().await;
        let (function, ()) = tokio::join!(function.get(), arrival.prepare(&event));
        // Boxed: the handling's future is deep, the runtime's service deeper.
        Box::pin(function.handle_prepared(event, deadline)).await
    }));
    tokio::join!(assemble, serve).1
}
