//! The `eth_` namespace (and `personal_sign`, which signs as `eth_sign` does): chain facts and
//! state queries, calls and estimates, fees, transactions (send, sign, look up), blocks,
//! receipts, headers, logs, filters, subscriptions, proofs and eth_config. Other namespaces may
//! use what is here; nothing here uses them.

pub(crate) mod access_list;
pub(crate) mod blocks;
pub(crate) mod call;
pub(crate) mod call_many;
pub(crate) mod capabilities;
pub(crate) mod config;
pub(crate) mod fees;
pub(crate) mod filters;
pub(crate) mod fork_warm;
pub(crate) mod headers;
pub(crate) mod logs;
pub(crate) mod proof;
pub(crate) mod receipts;
pub(crate) mod sign;
pub(crate) mod simulate;
pub(crate) mod state;
pub(crate) mod subscriptions;
pub(crate) mod tx;
