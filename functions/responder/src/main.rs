//! The responder Lambda: builds configuration and clients once, then hands
//! every invocation to [`responder::ResponderFunction`].

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use responder::{Clients, Config, ResponderFunction};
use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    lambda_support::logging::init();
    let config = Config::from_env().inspect_err(|err| tracing::error!("cannot start: {err}"))?;
    let aws = adapters_aws::config::load(adapters_aws::config::responder_timeouts()).await;
    let function = ResponderFunction::new(config, Clients::new(&aws));
    run(service_fn(|event: LambdaEvent<Value>| function.handle(event.payload))).await
}
