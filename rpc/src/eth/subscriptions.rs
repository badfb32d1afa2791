//! Subscriptions: eth_subscribe and eth_unsubscribe, and how a notification is encoded.
//!
//! The `SubscriptionActor` owns the subscriptions; these methods only ask it. They need a
//! WebSocket connection to deliver to: over HTTP they answer -32601 "notifications not
//! supported", as geth does. Kinds: `newHeads` (the header fields of eth_getBlockByNumber, as
//! geth sends them: no transactions, uncles, withdrawals or size), `logs` with an optional
//! `{address, topics}` filter (each matching log as eth_getLogs reports it, `removed: false`),
//! `newPendingTransactions` (hashes, or with geth's `true` whole transactions as
//! eth_getTransactionByHash shows a pending one), `hearth_console`. Subscription ids are 16-byte hex strings, as geth's.

use alloy_primitives::B128;
use alloy_rpc_types_eth::{Filter, FilterBlockOption, Header};
use hearth_messages::subscriptions::{
    ConnectionId, Notice, Notification, Subscribe, SubscriptionKind, Unsubscribe,
};
use serde::Serialize;
use serde_json::Value;

use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;

/// eth_subscribe: `[kind, options?]` on `connection`; the subscription id.
pub(crate) async fn subscribe(
    ctx: &RpcContext,
    connection: Option<ConnectionId>,
    params: &Params,
) -> Result<Value, RpcError> {
    let connection = connection.ok_or(RpcError::NotificationsUnsupported)?;
    let kind = subscription_kind(params)?;
    let id = ctx
        .subscriptions
        .subscribe(Subscribe { connection, kind })
        .await?
        .map_err(RpcError::Subscription)?;
    Ok(Value::String(id.to_string()))
}

/// Reads what eth_subscribe asks for.
fn subscription_kind(params: &Params) -> Result<SubscriptionKind, RpcError> {
    params.at_most(2)?;
    let name: String = params.required(0)?;
    match name.as_str() {
        "newHeads" => {
            params.at_most(1)?;
            Ok(SubscriptionKind::NewHeads)
        }
        "logs" => {
            let mut filter: Filter = params.optional(1)?.unwrap_or_default();
            if matches!(filter.block_option, FilterBlockOption::AtBlockHash(_)) {
                return Err(RpcError::InvalidParams(
                    "a logs subscription reports new blocks only; drop blockHash \
                     (use eth_getLogs for a past block)"
                        .into(),
                ));
            }
            // A subscription reports each new block's logs; like geth, it takes no range.
            filter.block_option = FilterBlockOption::Range { from_block: None, to_block: None };
            Ok(SubscriptionKind::Logs(Box::new(filter)))
        }
        // geth's `true`: whole transactions instead of their hashes.
        "newPendingTransactions" => match params.optional::<bool>(1)?.unwrap_or(false) {
            true => Ok(SubscriptionKind::PendingTxObjects),
            false => Ok(SubscriptionKind::PendingTxs),
        },
        "hearth_console" => {
            params.at_most(1)?;
            Ok(SubscriptionKind::Console)
        }
        other => Err(RpcError::InvalidParams(format!(
            "unknown subscription kind {other:?}: use \"newHeads\", \"logs\", \
             \"newPendingTransactions\" or \"hearth_console\""
        ))),
    }
}

/// eth_unsubscribe: `[id]`; `true` when `connection` held that subscription.
pub(crate) async fn unsubscribe(
    ctx: &RpcContext,
    connection: Option<ConnectionId>,
    params: &Params,
) -> Result<Value, RpcError> {
    let connection = connection.ok_or(RpcError::NotificationsUnsupported)?;
    params.at_most(1)?;
    let id: B128 = params.required(0)?;
    let removed = ctx.subscriptions.unsubscribe(Unsubscribe { connection, id }).await?;
    Ok(Value::Bool(removed))
}

/// The `eth_subscription` notification object, in geth's member order.
#[derive(Serialize)]
struct NotificationObject<'a, T: Serialize> {
    jsonrpc: &'static str,
    method: &'static str,
    params: NotificationParams<'a, T>,
}

#[derive(Serialize)]
struct NotificationParams<'a, T: Serialize> {
    subscription: &'a B128,
    result: T,
}

/// Encodes `note` as the text of one WebSocket message.
pub(crate) fn encode(note: &Notification) -> Result<String, serde_json::Error> {
    fn object<T: Serialize>(subscription: &B128, result: T) -> Result<String, serde_json::Error> {
        serde_json::to_string(&NotificationObject {
            jsonrpc: "2.0",
            method: "eth_subscription",
            params: NotificationParams { subscription, result },
        })
    }
    match &note.item {
        Notice::Head(block) => {
            // geth's newHeads carries the header alone: no size, total difficulty or body.
            let header = Header {
                hash: block.hash,
                inner: block.header.clone(),
                total_difficulty: None,
                size: None,
            };
            object(&note.subscription, header)
        }
        Notice::Log(log) => object(&note.subscription, log),
        Notice::PendingTx(hash) => object(&note.subscription, hash),
        Notice::PendingTxObject(pooled) => {
            object(&note.subscription, crate::core::pending_transaction(pooled))
        }
        Notice::Console(printed) => object(&note.subscription, ConsoleObject::of(printed)),
    }
}

/// A hearth_console notification's result: where the lines came from (the RPC method of a
/// call, or "transaction" with its hash and block), the lines, and how many console calls
/// past the output bound were not kept (`dropped`, present when not zero).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsoleObject<'a> {
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction_hash: Option<alloy_primitives::B256>,
    #[serde(skip_serializing_if = "Option::is_none")]
    block_number: Option<alloy_primitives::U64>,
    lines: &'a [String],
    #[serde(skip_serializing_if = "is_zero")]
    dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl<'a> ConsoleObject<'a> {
    fn of(printed: &'a hearth_messages::console::ConsolePrinted) -> Self {
        use hearth_messages::console::ConsoleSource;
        let (source, transaction_hash, block_number) = match printed.source {
            ConsoleSource::Tx { hash, block } => {
                ("transaction", Some(hash), Some(alloy_primitives::U64::from(block)))
            }
            ConsoleSource::Call { method } => (method, None, None),
        };
        Self {
            source,
            transaction_hash,
            block_number,
            lines: &printed.lines.lines,
            dropped: printed.lines.dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::B256;
    use serde_json::json;

    use super::*;

    fn kind(params: Value) -> Result<SubscriptionKind, RpcError> {
        subscription_kind(&Params::new(Some(params)))
    }

    #[test]
    fn kinds_are_read_strictly() {
        assert_eq!(kind(json!(["newHeads"])).unwrap(), SubscriptionKind::NewHeads);
        assert_eq!(kind(json!(["newPendingTransactions"])).unwrap(), SubscriptionKind::PendingTxs);
        assert_eq!(
            kind(json!(["newPendingTransactions", false])).unwrap(),
            SubscriptionKind::PendingTxs
        );
        assert_eq!(
            kind(json!(["newPendingTransactions", true])).unwrap(),
            SubscriptionKind::PendingTxObjects
        );
        let all = kind(json!(["logs"])).unwrap();
        assert_eq!(all, SubscriptionKind::Logs(Box::default()));
        let ranged = kind(json!(["logs", {"fromBlock": "0x5", "address": []}])).unwrap();
        assert_eq!(ranged, SubscriptionKind::Logs(Box::default()), "the range is dropped");

        for (params, needle) in [
            (json!(["newBlocks"]), "unknown subscription kind \"newBlocks\""),
            (json!(["newHeads", {}]), "too many arguments"),
            (json!(["logs", {"blockHash": format!("0x{}", "11".repeat(32))}]), "blockHash"),
            (json!([]), "missing value"),
            (json!([1]), "expected a string"),
        ] {
            let err = kind(params.clone()).expect_err("refused");
            assert_eq!(err.code(), -32602, "{params}");
            assert!(err.to_string().contains(needle), "{err} should say {needle}");
        }
    }

    #[test]
    fn notifications_have_geths_shape() {
        let note = Notification {
            subscription: B128::with_last_byte(1),
            item: Notice::PendingTx(B256::with_last_byte(2)),
        };
        let text = encode(&note).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({
                "jsonrpc": "2.0",
                "method": "eth_subscription",
                "params": {
                    "subscription": "0x00000000000000000000000000000001",
                    "result": format!("0x{}02", "00".repeat(31)),
                }
            })
        );
    }
}
