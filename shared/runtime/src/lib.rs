//! What every function binary shares, whatever it does:
//!
//! - [`env`]: reading the runtime contract's environment variables once at
//!   start-up, failing fast with the name of what is missing;
//! - [`health`]: recognising the scheduled EventBridge health event and
//!   building the health report DESIGN.md specifies.

pub mod env;
pub mod health;
