//! runtimes
