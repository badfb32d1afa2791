//! Precompiles that state overrides can move or remove (geth's `movePrecompileToAddress`), for
//! eth_call, eth_estimateGas, eth_createAccessList and eth_simulateV1.

use std::collections::{BTreeSet, HashMap};

use alloy_primitives::Address;
use hearth_messages::OverrideError;
use hearth_messages::executor::StateOverrides;
use revm::context_interface::ContextTr;
use revm::handler::{EthPrecompiles, PrecompileProvider};
use revm::interpreter::InterpreterResult;
use revm::interpreter::interpreter_action::CallInputs;
use revm::primitives::AddressSet;
use revm::primitives::hardfork::SpecId;

/// The precompiles of a call or simulated block: the fork's set, with the moves and removals
/// that state overrides made (geth's rules). Addresses stay warm as the fork's set says: geth
/// warms the fork's precompile addresses whatever was moved, so gas matches it.
#[derive(Debug, Clone)]
pub(crate) struct MovablePrecompiles {
    inner: EthPrecompiles,
    /// Where each precompile is when overrides changed the set: address → the address it
    /// has in the fork's set. `None`: the fork's set as it is.
    routes: Option<HashMap<Address, Address>>,
}

impl MovablePrecompiles {
    /// The fork's set, unchanged.
    pub(crate) fn new(spec: SpecId) -> Self {
        Self { inner: EthPrecompiles::new(spec), routes: None }
    }

    /// Applies the precompile side of `overrides` as geth does, in address order: a
    /// `movePrecompileToAddress` needs a precompile at the address and a destination the
    /// overrides do not also set; any override of a precompile's address removes the
    /// precompile from it (so its code, if any, runs); an address a precompile was just
    /// moved to cannot be overridden.
    pub(crate) fn apply(&mut self, overrides: &StateOverrides) -> Result<(), OverrideError> {
        let touches_precompiles = overrides
            .iter()
            .any(|(address, o)| o.move_precompile_to.is_some() || self.contains_address(address));
        if !touches_precompiles {
            return Ok(());
        }
        let mut routes = self.routes.take().unwrap_or_else(|| {
            self.inner.warm_addresses().iter().map(|a| (*a, *a)).collect::<HashMap<_, _>>()
        });
        let mut moved_to = BTreeSet::new();
        for (address, o) in overrides {
            if moved_to.contains(address) {
                return Err(OverrideError::OverriddenByPrecompile(*address));
            }
            let precompile = routes.get(address).copied();
            if let Some(destination) = o.move_precompile_to {
                let Some(precompile) = precompile else {
                    return Err(OverrideError::NotAPrecompile(*address));
                };
                if overrides.contains_key(&destination) {
                    return Err(OverrideError::MoveTargetOverridden(destination));
                }
                routes.insert(destination, precompile);
                moved_to.insert(destination);
            }
            if precompile.is_some() {
                routes.remove(address);
            }
        }
        self.routes = Some(routes);
        Ok(())
    }

    fn contains_address(&self, address: &Address) -> bool {
        match &self.routes {
            None => self.inner.contains(address),
            Some(routes) => routes.contains_key(address),
        }
    }
}

impl<CTX: ContextTr> PrecompileProvider<CTX> for MovablePrecompiles {
    type Output = InterpreterResult;

    fn set_spec(&mut self, spec: <CTX::Cfg as revm::context_interface::Cfg>::Spec) -> bool {
        <EthPrecompiles as PrecompileProvider<CTX>>::set_spec(&mut self.inner, spec)
    }

    fn run(
        &mut self,
        context: &mut CTX,
        inputs: &CallInputs,
    ) -> Result<Option<InterpreterResult>, String> {
        let Some(routes) = &self.routes else {
            return <EthPrecompiles as PrecompileProvider<CTX>>::run(
                &mut self.inner,
                context,
                inputs,
            );
        };
        match routes.get(&inputs.bytecode_address) {
            None => Ok(None),
            Some(original) if *original == inputs.bytecode_address => {
                <EthPrecompiles as PrecompileProvider<CTX>>::run(&mut self.inner, context, inputs)
            }
            Some(original) => {
                let mut moved = inputs.clone();
                moved.bytecode_address = *original;
                <EthPrecompiles as PrecompileProvider<CTX>>::run(&mut self.inner, context, &moved)
            }
        }
    }

    fn warm_addresses(&self) -> &AddressSet {
        self.inner.warm_addresses()
    }

    fn contains(&self, address: &Address) -> bool {
        self.contains_address(address)
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{U256, address};
    use hearth_messages::executor::AccountOverride;

    use super::*;

    const ECRECOVER: Address = address!("0000000000000000000000000000000000000001");
    const SHA256: Address = address!("0000000000000000000000000000000000000002");

    fn moving(to: Address) -> AccountOverride {
        AccountOverride { move_precompile_to: Some(to), ..Default::default() }
    }

    #[test]
    fn moves_follow_geths_rules() {
        let elsewhere = Address::repeat_byte(0x42);
        let mut precompiles = MovablePrecompiles::new(SpecId::PRAGUE);
        let overrides = StateOverrides::from([(ECRECOVER, moving(elsewhere))]);
        precompiles.apply(&overrides).expect("a precompile moves");
        assert!(precompiles.contains_address(&elsewhere));
        assert!(!precompiles.contains_address(&ECRECOVER), "its old address runs code now");
        assert!(precompiles.contains_address(&SHA256), "the others stay");
        // The warm set stays the fork's (geth warms by the fork's list, not the moved map).
        let warm = PrecompileProvider::<revm::handler::MainnetContext<revm::database::EmptyDB>>::warm_addresses(&precompiles);
        assert!(warm.contains(&ECRECOVER) && !warm.contains(&elsewhere));

        // Any override of a precompile's address takes the precompile away from it.
        let mut precompiles = MovablePrecompiles::new(SpecId::PRAGUE);
        let code = AccountOverride { code: Some(vec![0x00].into()), ..Default::default() };
        precompiles.apply(&StateOverrides::from([(SHA256, code)])).expect("an override");
        assert!(!precompiles.contains_address(&SHA256));
    }

    #[test]
    fn impossible_moves_are_refused() {
        let not_one = Address::repeat_byte(0x42);
        let mut precompiles = MovablePrecompiles::new(SpecId::PRAGUE);
        let err = precompiles.apply(&StateOverrides::from([(not_one, moving(SHA256))]));
        assert_eq!(err, Err(OverrideError::NotAPrecompile(not_one)));
        // Onto an address the same overrides set.
        let both = StateOverrides::from([
            (ECRECOVER, moving(not_one)),
            (not_one, AccountOverride { balance: Some(U256::from(1)), ..Default::default() }),
        ]);
        let err = MovablePrecompiles::new(SpecId::PRAGUE).apply(&both);
        assert_eq!(err, Err(OverrideError::MoveTargetOverridden(not_one)));
        // A precompile moved onto a later address that is itself overridden in address order.
        let onto_later =
            StateOverrides::from([(ECRECOVER, moving(SHA256)), (SHA256, moving(not_one))]);
        let err = MovablePrecompiles::new(SpecId::PRAGUE).apply(&onto_later);
        assert_eq!(err, Err(OverrideError::MoveTargetOverridden(SHA256)));
    }
}
