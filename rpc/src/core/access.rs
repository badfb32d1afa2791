//! Who may drive the node from a web browser: the origin policies of `--http.corsdomain` and
//! `--ws.origins`, the host policy of `--http.vhosts`, and the content-type rule.
//!
//! A browser lets any page send a "simple request" (a POST with `text/plain`, form encoding or
//! no content type) to any address, loopback included, without asking the server first; only
//! reading the answer is subject to CORS. So the node executes only `application/json` POSTs
//! (which a browser sends cross-origin only after a preflight the node answers), refuses any
//! request whose `Origin` is not allowed (nothing runs), and refuses any `Host` that is a name
//! it was not told about (DNS rebinding: an attacker's name resolving to 127.0.0.1 makes the
//! browser treat the node as the attacker's own site). Requests without `Origin` come from
//! programs, not pages, and pass the origin check.
//!
//! Every pattern is parsed once at startup into [`OriginPolicy`] or [`HostPolicy`]; a
//! malformed one is a [`PatternError`], which the node turns into a startup error naming the
//! flag. The server (`server.rs`) consults them per request.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The loopback origins allowed by default (any port), and the browser-extension schemes:
/// pages served by a local dev server, and wallets such as MetaMask, which call the node from
/// their extension's origin.
pub const DEFAULT_ORIGINS: &str = "http://localhost:*,https://localhost:*,http://127.0.0.1:*,\
https://127.0.0.1:*,http://[::1]:*,https://[::1]:*,chrome-extension://*,moz-extension://*,\
safari-web-extension://*";

/// The host names allowed by default. IP addresses are always allowed (see [`HostPolicy`]).
pub const DEFAULT_VHOSTS: &str = "localhost,127.0.0.1,[::1]";

/// Seconds a browser may cache a preflight answer (geth answers the same).
pub(crate) const PREFLIGHT_MAX_AGE_SECS: u32 = 600;

/// A pattern or a list of them that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// The whole value is empty.
    #[error("empty (use none to refuse every origin, * to allow all)")]
    Empty,
    /// One entry of the comma-separated list is empty.
    #[error("entry {index} of the list is empty")]
    EmptyEntry {
        /// Its position, from 1.
        index: usize,
    },
    /// `none` was combined with other entries.
    #[error("none refuses every origin and cannot be combined with other entries")]
    NoneWithOthers,
    /// An origin pattern without `scheme://`.
    #[error("{0:?} has no scheme: write it as http://host[:port] (port may be *)")]
    NoScheme(String),
    /// A scheme that is not a URL scheme.
    #[error("{0:?} is not a URL scheme")]
    BadScheme(String),
    /// A host that is neither a name, an IPv4 address nor a bracketed IPv6 address.
    #[error("{0:?} is not a host name or IP address")]
    BadHost(String),
    /// A port that is not 1..=65535 or `*`.
    #[error("{0:?} is not a port (1 to 65535, or *)")]
    BadPort(String),
    /// A path, query or fragment after the host.
    #[error("{0:?} has a path; an origin is scheme://host[:port] only")]
    HasPath(String),
    /// A `--http.vhosts` entry with a port.
    #[error("{0:?} has a port; give the host name only (any port is allowed)")]
    HostWithPort(String),
}

/// Which ports an origin pattern allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PortPattern {
    /// No port written: the scheme's default port only.
    Default,
    /// Exactly this one.
    Exact(u16),
    /// `:*`, any port (and none).
    Any,
}

/// One parsed `scheme://host[:port]` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginPattern {
    /// Lowercase.
    scheme: String,
    /// Lowercase; IPv6 in brackets; `None` for `*` (any host).
    host: Option<String>,
    port: PortPattern,
}

/// A request's `Origin`, parsed.
#[derive(Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// The default port of a scheme, as browsers leave it out of `Origin`.
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// Whether `scheme` is a URL scheme (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`).
fn is_scheme(scheme: &str) -> bool {
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Normalises a host: lowercase; a name of letters, digits, `-`, `_` and `.`; an IPv4 address;
/// or an IPv6 address in brackets. `None` when it is none of these.
fn normalize_host(host: &str) -> Option<String> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let ip: Ipv6Addr = inner.parse().ok()?;
        return Some(format!("[{ip}]"));
    }
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        });
    valid.then(|| host.to_ascii_lowercase())
}

/// Whether a normalised host is an IP address rather than a name.
fn is_ip(host: &str) -> bool {
    host.starts_with('[') || host.parse::<Ipv4Addr>().is_ok()
}

/// Splits `host[:port]` (the host possibly a bracketed IPv6 address) into its parts.
fn split_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => {
                let (host, rest) = authority.split_at(end + 1);
                (host, rest.strip_prefix(':'))
            }
            None => (authority, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    }
}

/// A port, 1..=65535.
fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u16>().ok().filter(|&port| port != 0)
}

impl OriginPattern {
    fn parse(text: &str) -> Result<Self, PatternError> {
        let (scheme, authority) =
            text.split_once("://").ok_or_else(|| PatternError::NoScheme(text.to_owned()))?;
        if !is_scheme(scheme) {
            return Err(PatternError::BadScheme(scheme.to_owned()));
        }
        if authority.contains(['/', '?', '#']) {
            return Err(PatternError::HasPath(text.to_owned()));
        }
        let (host, port) = split_port(authority);
        let host = match host {
            "*" => None,
            host => {
                Some(normalize_host(host).ok_or_else(|| PatternError::BadHost(host.to_owned()))?)
            }
        };
        let scheme = scheme.to_ascii_lowercase();
        let port = match port {
            None => PortPattern::Default,
            Some("*") => PortPattern::Any,
            Some(port) => {
                let port =
                    parse_port(port).ok_or_else(|| PatternError::BadPort(port.to_owned()))?;
                // A browser leaves the default port out of Origin.
                if default_port(&scheme) == Some(port) {
                    PortPattern::Default
                } else {
                    PortPattern::Exact(port)
                }
            }
        };
        Ok(Self { scheme, host, port })
    }

    fn matches(&self, origin: &Origin) -> bool {
        let port = origin.port.filter(|&p| default_port(&origin.scheme) != Some(p));
        self.scheme == origin.scheme
            && self.host.as_ref().is_none_or(|host| *host == origin.host)
            && match self.port {
                PortPattern::Any => true,
                PortPattern::Default => port.is_none(),
                PortPattern::Exact(want) => port == Some(want),
            }
    }
}

impl Origin {
    /// Parses an `Origin` header value; `None` for `null` or anything malformed.
    fn parse(text: &str) -> Option<Self> {
        let (scheme, authority) = text.split_once("://")?;
        if !is_scheme(scheme) || authority.contains(['/', '?', '#', '@']) {
            return None;
        }
        let (host, port) = split_port(authority);
        let port = match port {
            None => None,
            Some(port) => Some(parse_port(port)?),
        };
        Some(Self { scheme: scheme.to_ascii_lowercase(), host: normalize_host(host)?, port })
    }
}

/// Which web origins may call the node: `*` (any), `none`, or a list of
/// `scheme://host[:port]` patterns where the port may be `*` (any) and the host may be `*`
/// (any host of that scheme, e.g. `chrome-extension://*`). A pattern without a port allows the
/// scheme's default port only, as a browser writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginPolicy(Allowed);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Allowed {
    Any,
    Only(Vec<OriginPattern>),
}

impl OriginPolicy {
    /// Parses a comma-separated list (see the type's docs).
    pub fn parse(list: &str) -> Result<Self, PatternError> {
        let list = list.trim();
        if list.is_empty() {
            return Err(PatternError::Empty);
        }
        let entries: Vec<&str> = list.split(',').map(str::trim).collect();
        let mut patterns = Vec::with_capacity(entries.len());
        let mut any = false;
        for (i, entry) in entries.iter().enumerate() {
            match *entry {
                "" => return Err(PatternError::EmptyEntry { index: i + 1 }),
                "*" => any = true,
                e if e.eq_ignore_ascii_case("none") => {
                    if entries.len() > 1 {
                        return Err(PatternError::NoneWithOthers);
                    }
                }
                e => patterns.push(OriginPattern::parse(e)?),
            }
        }
        Ok(Self(if any { Allowed::Any } else { Allowed::Only(patterns) }))
    }

    /// Every origin (`*`, anvil's behaviour).
    pub const fn any() -> Self {
        Self(Allowed::Any)
    }

    /// No origin (`none`): only programs that send no `Origin` get through.
    pub const fn none() -> Self {
        Self(Allowed::Only(Vec::new()))
    }

    /// Whether this is `*`.
    pub const fn is_any(&self) -> bool {
        matches!(self.0, Allowed::Any)
    }

    /// Whether a request with this `Origin` header value may run. `null` and malformed values
    /// are allowed only by `*`.
    pub fn allows(&self, origin: &str) -> bool {
        match &self.0 {
            Allowed::Any => true,
            Allowed::Only(patterns) => Origin::parse(origin.trim())
                .is_some_and(|origin| patterns.iter().any(|p| p.matches(&origin))),
        }
    }

    /// The `Access-Control-Allow-Origin` value for an allowed `origin`: `*` under `*` (so no
    /// cache ever stores an answer naming one site), else the origin itself.
    pub fn allow_origin_value<'a>(&self, origin: &'a str) -> &'a str {
        if self.is_any() { "*" } else { origin }
    }
}

impl Default for OriginPolicy {
    fn default() -> Self {
        Self::parse(DEFAULT_ORIGINS).expect("the default origins parse")
    }
}

/// Which `Host` headers the node answers: `*` (any) or a list of names. As geth does, an IP
/// address (v4, or v6 in brackets) is always allowed: a DNS-rebinding page reaches the node
/// under a name it controls, never under an IP address, and clients on other machines address
/// a node bound to `0.0.0.0` by its IP. A request without `Host` (HTTP/1.0) is allowed too:
/// browsers always send one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy(Option<Vec<String>>);

impl HostPolicy {
    /// Parses `*` or a comma-separated list of host names (no ports).
    pub fn parse(list: &str) -> Result<Self, PatternError> {
        let list = list.trim();
        if list.is_empty() {
            return Err(PatternError::Empty);
        }
        let mut names = Vec::new();
        for (i, entry) in list.split(',').map(str::trim).enumerate() {
            match entry {
                "" => return Err(PatternError::EmptyEntry { index: i + 1 }),
                "*" => return Self::parse_rest_any(list),
                entry => {
                    if let (_, Some(_)) = split_port(entry) {
                        // A bare IPv6 address ("::1") also has colons: take it as an address.
                        if let Ok(ip) = entry.parse::<Ipv6Addr>() {
                            names.push(format!("[{ip}]"));
                            continue;
                        }
                        return Err(PatternError::HostWithPort(entry.to_owned()));
                    }
                    names.push(
                        normalize_host(entry)
                            .ok_or_else(|| PatternError::BadHost(entry.to_owned()))?,
                    );
                }
            }
        }
        Ok(Self(Some(names)))
    }

    /// `*` was found: the rest of the list must still be well-formed, but all hosts pass.
    fn parse_rest_any(list: &str) -> Result<Self, PatternError> {
        let others: Vec<&str> = list.split(',').map(str::trim).filter(|e| *e != "*").collect();
        if !others.is_empty() {
            Self::parse(&others.join(","))?;
        }
        Ok(Self::any())
    }

    /// Every host (`*`).
    pub const fn any() -> Self {
        Self(None)
    }

    /// Whether this is `*`.
    pub const fn is_any(&self) -> bool {
        self.0.is_none()
    }

    /// Whether a request with this `Host` header value may run (the port is ignored).
    pub fn allows(&self, host: &str) -> bool {
        let Some(names) = &self.0 else { return true };
        let host = host.trim();
        if host.is_empty() {
            return true;
        }
        let (name, port) = split_port(host);
        if port.is_some_and(|p| parse_port(p).is_none()) {
            return false;
        }
        match normalize_host(name) {
            Some(name) => is_ip(&name) || names.contains(&name),
            None => false,
        }
    }
}

impl Default for HostPolicy {
    fn default() -> Self {
        Self::parse(DEFAULT_VHOSTS).expect("the default hosts parse")
    }
}

/// The web-facing policies, fixed at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebAccess {
    /// Origins allowed over HTTP (`--http.corsdomain`), answered in CORS preflights.
    pub cors: OriginPolicy,
    /// Origins allowed to open a WebSocket (`--ws.origins`).
    pub ws_origins: OriginPolicy,
    /// Host names the node answers (`--http.vhosts`).
    pub vhosts: HostPolicy,
    /// Whether a browser's `GET /` gets the built-in explorer page (`--http.explorer`).
    pub explorer: bool,
}

/// The flags' defaults on a loopback address (the explorer is served there).
impl Default for WebAccess {
    fn default() -> Self {
        Self {
            cors: OriginPolicy::default(),
            ws_origins: OriginPolicy::default(),
            vhosts: HostPolicy::default(),
            explorer: true,
        }
    }
}

/// Whether a `Content-Type` value is `application/json`, with or without parameters, in any
/// case. Only such POSTs run: every other type (and none) is one a browser may send from any
/// page without a preflight.
pub fn is_json_content_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or_default().trim();
    essence.eq_ignore_ascii_case("application/json")
}

/// Whether a `token` (an HTTP header name a preflight asks for) is well-formed: the node reads
/// no request header beyond Content-Type, Host, Origin and the WebSocket handshake, so any
/// syntactically valid one is harmless to allow.
pub(crate) fn is_header_token(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= 64
        && token.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_origins_are_loopback_pages_and_extensions() {
        let policy = OriginPolicy::default();
        for allowed in [
            "http://localhost:5173",
            "http://localhost",
            "https://localhost:3000",
            "http://127.0.0.1:8080",
            "http://[::1]:5173",
            "HTTP://LOCALHOST:5173",
            "chrome-extension://nkbihfbeogaeaoehlefnkodbefgpgknn",
            "moz-extension://0b5d8c0e-1f7a-4e3a-9b8e-3c5d2a1f0e9d",
        ] {
            assert!(policy.allows(allowed), "{allowed} should be allowed");
        }
        for refused in [
            "http://evil.example",
            "http://evil.example:5173",
            "http://localhost.evil.example:5173",
            "http://127.0.0.1.nip.io",
            "http://localhost:99999",
            "http://localhost:5173/path",
            "null",
            "",
            "localhost:5173",
            "ftp://localhost:21",
            "http://user@localhost:5173",
        ] {
            assert!(!policy.allows(refused), "{refused:?} should be refused");
        }
    }

    #[test]
    fn ports_match_as_browsers_write_them() {
        let exact = OriginPolicy::parse("http://app.test:5173, https://app.test").unwrap();
        assert!(exact.allows("http://app.test:5173"));
        assert!(!exact.allows("http://app.test:5174"));
        assert!(!exact.allows("http://app.test"), "no port means 80, not 5173");
        assert!(exact.allows("https://app.test"));
        assert!(exact.allows("https://app.test:443"), "the default port written out");
        assert!(!exact.allows("https://app.test:8443"));
        assert!(!exact.allows("http://app.test"), "the scheme must match");
        let explicit_default = OriginPolicy::parse("http://app.test:80").unwrap();
        assert!(explicit_default.allows("http://app.test"));
    }

    #[test]
    fn star_and_none() {
        let any = OriginPolicy::parse("*").unwrap();
        assert!(any.is_any() && any.allows("http://evil.example") && any.allows("null"));
        assert_eq!(any.allow_origin_value("http://x.test"), "*");
        assert_eq!(OriginPolicy::parse("http://a.test, *").unwrap(), OriginPolicy::any());
        let none = OriginPolicy::parse("none").unwrap();
        assert_eq!(none, OriginPolicy::none());
        assert!(!none.allows("http://localhost:5173"));
        assert_eq!(OriginPolicy::parse(" NONE ").unwrap(), OriginPolicy::none());
        let some = OriginPolicy::parse("http://a.test").unwrap();
        assert_eq!(some.allow_origin_value("http://a.test"), "http://a.test");
    }

    #[test]
    fn malformed_origin_patterns_say_why() {
        let cases: &[(&str, PatternError)] = &[
            ("", PatternError::Empty),
            ("  ", PatternError::Empty),
            ("http://a.test,", PatternError::EmptyEntry { index: 2 }),
            ("none,http://a.test", PatternError::NoneWithOthers),
            ("localhost:5173", PatternError::NoScheme("localhost:5173".into())),
            ("1http://a.test", PatternError::BadScheme("1http".into())),
            ("http://", PatternError::BadHost(String::new())),
            ("http://a..test", PatternError::BadHost("a..test".into())),
            ("http://*.a.test", PatternError::BadHost("*.a.test".into())),
            ("http://[::zz]:1", PatternError::BadHost("[::zz]".into())),
            ("http://a.test:0", PatternError::BadPort("0".into())),
            ("http://a.test:65536", PatternError::BadPort("65536".into())),
            ("http://a.test:+80", PatternError::BadPort("+80".into())),
            ("http://a.test/", PatternError::HasPath("http://a.test/".into())),
        ];
        for (text, want) in cases {
            assert_eq!(OriginPolicy::parse(text).as_ref(), Err(want), "{text:?}");
        }
    }

    #[test]
    fn hosts_names_must_be_listed_and_addresses_pass() {
        let policy = HostPolicy::default();
        for allowed in [
            "localhost",
            "localhost:8545",
            "LOCALHOST:8545",
            "127.0.0.1:8545",
            "[::1]:8545",
            "192.168.1.20:8545",
            "",
        ] {
            assert!(policy.allows(allowed), "{allowed:?} should be allowed");
        }
        for refused in [
            "evil.example",
            "evil.example:8545",
            "localhost.evil.example",
            "127.0.0.1.nip.io:8545",
            "localhost:notaport",
            "local host",
            "[::1",
        ] {
            assert!(!policy.allows(refused), "{refused:?} should be refused");
        }
        let named = HostPolicy::parse("node.internal, ::1").unwrap();
        assert!(named.allows("node.internal:8545") && !named.allows("localhost"));
        assert!(HostPolicy::parse("*").unwrap().allows("evil.example"));
        assert_eq!(HostPolicy::parse("localhost,*").unwrap(), HostPolicy::any());
    }

    #[test]
    fn malformed_host_lists_say_why() {
        assert_eq!(HostPolicy::parse(""), Err(PatternError::Empty));
        assert_eq!(HostPolicy::parse("a,,b"), Err(PatternError::EmptyEntry { index: 2 }));
        assert_eq!(
            HostPolicy::parse("localhost:8545"),
            Err(PatternError::HostWithPort("localhost:8545".into()))
        );
        assert_eq!(HostPolicy::parse("a b"), Err(PatternError::BadHost("a b".into())));
        assert_eq!(HostPolicy::parse("*,a b"), Err(PatternError::BadHost("a b".into())));
    }

    #[test]
    fn only_application_json_is_json() {
        for json in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
            " application/json ",
        ] {
            assert!(is_json_content_type(json), "{json:?}");
        }
        for other in [
            "text/plain",
            "text/plain; charset=application/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "application/json-rpc",
            "",
        ] {
            assert!(!is_json_content_type(other), "{other:?}");
        }
    }

    #[test]
    fn header_tokens() {
        assert!(is_header_token("content-type") && is_header_token("X-Custom_1"));
        assert!(!is_header_token("") && !is_header_token("a b") && !is_header_token("a:b"));
    }
}
