//! The floor: a hello-world `lambda_runtime` binary as AWS's examples write
//! it (the default tracing subscriber, one `service_fn`), built with the
//! project's release profile. `infra/bench.sh` starts it beside the three
//! functions under the same Runtime Interface Emulator, so their start-up is
//! printed as a ratio to what any Rust Lambda pays.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<Value, Error>(json!({"statusCode": 200, "body": event.payload["body"]}))
    }))
    .await
}
