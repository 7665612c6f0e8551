//! The floor for a function whose first event needs an AWS call: a
//! hello-world `lambda_runtime` binary as AWS's SDK examples write it (the
//! SDK's configuration and a DynamoDB client built in `main`, one
//! `service_fn`), whose handler reads one item of `TURNS_TABLE` (a key that
//! does not exist) and answers an SQS batch with no failures. The worker's
//! and the responder's first events make that same read, so their start-up
//! is also printed as a ratio to this.

use aws_sdk_dynamodb::types::AttributeValue;
use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&config);
    let table = std::env::var("TURNS_TABLE")?;
    let (dynamodb, table) = (&dynamodb, &table);
    run(service_fn(|_event: LambdaEvent<Value>| async move {
        dynamodb
            .get_item()
            .table_name(table)
            .key("pk", AttributeValue::S("FLOOR#missing".into()))
            .key("sk", AttributeValue::S("TURN".into()))
            .send()
            .await?;
        Ok::<Value, Error>(json!({"batchItemFailures": []}))
    }))
    .await
}
