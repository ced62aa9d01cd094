//! Unit tests of the chain as a whole, one file per concern: the chain's growth, error and
//! memory (`chain.rs`), the batched paths against the one-by-one ones (`batch.rs`), and
//! counting chains (`counting_chains.rs`).

use super::block::PREFETCH_MIN_BYTES;
use super::chain::*;
use super::claims::*;
use super::counters::{Width, array_counts};
use super::layer::Layer;
use super::params::*;
use crate::filter::FilterError;
use crate::filter::guard::*;
use crate::filter::hash::HashScheme;

mod batch;
mod blocked;
mod chain;
mod counting_chains;
