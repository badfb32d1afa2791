//! Which port a request came in on, and what that port serves: the public JSON-RPC port
//! (everything `--http.api` names, never the `engine_` namespace), or the Engine API's
//! authenticated port (`--authrpc.*`): the `engine_` methods and the `eth_` subset the
//! execution-apis spec lists, for a consensus client or a sequencer holding the JWT secret.

use std::sync::Arc;

use alloy_rpc_types_engine::JwtSecret;

/// The `eth_` methods (and `web3_clientVersion`) the Engine API port serves besides `engine_`:
/// the execution-apis spec's list.
pub const ENGINE_PORT_ETH_METHODS: [&str; 10] = [
    "eth_blockNumber",
    "eth_call",
    "eth_chainId",
    "eth_getCode",
    "eth_getBlockByHash",
    "eth_getBlockByNumber",
    "eth_getLogs",
    "eth_sendRawTransaction",
    "eth_syncing",
    "web3_clientVersion",
];

/// Largest request and response on the Engine API port: geth's limit there. A payload carries a
/// whole block (a sequencer's attributes too), up to 10 MB of transactions written as hex.
pub const ENGINE_MAX_BODY_BYTES: usize = 128 * 1024 * 1024;

/// The port a request came in on.
#[derive(Clone, Default)]
pub enum Surface {
    /// The public JSON-RPC port.
    #[default]
    Public,
    /// The Engine API port, whose every request carries a JWT made with this secret.
    Engine(Arc<JwtSecret>),
}

impl std::fmt::Debug for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.write_str(match self {
            Self::Public => "Public",
            Self::Engine(_) => "Engine",
        })
    }
}

impl Surface {
    /// Whether this port serves `method` (of `namespace`, as the method table gates it).
    pub fn serves(&self, method: &str, namespace: &str) -> bool {
        match self {
            Self::Public => namespace != "engine",
            Self::Engine(_) => namespace == "engine" || ENGINE_PORT_ETH_METHODS.contains(&method),
        }
    }

    /// Why the request with these `Authorization` header bytes may not be served here, if it
    /// may not: on the Engine API port, a bearer token signed with the secret (HS256) whose
    /// `iat` is within 60 s of now, as the spec requires; the public port needs none.
    pub fn unauthorized(&self, authorization: Option<&[u8]>) -> Option<String> {
        let Self::Engine(secret) = self else { return None };
        let Some(value) = authorization else {
            return Some("missing Authorization header: send a JWT as `Bearer <token>`".into());
        };
        let token = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")));
        let Some(token) = token else {
            return Some("the Authorization header is not `Bearer <token>`".into());
        };
        secret.validate(token.trim()).err().map(|e| format!("JWT refused: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_rpc_types_engine::Claims;

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
    }

    #[test]
    fn the_engine_port_takes_fresh_tokens_of_its_secret_only() {
        let secret = JwtSecret::random();
        let engine = Surface::Engine(Arc::new(secret));
        let bearer = |secret: &JwtSecret, iat: u64| {
            format!("Bearer {}", secret.encode(&Claims { iat, exp: None }).expect("encodes"))
        };
        assert_eq!(engine.unauthorized(Some(bearer(&secret, now()).as_bytes())), None);
        assert_eq!(engine.unauthorized(Some(bearer(&secret, now() - 59).as_bytes())), None);
        let refused = |header: Option<&[u8]>| engine.unauthorized(header).is_some();
        assert!(refused(None), "no header");
        assert!(refused(Some(bearer(&secret, now() - 61).as_bytes())), "iat 61 s old");
        // Ahead by more than 61 s: the clock may tick between making the token and checking it.
        assert!(refused(Some(bearer(&secret, now() + 90).as_bytes())), "iat 90 s ahead");
        assert!(refused(Some(bearer(&JwtSecret::random(), now()).as_bytes())), "another secret");
        assert!(refused(Some(b"Bearer not.a.jwt")), "malformed");
        assert!(refused(Some(b"Basic dXNlcjpwYXNz")), "not a bearer token");
        assert_eq!(Surface::Public.unauthorized(None), None, "the public port needs none");
    }

    #[test]
    fn each_port_serves_its_own_methods() {
        let engine = Surface::Engine(Arc::new(JwtSecret::random()));
        assert!(engine.serves("engine_exchangeCapabilities", "engine"));
        assert!(engine.serves("eth_chainId", "eth"));
        assert!(!engine.serves("eth_getBalance", "eth"));
        assert!(!engine.serves("anvil_mine", "anvil"));
        assert!(!Surface::Public.serves("engine_exchangeCapabilities", "engine"));
        assert!(Surface::Public.serves("eth_getBalance", "eth"));
    }
}
