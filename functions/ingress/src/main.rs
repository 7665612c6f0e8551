//! The ingress Lambda: builds configuration and AWS clients once, then hands
//! every invocation to [`ingress::Ingress`].

use assistant_core::SystemClock;
use ingress::{Config, Ingress};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;
use std::sync::Arc;

// One invocation at a time per process: a single-threaded runtime starts
// faster and is all Lambda gives us a use for.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // SAFETY: first thing in main: no other thread has started.
    unsafe { lambda_support::tls::read_roots_from_one_file() };
    lambda_support::logging::init();
    // Reads the secrets the environment names in Secrets Manager, if any:
    // the first request needs the signing secret anyway.
    let config = Config::from_env().await.inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    // The AWS clients are built beside the runtime's start, not before it.
    let ingress = Ingress::start(config, Arc::new(SystemClock));
    run(service_fn(|event: LambdaEvent<Value>| ingress.handle(event.payload))).await
}
