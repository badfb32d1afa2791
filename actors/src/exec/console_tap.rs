//! The console tap: a precompile provider around the real one that keeps the calldata of calls
//! to the console address ([`CONSOLE_ADDRESS`]) and then lets the call run as it would have
//! (the real provider does not know the address, so it runs as a call to an account without
//! code, or to the code a fork put there). Gas, state and results are those of the same
//! execution without the tap: the address is not a precompile, it is not warmed.
//!
//! revm asks the precompile provider about every call frame, so this is where a call to one
//! address can be seen without an inspector (which would put execution on revm's slower
//! inspecting loop and step every opcode).

use alloy_primitives::Address;
use hearth_messages::console::CONSOLE_ADDRESS;
use revm::context_interface::{Cfg, ContextTr};
use revm::handler::PrecompileProvider;
use revm::interpreter::InterpreterResult;
use revm::interpreter::interpreter_action::{CallInput, CallInputs};
use revm::primitives::AddressSet;

use crate::console::Captured;

/// The precompiles `P` with the console calls of the current execution captured, when
/// capturing is on.
#[derive(Debug, Clone)]
pub struct ConsoleTap<P> {
    /// The precompiles that run.
    pub(crate) inner: P,
    /// What the current execution sent to the console; `None`: not capturing. Not boxed:
    /// an eth_call that captures would otherwise allocate for nothing.
    capture: Option<Captured>,
}

impl<P> ConsoleTap<P> {
    /// `inner`, not capturing.
    pub(crate) fn new(inner: P) -> Self {
        Self { inner, capture: None }
    }

    /// Starts (or stops) capturing; what was captured so far is dropped.
    pub(crate) fn capture(&mut self, on: bool) {
        self.capture = on.then(Captured::new);
    }

    /// What the execution since the last take sent; capturing goes on.
    pub(crate) fn take(&mut self) -> Captured {
        self.capture.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Replaces what was captured with `captured` (a parallel block's committer taking over a
    /// helper's run, whose calls it did not make itself).
    pub(crate) fn put(&mut self, captured: Captured) {
        if let Some(c) = self.capture.as_mut() {
            *c = captured;
        }
    }
}

impl<CTX: ContextTr, P: PrecompileProvider<CTX, Output = InterpreterResult>> PrecompileProvider<CTX>
    for ConsoleTap<P>
{
    type Output = InterpreterResult;

    fn set_spec(&mut self, spec: <CTX::Cfg as Cfg>::Spec) -> bool {
        self.inner.set_spec(spec)
    }

    #[inline]
    fn run(
        &mut self,
        context: &mut CTX,
        inputs: &CallInputs,
    ) -> Result<Option<InterpreterResult>, String> {
        if let Some(capture) = self.capture.as_mut()
            && inputs.target_address == CONSOLE_ADDRESS
            && inputs.bytecode_address == CONSOLE_ADDRESS
        {
            keep(capture, context, &inputs.input);
        }
        self.inner.run(context, inputs)
    }

    fn warm_addresses(&self) -> &AddressSet {
        self.inner.warm_addresses()
    }

    fn contains(&self, address: &Address) -> bool {
        self.inner.contains(address)
    }
}

/// Copies one console call's calldata out of the caller's memory, if it fits the bound (the
/// length is known before copying: a 10 MB argument is never copied).
#[cold]
fn keep<CTX: ContextTr>(capture: &mut Captured, context: &CTX, input: &CallInput) {
    let len = match input {
        CallInput::Bytes(bytes) => bytes.len(),
        CallInput::SharedBuffer(range) => range.len(),
    };
    if capture.room_for(len) {
        capture.push(input.bytes(context));
    }
}
