//! anvil_dealERC20 (`[who, token, amount]`, also `anvil_setERC20Balance`) and
//! anvil_setERC20Allowance (`[owner, spender, token, amount]`): set a token's balance or
//! allowance by writing the storage slot that holds it.
//!
//! The slot is found by probing, as anvil does, rather than from a storage layout: run the
//! getter (`balanceOf(who)`, `allowance(owner, spender)`) once and list the token's slots it
//! touched (`GetTouchedSlots`), then, in ascending order, run it again with each slot
//! overridden to `amount` (an eth_call state override: nothing is written) until one returns
//! `amount`. That slot is written with a dev patch (`PatchState`), so it lasts and the next
//! block builds on it. Any layout the getter reads (mappings at any slot, Vyper's order,
//! hashed namespaces, a proxy's delegatecall into the token's own storage) is found; a token
//! whose getter computes its answer from several slots, or an account without code, has no
//! such slot and the method fails with -32000, changing nothing. A getter touching more than
//! [`MAX_PROBED_SLOTS`] slots is refused the same way before any is tried.

use std::sync::Arc;

use alloy_primitives::{Address, B256, Bytes, U256};
use hearth_messages::executor::{
    AccountOverride, Call, CallOutcome, CallRequest, GetTouchedSlots, StateOverrides,
};
use hearth_messages::state::{AccountPatch, PatchState};
use serde_json::Value;

use crate::anvil::dev::{Amount, revalidate};
use crate::core::Params;
use crate::core::RpcContext;
use crate::core::RpcError;
use crate::core::head;

/// Most slots tried for one getter: each try is a call, and a getter that reads thousands of
/// slots (no token does) must not hold the executors for a call per slot.
pub(crate) const MAX_PROBED_SLOTS: usize = 1024;

/// `balanceOf(address)`.
const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
/// `allowance(address,address)`.
const ALLOWANCE: [u8; 4] = [0xdd, 0x62, 0xed, 0x3e];

/// Calldata of `selector` applied to `addresses`, each ABI-encoded as a word.
fn calldata(selector: [u8; 4], addresses: &[Address]) -> Bytes {
    let mut data = selector.to_vec();
    for address in addresses {
        data.extend_from_slice(B256::left_padding_from(address.as_slice()).as_slice());
    }
    data.into()
}

/// anvil_dealERC20 / anvil_setERC20Balance: `[who, token, amount]`.
pub(crate) async fn deal(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(3)?;
    let who: Address = params.required(0)?;
    let token: Address = params.required(1)?;
    let Amount(amount) = params.required(2)?;
    set_slot(ctx, token, calldata(BALANCE_OF, &[who]), amount, "balance").await
}

/// anvil_setERC20Allowance: `[owner, spender, token, amount]`.
pub(crate) async fn set_allowance(ctx: &RpcContext, params: &Params) -> Result<Value, RpcError> {
    params.at_most(4)?;
    let owner: Address = params.required(0)?;
    let spender: Address = params.required(1)?;
    let token: Address = params.required(2)?;
    let Amount(amount) = params.required(3)?;
    set_slot(ctx, token, calldata(ALLOWANCE, &[owner, spender]), amount, "allowance").await
}

/// Finds the slot of `token` that the getter `input` returns and writes `amount` there.
async fn set_slot(
    ctx: &RpcContext,
    token: Address,
    input: Bytes,
    amount: U256,
    what: &'static str,
) -> Result<Value, RpcError> {
    let block = head(ctx)?;
    let Some(slot) = find_slot(ctx, token, input, amount, block).await? else {
        let has_code = !ctx.chain.state_at(block).code_of(&token)?.is_empty();
        return Err(RpcError::NoTokenSlot { what, token, has_code });
    };
    let change = AccountPatch::Storage { slot, value: amount };
    let patch = PatchState { address: token, change };
    ctx.miner.patch_state(hearth_messages::miner::BetweenBlocks(patch)).await??;
    revalidate(ctx).await?;
    tracing::debug!(target: "rpc::erc20", %token, %slot, what, "token slot set");
    Ok(Value::Null)
}

/// The first slot, in ascending order, among those the getter touches, which makes it return
/// `amount` when overridden to `amount`; `None` when no slot does.
async fn find_slot(
    ctx: &RpcContext,
    token: Address,
    input: Bytes,
    amount: U256,
    block: u64,
) -> Result<Option<U256>, RpcError> {
    let request = CallRequest {
        to: Some(token),
        input,
        gas: Some(ctx.limits.gas_cap),
        ..CallRequest::default()
    };
    let touched = ctx
        .executor
        .touched_slots(GetTouchedSlots { request: request.clone(), block, account: token })
        .await?;
    if touched.slots.len() > MAX_PROBED_SLOTS {
        return Err(RpcError::Unsupported(format!(
            "the getter of {token} touched {} storage slots; at most {MAX_PROBED_SLOTS} are tried",
            touched.slots.len()
        )));
    }
    for slot in touched.slots {
        let mut diff = std::collections::BTreeMap::new();
        diff.insert(slot, amount);
        let mut overrides = StateOverrides::new();
        overrides.insert(token, AccountOverride { state_diff: Some(diff), ..Default::default() });
        let probe = CallRequest { state_overrides: Some(Arc::new(overrides)), ..request.clone() };
        if let CallOutcome::Success { output, .. } =
            ctx.executor.call(Call { request: probe, block }).await?
            && returns(&output, amount)
        {
            return Ok(Some(slot));
        }
    }
    Ok(None)
}

/// Whether `output` is the ABI encoding of `amount` (one word; a longer answer's first word).
fn returns(output: &[u8], amount: U256) -> bool {
    output.get(..32).is_some_and(|word| U256::from_be_slice(word) == amount)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calldata_pads_each_address_to_a_word() {
        let who = Address::repeat_byte(0xab);
        let data = calldata(BALANCE_OF, &[who]);
        assert_eq!(data.len(), 4 + 32);
        assert_eq!(&data[..4], &BALANCE_OF);
        assert_eq!(&data[4..16], &[0u8; 12]);
        assert_eq!(&data[16..], who.as_slice());
        assert_eq!(calldata(ALLOWANCE, &[who, who]).len(), 4 + 64);
        // The selectors are those of the ERC-20 getters.
        assert_eq!(&alloy_primitives::keccak256("balanceOf(address)")[..4], &BALANCE_OF);
        assert_eq!(&alloy_primitives::keccak256("allowance(address,address)")[..4], &ALLOWANCE);
    }

    #[test]
    fn only_an_answer_starting_with_the_amount_matches() {
        let amount = U256::from(1234);
        assert!(returns(&amount.to_be_bytes::<32>(), amount));
        let mut longer = amount.to_be_bytes::<32>().to_vec();
        longer.extend_from_slice(&[0; 32]);
        assert!(returns(&longer, amount));
        assert!(!returns(&[], amount));
        assert!(!returns(&amount.to_be_bytes::<32>()[..31], amount));
        assert!(!returns(&U256::from(1).to_be_bytes::<32>(), amount));
    }
}
