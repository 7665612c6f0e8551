//! The responder Lambda: reads its configuration, then hands every
//! invocation to [`responder::ResponderFunction`], which
//! [`responder::ResponderStart`] assembles while the runtime registers
//! (what runs where: `lambda_support::startup`).

use lambda_runtime::{Error, LambdaEvent};
use lambda_support::startup;
use responder::{Config, ResponderEvent, ResponderFunction, ResponderStart};

// One invocation at a time per process: a single-threaded runtime starts
// faster and is all Lambda gives us a use for.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // The bot token is read here when the environment names its secret.
    let config = startup::configure(Config::from_env()).await?;
    let handler = async |responder: &ResponderFunction, event: LambdaEvent<ResponderEvent>| {
        responder.handle_event(event.payload).await
    };
    startup::serve(ResponderStart::begin(config), handler).await
}
