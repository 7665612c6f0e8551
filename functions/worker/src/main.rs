//! The worker Lambda: reads its configuration, then hands every invocation
//! to [`worker::WorkerFunction`], which [`worker::WorkerStart`] assembles
//! while the runtime registers (what runs where: `lambda_support::startup`).

use lambda_runtime::{Error, LambdaEvent};
use lambda_support::startup;
use worker::{Config, WorkerEvent, WorkerFunction, WorkerStart};

// One invocation at a time per process: a single-threaded runtime starts
// faster and is all Lambda gives us a use for.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // The bot token is read here when the environment names its secret.
    let config = startup::configure(Config::from_env()).await?;
    let handler = async |worker: &WorkerFunction, event: LambdaEvent<WorkerEvent>| {
        worker.handle_prepared(event.payload, event.context.deadline).await
    };
    startup::serve(WorkerStart::begin(config), handler).await
}
