//! The function's configuration: the runtime contract's variables it
//! reads (and the bot token's secret, when the environment names one).

use adapters_secrets::SecretsManager;
use adapters_slack::web::{BotToken, DEFAULT_BASE_URL};
use lambda_support::env::{self, ConfigError, optional, required};
use slack::mentions::SpecialMentions;
use worker_config::DEFAULT_CONFIG_KEY;
use worker_turn::Limits;

/// The runtime contract's variables this function reads.
#[derive(Debug, Clone)]
pub struct Config {
    pub turns_table: String,
    pub work_queue_url: String,
    pub reply_queue_url: String,
    pub artifact_bucket: String,
    pub model_id: String,
    pub slack_bot_token: BotToken,
    pub slack_api_base_url: String,
    /// Where the assistant configuration lives in the artifact bucket.
    pub assistant_config_key: String,
    /// The Secrets Manager prefix `${secret:NAME}` is read under (the
    /// template scopes the worker's permission to it).
    pub secrets_prefix: String,
    /// The function's memory (Lambda's `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`),
    /// for the compute part of a turn's cost.
    pub memory_mb: u32,
    /// Where operators are alerted of a degraded health check
    /// (`OPS_CHANNEL_ID`); none when unset.
    pub ops_channel: Option<slack::ChannelId>,
    /// Per-user sign-in (`TOKEN_KEY_ID`: the KMS key that seals people's
    /// tokens; `OAUTH_REDIRECT_URI`: the ingress's function URL +
    /// `/oauth/callback`); both or neither.
    pub sign_in: Option<(String, assistant_core::oauth::SignInUrls)>,
    pub limits: Limits,
    /// The special mentions the bot may use (`SLACK_ALLOWED_SPECIAL_MENTIONS`,
    /// as on the responder; default none): the Web API client's output
    /// guard applies it to everything the worker posts.
    pub special_mentions: SpecialMentions,
    /// `SLACK_ENTERPRISE_ID`, as the ingress reads it: an org-wide
    /// install's organization, whose departure stops every workspace's work
    /// and whose workspaces with kept records are listed for its uninstall
    /// (`assistant_core::departures`); unset, one workspace.
    pub organization: Option<slack::EnterpriseId>,
}

impl Config {
    /// The environment's configuration. The bot token given as a Secrets
    /// Manager id (`SLACK_BOT_TOKEN_ID`, as the template deploys it) is read
    /// here, once; a token that cannot be read stops the start.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let mut limits = Limits::default();
        if let Some(max_steps) = optional("MAX_STEPS") {
            limits.max_steps = max_steps
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or(ConfigError::Invalid { name: "MAX_STEPS", reason: "not a positive whole number".into() })?;
        }
        let slack_bot_token = env::required_secret("SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN_ID")?;
        let (turns_table, work_queue_url) = (required("TURNS_TABLE")?, required("WORK_QUEUE_URL")?);
        let (reply_queue_url, artifact_bucket) = (required("REPLY_QUEUE_URL")?, required("ARTIFACT_BUCKET")?);
        let (model_id, ops_channel, sign_in) = (required("MODEL_ID")?, env::ops_channel()?, sign_in_from_env()?);
        let special_mentions = SpecialMentions::parse(&optional("SLACK_ALLOWED_SPECIAL_MENTIONS").unwrap_or_default())
            .map_err(|reason| ConfigError::Invalid { name: "SLACK_ALLOWED_SPECIAL_MENTIONS", reason })?;
        let organization = organization(optional("SLACK_ENTERPRISE_ID"))?;
        // Read last: every other variable is checked before a network call.
        let [slack_bot_token] = env::read_secrets([Some(slack_bot_token)], SecretsManager::at_start_up).await?;
        Ok(Self {
            turns_table,
            work_queue_url,
            reply_queue_url,
            artifact_bucket,
            model_id,
            slack_bot_token: BotToken::new(slack_bot_token.unwrap_or_default()),
            slack_api_base_url: optional("SLACK_API_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            assistant_config_key: optional("ASSISTANT_CONFIG_KEY").unwrap_or_else(|| DEFAULT_CONFIG_KEY.to_owned()),
            secrets_prefix: optional("SECRETS_PREFIX").unwrap_or_else(|| adapters_secrets::DEFAULT_PREFIX.to_owned()),
            memory_mb: optional("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").and_then(|mb| mb.parse().ok()).unwrap_or(512),
            ops_channel: ops_channel.map(slack::ChannelId::new),
            sign_in,
            limits,
            special_mentions,
            organization,
        })
    }
}

/// `SLACK_ENTERPRISE_ID`: an organization id (`E…`) or unset; anything
/// else stops the start, as on the ingress (the value is an id, not a
/// secret, so the message may name it).
fn organization(value: Option<String>) -> Result<Option<slack::EnterpriseId>, ConfigError> {
    match value {
        None => Ok(None),
        Some(org) if slack::EnterpriseId::is_well_formed(&org) => Ok(Some(slack::EnterpriseId::new(org))),
        Some(org) => Err(ConfigError::Invalid {
            name: "SLACK_ENTERPRISE_ID",
            reason: format!("{org:?} is not an Enterprise Grid organization id (E…)"),
        }),
    }
}

/// `TOKEN_KEY_ID` and `OAUTH_REDIRECT_URI`, both or neither.
pub(crate) fn sign_in_from_env() -> Result<Option<(String, assistant_core::oauth::SignInUrls)>, ConfigError> {
    match (optional("TOKEN_KEY_ID"), optional("OAUTH_REDIRECT_URI")) {
        (None, None) => Ok(None),
        (Some(key), Some(uri)) => {
            let urls = url::Url::parse(&uri)
                .ok()
                .and_then(|uri| assistant_core::oauth::SignInUrls::from_callback(&uri))
                .ok_or(ConfigError::Invalid {
                    name: "OAUTH_REDIRECT_URI",
                    reason: "not an https URL ending in /oauth/callback".into(),
                })?;
            Ok(Some((key, urls)))
        }
        (Some(_), None) => Err(ConfigError::Invalid {
            name: "OAUTH_REDIRECT_URI",
            reason: "TOKEN_KEY_ID is set: set the callback URL too".into(),
        }),
        (None, Some(_)) => Err(ConfigError::Invalid {
            name: "TOKEN_KEY_ID",
            reason: "OAUTH_REDIRECT_URI is set: set the key that seals tokens too".into(),
        }),
    }
}
