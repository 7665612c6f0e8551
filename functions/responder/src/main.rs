//! The responder Lambda: builds configuration and clients once, then hands
//! every invocation to [`responder::ResponderFunction`].
//!
//! Nothing slow stands before the runtime's first poll: the AWS SDK's
//! configuration and clients (the credential chain, every root certificate
//! parsed) on one thread and the HTTP client for Slack (its own root store)
//! on another, while the runtime registers and polls; the first invocation
//! (which needs both) waits for what is left.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use lambda_support::deferred::{Deferred, Starting};
use responder::{Clients, Config, ResponderFunction};
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // SAFETY: first thing in main: no other thread has started.
    unsafe { lambda_support::tls::read_roots_from_one_file() };
    lambda_support::logging::init();
    // The bot token is read here when the environment names its secret.
    let config = Config::from_env().await.inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    let aws = Deferred::spawn(|| adapters_aws::config::load(adapters_aws::config::responder_timeouts()));
    let http = Deferred::spawn(|| async { adapters_slack::http_client() });
    let function = Starting::new();
    let assemble = function.build(async {
        let (aws, http) = tokio::join!(aws.get(), http.get());
        ResponderFunction::new(config, Clients::with_http(aws, http.clone()))
    });
    let function = &function;
    let serve =
        run(service_fn(|event: LambdaEvent<Value>| async move { function.get().await.handle(event.payload).await }));
    tokio::join!(assemble, serve).1
}
