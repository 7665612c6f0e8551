//! Who the bot acts as: the person's own sign-in to the providers that
//! tools act through ([`sign_in`]), and the app's Home tab that shows
//! those connections ([`home`]).
//!
//! Uses the tool registry (how a tool says it acts as the person:
//! [`tools_registry::auth`]) and the core; the tool families and the turn
//! loop use it, never the other way round.

pub mod home;
pub mod sign_in;

pub use sign_in::{Access, Completed, SignIn, SignInConfigError, SignInPorts};
