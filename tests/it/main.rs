//! it
mod conformance;
