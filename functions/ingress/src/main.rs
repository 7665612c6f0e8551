//! The ingress Lambda: reads its configuration, then hands every invocation
//! to [`ingress::Ingress`] (its AWS clients are built on a helper thread
//! meanwhile: `lambda_support::startup`).

use assistant_core::SystemClock;
use ingress::{Config, Ingress, IngressEvent, IngressStart};
use lambda_runtime::{Error, LambdaEvent};
use lambda_support::startup;
use std::sync::Arc;

// One invocation at a time per process: a single-threaded runtime starts
// faster and is all Lambda gives us a use for.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // Reads the secrets the environment names in Secrets Manager, if any:
    // the first request needs the signing secret anyway.
    let config = startup::configure(Config::from_env()).await?;
    let handler = async |ingress: &Ingress, event: LambdaEvent<IngressEvent>| ingress.handle_event(event.payload).await;
    startup::serve(IngressStart::begin(config, Arc::new(SystemClock)), handler).await
}
