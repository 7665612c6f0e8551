//! The worker Lambda: builds configuration and AWS clients once, then hands
//! every invocation to [`worker::WorkerFunction`].
//!
//! Nothing slow stands before the runtime's first poll: the AWS SDK's
//! configuration and clients are built on another thread while this one
//! registers with the runtime (the table's and the queues' first, for the
//! first invocation's read), and the HTTP client for Slack and the tools
//! (its own root store) on a third. The first invocation's read
//! ([`worker::Arrival`]) fetches the turns its messages name and the copy
//! of the assistant configuration the workers keep in one request; the
//! worker is assembled from that copy when it is fresh, from the bucket
//! otherwise, and the invocation's work waits for both. A bucket
//! configuration that cannot be used does not stop the start: the worker
//! serves the last one that parsed (or the defaults) and reports it
//! (`worker_config::fallback`). A worker that cannot start even so
//! logs why and exits, as a failed init did.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use lambda_support::deferred::{Deferred, Starting};
use serde_json::Value;
use worker::{Arrival, AwsClients, Clients, Config, WorkerEvent, WorkerFunction};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // SAFETY: first thing in main: no other thread has started.
    unsafe { lambda_support::tls::read_roots_from_one_file() };
    lambda_support::logging::init();
    // The bot token is read here when the environment names its secret.
    let config = Config::from_env().await.inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    let for_arrival = config.clone();
    let (send_arrival, arrival) = Deferred::sent();
    let aws = Deferred::spawn(move || async move {
        let sdk = adapters_aws::config::load(adapters_aws::config::worker_timeouts()).await;
        // The table's and the queues' clients first: the first invocation's
        // read needs no other, and starts while the rest are built (the
        // HTTP client too, which parses the platform's roots: not before).
        let (dynamodb, sqs) = (aws_sdk_dynamodb::Client::new(&sdk), aws_sdk_sqs::Client::new(&sdk));
        // The receiver is gone only if the process is shutting down.
        let _ = send_arrival.send(Arrival::new(&dynamodb, &sqs, &for_arrival));
        let http = Deferred::spawn(|| async { adapters_slack::http_client() });
        (AwsClients::new(&sdk, dynamodb, sqs), http)
    });
    let function = Starting::new();
    let assemble = function.build(async {
        let (arrival, (aws, http)) = tokio::join!(arrival.get(), aws.get());
        let kept = arrival.kept_configuration(worker::FIRST_EVENT_GRACE).await;
        let configured = WorkerFunction::configuration(&config, &aws.s3, arrival, kept);
        let (configured, http) = tokio::join!(configured, http.get());
        let clients = Clients::with(aws.clone(), http.clone());
        let started = Box::pin(WorkerFunction::load_with(config, clients, configured, arrival.clone())).await;
        started.unwrap_or_else(|err| {
            tracing::error!("cannot start: {err}");
            std::process::exit(1)
        })
    });
    let (function, arrival) = (&function, &arrival);
    let serve = run(service_fn(|event: LambdaEvent<Value>| async move {
        let (deadline, event) = (event.context.deadline, WorkerEvent::read(event.payload));
        let arrival = arrival.get().await;
        let (function, ()) = tokio::join!(function.get(), arrival.prepare(&event));
        // Boxed: the handling's future is deep, the runtime's service deeper.
        Box::pin(function.handle_prepared(event, deadline)).await
    }));
    tokio::join!(assemble, serve).1
}
