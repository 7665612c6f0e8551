//! Newtypes for Slack identifiers that are all strings on the wire and all
//! too easy to mix up (a channel id where a user id belongs, a message `ts`
//! where a thread's `thread_ts` belongs).

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

string_id!(
    /// A workspace (`T…`).
    TeamId
);
string_id!(
    /// An Enterprise Grid organization (`E…`).
    EnterpriseId
);
string_id!(
    /// A channel, private channel or DM (`C…`, `G…`, `D…`).
    ChannelId
);
string_id!(
    /// A user or bot user (`U…`, `W…`).
    UserId
);
string_id!(
    /// An Events API delivery (`Ev…`); Slack's retries repeat it.
    EventId
);
string_id!(
    /// A message timestamp (`1712345678.123456`). A thread is named by the
    /// `ts` of its parent message, its `thread_ts`.
    Ts
);

impl Ts {
    /// The whole seconds of the timestamp (Unix time), if it is one.
    pub fn unix_secs(&self) -> Option<i64> {
        self.0.split('.').next()?.parse().ok()
    }
}

impl TeamId {
    /// Whether the id names a workspace (anything non-empty that is not an
    /// organization's `E…` id: Slack names an organization in some team
    /// fields, as a Grid member's `user.team_id` or an org-wide install's
    /// lifecycle events).
    pub fn is_workspace(&self) -> bool {
        !self.0.trim().is_empty() && !EnterpriseId::is_well_formed(&self.0)
    }
}

impl EnterpriseId {
    /// Whether `text` has an organization id's shape (`E…`: capital
    /// letters and digits), as a configured one must.
    pub fn is_well_formed(text: &str) -> bool {
        (3..=24).contains(&text.len())
            && text.starts_with('E')
            && text.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    }
}

impl UserId {
    /// Whether `text` has a user id's shape (`U…`, or `W…` under Enterprise
    /// Grid: capital letters and digits), as an id taken from a payload's
    /// free-form parts must before it goes into a prompt.
    pub fn is_well_formed(text: &str) -> bool {
        (3..=24).contains(&text.len())
            && text.starts_with(['U', 'W'])
            && text.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    }
}

impl ChannelId {
    /// Whether `text` has a channel id's shape (`C…`, `G…`, `D…`: capital
    /// letters and digits), as an id taken from an event's free-form context
    /// must before it goes into a prompt.
    pub fn is_well_formed(text: &str) -> bool {
        (3..=24).contains(&text.len())
            && text.starts_with(['C', 'G', 'D'])
            && text.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_have_slacks_shape_or_are_refused() {
        for good in ["U061F7AUR", "W0GRIDUSER1"] {
            assert!(UserId::is_well_formed(good), "{good}");
        }
        for bad in ["", "U", "u061f7aur", "C061F7AUR", "U061 F7AUR", "U061F7AUR>", "<!channel>", &"U".repeat(30)] {
            assert!(!UserId::is_well_formed(bad), "{bad}");
        }
    }
}
