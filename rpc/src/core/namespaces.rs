//! The namespace gate of `--http.api` ([`ApiNamespaces`]): a method whose namespace is not
//! enabled is unknown, -32601, whatever it is.

/// The namespaces `--http.api` may name: the core's, the dev chain's, execution-apis'
/// `testing`, and those peers serve that extensions may add (`trace`, `personal`, `admin`,
/// `ots`, `hearth`).
pub const KNOWN_NAMESPACES: [&str; 14] = [
    "eth", "net", "web3", "txpool", "debug", "trace", "evm", "anvil", "hardhat", "personal",
    "admin", "ots", "hearth", "testing",
];

/// The namespaces whose methods change the chain outside its rules (balances, code, time,
/// mining): a shared deployment should not serve them.
pub const DEV_NAMESPACES: [&str; 3] = ["evm", "anvil", "hardhat"];

/// A namespace `--http.api` cannot serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    /// The list is empty.
    #[error("empty: name namespaces such as eth,net,web3, or all")]
    Empty,
    /// A name that is not a namespace.
    #[error("unknown namespace {name:?}; known: all, {}", KNOWN_NAMESPACES.join(", "))]
    Unknown {
        /// What was given.
        name: String,
    },
}

/// The JSON-RPC namespaces served (`--http.api`): all of them (a dev node's default), or a set
/// of [`KNOWN_NAMESPACES`]. Applies to HTTP and WebSocket alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiNamespaces(Option<u16>);

impl ApiNamespaces {
    /// Every namespace, extensions' included.
    pub const fn all() -> Self {
        Self(None)
    }

    /// Parses a comma-separated list of namespaces, or `all`.
    pub fn parse(list: &str) -> Result<Self, NamespaceError> {
        let mut bits = 0u16;
        let mut empty = true;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            empty = false;
            if name.eq_ignore_ascii_case("all") {
                return Ok(Self::all());
            }
            let index = KNOWN_NAMESPACES
                .iter()
                .position(|known| known.eq_ignore_ascii_case(name))
                .ok_or_else(|| NamespaceError::Unknown { name: name.to_owned() })?;
            bits |= 1 << index;
        }
        if empty { Err(NamespaceError::Empty) } else { Ok(Self(Some(bits))) }
    }

    /// Whether `namespace` (e.g. `anvil`) is served.
    pub fn serves(&self, namespace: &str) -> bool {
        match self.0 {
            None => true,
            Some(bits) => KNOWN_NAMESPACES
                .iter()
                .position(|known| *known == namespace)
                .is_some_and(|index| bits & (1 << index) != 0),
        }
    }

    /// Whether a method the method table does not know (an extension's) may run: its namespace
    /// is the part before the first `_`. A core method is gated by its row's namespace, which
    /// may differ (anvil's eth_sendUnsignedTransaction is gated as `anvil`'s).
    pub fn allows(&self, method: &str) -> bool {
        if self.0.is_none() {
            return true;
        }
        method.split_once('_').is_some_and(|(ns, _)| self.serves(ns))
    }

    /// Whether any dev namespace (evm, anvil, hardhat) is served.
    pub fn serves_dev_methods(&self) -> bool {
        DEV_NAMESPACES.iter().any(|ns| self.serves(ns))
    }
}

impl Default for ApiNamespaces {
    fn default() -> Self {
        Self::all()
    }
}

/// Whose conventions a method's answer follows, when several dialects name the same method
/// (`anvil_mine` and `hardhat_mine`): Hardhat's setters answer `true` where anvil's answer
/// `null`, anvil takes some numbers in decimal too, and the error codes differ. The method
/// table gives it to the handler, so that no handler looks at the method's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// `anvil_`: anvil's answers.
    Anvil,
    /// `hardhat_`: Hardhat Network's.
    Hardhat,
    /// `evm_`: the names Hardhat, ganache and anvil share; each handler says which peer's
    /// answer it gives (evm_setAutomine answers `true` as Hardhat does, the block setters
    /// `null` as anvil does).
    Evm,
    /// Any other namespace.
    Standard,
}

impl Dialect {
    /// The dialect of the namespace `namespace` (a method name's prefix).
    pub(crate) const fn of(namespace: &str) -> Self {
        match namespace.as_bytes() {
            b"anvil" => Self::Anvil,
            b"hardhat" => Self::Hardhat,
            b"evm" => Self::Evm,
            _ => Self::Standard,
        }
    }

    /// The method named `name` in this dialect's namespace, for messages.
    pub(crate) fn method(self, name: &str) -> String {
        let namespace = match self {
            Self::Anvil => "anvil",
            Self::Hardhat => "hardhat",
            Self::Evm => "evm",
            Self::Standard => "eth",
        };
        format!("{namespace}_{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_gate_by_prefix() {
        let shared = ApiNamespaces::parse("eth, net,WEB3").expect("valid");
        assert!(shared.allows("eth_chainId") && shared.allows("net_version"));
        assert!(shared.allows("web3_clientVersion"));
        for refused in ["anvil_setBalance", "evm_mine", "hardhat_mine", "txpool_status"] {
            assert!(!shared.allows(refused), "{refused}");
        }
        assert!(!shared.allows("eth"), "no namespace");
        assert!(shared.allows("eth_sendTransaction"));
        let with_anvil = ApiNamespaces::parse("anvil").expect("valid");
        assert!(!with_anvil.allows("eth_chainId"));
        assert!(!shared.allows("ext_echo"), "an unknown namespace is not served by a list");
        assert!(!shared.serves_dev_methods());
        let all = ApiNamespaces::default();
        assert!(all.allows("anvil_setBalance") && all.allows("ext_echo") && all.allows("x"));
        assert!(all.serves_dev_methods());
        assert_eq!(ApiNamespaces::parse("eth,all"), Ok(ApiNamespaces::all()));
        assert!(ApiNamespaces::parse("eth,anvil").expect("valid").serves_dev_methods());
    }

    #[test]
    fn bad_namespace_lists_say_why() {
        assert_eq!(ApiNamespaces::parse(""), Err(NamespaceError::Empty));
        assert_eq!(ApiNamespaces::parse(" , "), Err(NamespaceError::Empty));
        let err = ApiNamespaces::parse("eth,eht").expect_err("typo");
        assert_eq!(err, NamespaceError::Unknown { name: "eht".into() });
        assert!(err.to_string().contains("known: all, eth, net"), "{err}");
    }
}
