//! The `brigade` binary's library half: starting services on a runtime, shared by `brigade serve`,
//! the tests and anything else that embeds Brigade's restaurant services.

pub mod launch;
