//! A signal that the tools a worker was assembled with changed under it:
//! an MCP server said its tool list changed (`notifications/tools/list_changed`)
//! and the new list is kept. The registry carries it; the function sees it
//! before its next invocation and assembles the worker anew (from the kept
//! lists: no server is asked), so the next step or turn offers the new list.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared by the registry and whatever may notice a change; clones are the
/// same signal.
#[derive(Debug, Clone, Default)]
pub struct ToolsChanged(Arc<AtomicBool>);

impl ToolsChanged {
    /// The tools changed: the worker should be assembled again.
    pub fn mark(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether they changed since the last [`Self::take`].
    pub fn is_marked(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// Whether they changed, clearing the mark (one reassembly a change).
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::SeqCst)
    }
}
