//! What the runner plugs into the three handlers, chosen at start-up: the
//! embedded store or the local AWS emulator's DynamoDB, the offline model
//! or Bedrock, the console or real Slack. Each is an enum over the two
//! adapters that implements the port by passing the call on.

use crate::offline::OfflineModel;
use agent::ThreadRef;
use agent::memory::{MemoryClaims, MemoryDeliveries, MemorySlack, MemoryTurns};
use agent::model::{Model, ModelError, ModelReply, ModelRequest};
use agent::ports::{
    ChannelInfo, ClaimOutcome, Created, DeliveryLog, DeliveryRecord, EventClaim, EventClaims, PortError, SlackReader,
    StoreError, ThreadMessage, TurnStore,
};
use agent::turn::{Turn, TurnId};
use aws_adapters::bedrock::BedrockModel;
use aws_adapters::dynamodb::{DynamoClaims, DynamoDeliveries, DynamoTurns};
use delivery::memory::MemoryPoster;
use delivery::{Outgoing, PostError, SlackPoster, WebPoster};
use slack::{ChannelId, Ts, UserId};
use std::collections::BTreeMap;
use std::sync::Arc;
use worker::SlackWebReader;

pub enum Claims {
    Embedded(MemoryClaims),
    Emulator(DynamoClaims),
}

impl EventClaims for Claims {
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError> {
        match self {
            Claims::Embedded(claims) => claims.claim(claim, now_unix).await,
            Claims::Emulator(claims) => claims.claim(claim, now_unix).await,
        }
    }

    async fn release(&self, claim: &EventClaim) -> Result<(), PortError> {
        match self {
            Claims::Embedded(claims) => claims.release(claim).await,
            Claims::Emulator(claims) => claims.release(claim).await,
        }
    }
}

/// Shared by the worker and the responder.
#[derive(Clone)]
pub enum Turns {
    Embedded(Arc<MemoryTurns>),
    Emulator(DynamoTurns),
}

impl TurnStore for Turns {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        match self {
            Turns::Embedded(turns) => turns.create(turn).await,
            Turns::Emulator(turns) => turns.create(turn).await,
        }
    }

    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        match self {
            Turns::Embedded(turns) => turns.load(id).await,
            Turns::Emulator(turns) => turns.load(id).await,
        }
    }

    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        match self {
            Turns::Embedded(turns) => turns.save(turn).await,
            Turns::Emulator(turns) => turns.save(turn).await,
        }
    }
}

pub enum Deliveries {
    Embedded(MemoryDeliveries),
    Emulator(DynamoDeliveries),
}

impl DeliveryLog for Deliveries {
    async fn load(&self, id: &TurnId) -> Result<DeliveryRecord, StoreError> {
        match self {
            Deliveries::Embedded(log) => log.load(id).await,
            Deliveries::Emulator(log) => log.load(id).await,
        }
    }

    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError> {
        match self {
            Deliveries::Embedded(log) => log.save(id, record).await,
            Deliveries::Emulator(log) => log.save(id, record).await,
        }
    }
}

pub enum LocalModel {
    Offline(OfflineModel),
    Bedrock(BedrockModel),
}

impl Model for LocalModel {
    async fn converse(&self, request: ModelRequest<'_>) -> Result<ModelReply, ModelError> {
        match self {
            LocalModel::Offline(model) => model.converse(request).await,
            LocalModel::Bedrock(model) => model.converse(request).await,
        }
    }
}

pub enum Reader {
    /// No Slack: the question is the whole thread.
    Console(MemorySlack),
    Slack(SlackWebReader),
}

impl SlackReader for Reader {
    async fn channel_info(&self, channel: &ChannelId) -> Result<ChannelInfo, PortError> {
        match self {
            Reader::Console(slack) => slack.channel_info(channel).await,
            Reader::Slack(slack) => slack.channel_info(channel).await,
        }
    }

    async fn thread_history(
        &self,
        thread: &ThreadRef,
        bot_user: Option<&UserId>,
        limit: usize,
    ) -> Result<Vec<ThreadMessage>, PortError> {
        match self {
            Reader::Console(slack) => slack.thread_history(thread, bot_user, limit).await,
            Reader::Slack(slack) => slack.thread_history(thread, bot_user, limit).await,
        }
    }
}

pub enum Poster {
    /// Prints what would be posted.
    Console(MemoryPoster),
    Slack(WebPoster),
}

impl SlackPoster for Poster {
    async fn post(&self, thread: &ThreadRef, turn: &TurnId, message: &Outgoing) -> Result<Ts, PostError> {
        match self {
            Poster::Console(slack) => slack.post(thread, turn, message).await,
            Poster::Slack(slack) => slack.post(thread, turn, message).await,
        }
    }

    async fn update(&self, thread: &ThreadRef, ts: &Ts, turn: &TurnId, message: &Outgoing) -> Result<(), PostError> {
        match self {
            Poster::Console(slack) => slack.update(thread, ts, turn, message).await,
            Poster::Slack(slack) => slack.update(thread, ts, turn, message).await,
        }
    }

    async fn set_status(&self, thread: &ThreadRef, status: &str) -> Result<(), PostError> {
        match self {
            Poster::Console(slack) => slack.set_status(thread, status).await,
            Poster::Slack(slack) => slack.set_status(thread, status).await,
        }
    }

    async fn find_posted(&self, thread: &ThreadRef, turn: &TurnId) -> Result<BTreeMap<String, Ts>, PostError> {
        match self {
            Poster::Console(slack) => slack.find_posted(thread, turn).await,
            Poster::Slack(slack) => slack.find_posted(thread, turn).await,
        }
    }
}
