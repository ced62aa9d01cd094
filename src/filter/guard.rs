//! Who decides whether a filter may grow: every allocation a filter makes (a new layer, a
//! loaded array) is first offered to an [`AllocGuard`]. The core checks the per-filter limit
//! itself ([`MaxFilterBytes`]); the module adds the server's `maxmemory` (`module/limits.rs`).
//! Shared by every filter type and by the decoders.

use crate::filter::FilterError;

/// Decides whether a filter may grow by some bytes. The core checks the per-filter limit
/// itself ([`MaxFilterBytes`]); the module adds the server's `maxmemory`.
pub trait AllocGuard {
    /// May the filter, now `filter_bytes_after` bytes in total (as `BF.INFO Size` counts),
    /// allocate `new_bytes` more?
    fn admit(&self, filter_bytes_after: u64, new_bytes: u64) -> Result<(), FilterError>;
}

/// Admits any allocation: for replicated writes and loading, where the primary already decided.
#[derive(Debug, Clone, Copy)]
pub struct Unlimited;

impl AllocGuard for Unlimited {
    fn admit(&self, _: u64, _: u64) -> Result<(), FilterError> {
        Ok(())
    }
}

/// Refuses to let one filter grow past a byte limit.
#[derive(Debug, Clone, Copy)]
pub struct MaxFilterBytes(pub u64);

impl AllocGuard for MaxFilterBytes {
    fn admit(&self, filter_bytes_after: u64, _new_bytes: u64) -> Result<(), FilterError> {
        if filter_bytes_after > self.0 {
            Err(FilterError::FilterLimit { needed: filter_bytes_after, limit: self.0 })
        } else {
            Ok(())
        }
    }
}
