//! hearth
