//! The Redis glue: thin layers between Redis and the pure core in `crate::filter`.

pub mod alloc;
pub mod args;
pub mod commands;
pub mod config;
pub mod creation;
pub mod datatype;
pub mod errors;
pub mod events;
pub mod limits;
pub mod options;
pub mod registry;
pub mod reply;
