//! Leaves every room may use: errors and the thread's last-error slot, the frontend hooks the
//! slot releases through, backtraces, addresses handed to C, bounded byte readers, and the one
//! place threads are started.

pub mod addr_map;
pub mod backtrace;
pub mod byteio;
pub mod cptr;
pub mod env_capi;
pub mod error;
pub mod nesting;
pub mod workers;
