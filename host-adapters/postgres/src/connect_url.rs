//! The connection URL, with libpq's TLS settings.
//!
//! tokio-postgres parses a `postgres://` URL or a `key=value` string, but
//! knows only `sslmode=disable|prefer|require` and no `sslrootcert`. Managed
//! databases hand out URLs with `sslmode=verify-full` and a root
//! certificate, so this module takes `sslmode` and `sslrootcert` out of the
//! URL (in either form) before tokio-postgres parses the rest, and keeps
//! them for [`crate::tls`], which enforces them with libpq's meanings.

use std::fmt::Write as _;
use std::path::PathBuf;

use tokio_postgres::config::Host;

use crate::error::OpenError;

/// How a connection uses TLS: libpq's `sslmode`, with its meanings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP only; a server that requires TLS refuses the connection.
    Disable,
    /// TLS when the server offers it, without checking its certificate;
    /// plain TCP otherwise. libpq's default, so the default here too.
    #[default]
    Prefer,
    /// TLS or no connection, the certificate unchecked; with
    /// `sslrootcert`, checked as [`SslMode::VerifyCa`] does (as libpq does).
    Require,
    /// TLS, the server's certificate chained to a trusted root
    /// (`sslrootcert`, else the system's roots); its name not checked.
    VerifyCa,
    /// As [`SslMode::VerifyCa`], and the certificate must name the host
    /// connected to: the mode to use across any network.
    VerifyFull,
}

impl SslMode {
    /// The mode named `value`, as libpq spells it.
    fn parse(value: &str) -> Result<Self, OpenError> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(OpenError::Url {
                    reason: format!(
                        "sslmode must be disable, prefer, require, verify-ca or verify-full, not {other:?}"
                    ),
                });
            }
        })
    }

    /// What tokio-postgres is told: whether to ask for TLS, and whether a
    /// server that answers no is refused.
    pub(crate) fn driver_mode(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Driver;
        match self {
            Self::Disable => Driver::Disable,
            Self::Prefer => Driver::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => Driver::Require,
        }
    }
}

/// Where a verifying connection finds the roots it trusts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum RootCert {
    /// The operating system's store (no `sslrootcert`, or libpq's
    /// `sslrootcert=system`).
    #[default]
    System,
    /// The PEM certificates in this file.
    File(PathBuf),
}

/// A parsed connection URL: tokio-postgres's configuration, and the TLS
/// settings it cannot hold.
#[derive(Clone, Debug)]
pub struct ConnectUrl {
    /// Everything but the TLS settings below (its `ssl_mode` set from them).
    pub(crate) config: tokio_postgres::Config,
    /// `sslmode`.
    pub(crate) ssl_mode: SslMode,
    /// `sslrootcert`.
    pub(crate) root_cert: RootCert,
    /// Whether `sslrootcert` was given: a `require` with one verifies.
    pub(crate) root_cert_given: bool,
}

impl ConnectUrl {
    /// Parses a `postgres://` (or `postgresql://`) URL or a `key=value`
    /// string, as libpq reads them, `sslmode` and `sslrootcert` included.
    /// The error never repeats the URL, which may hold a password.
    pub fn parse(url: &str) -> Result<Self, OpenError> {
        let (rest, tls) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            split_url(url)?
        } else {
            split_key_values(url)?
        };
        let mut ssl_mode = SslMode::default();
        let mut root_cert = RootCert::default();
        let mut root_cert_given = false;
        for (key, value) in tls {
            if key == "sslmode" {
                ssl_mode = SslMode::parse(&value)?;
            } else if value == "system" {
                root_cert = RootCert::System;
                root_cert_given = true;
            } else {
                if value.is_empty() {
                    return Err(OpenError::Url {
                        reason: "sslrootcert is empty; name a PEM file, or `system`".to_owned(),
                    });
                }
                root_cert = RootCert::File(PathBuf::from(value));
                root_cert_given = true;
            }
        }
        let mut config: tokio_postgres::Config =
            rest.parse()
                .map_err(|e: tokio_postgres::Error| OpenError::Url {
                    reason: e.to_string(),
                })?;
        config.ssl_mode(ssl_mode.driver_mode());
        Ok(Self {
            config,
            ssl_mode,
            root_cert,
            root_cert_given,
        })
    }

    /// The TLS mode the URL asks for.
    #[must_use]
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// The first host the URL names (empty for none), as a message names it.
    pub(crate) fn first_host(&self) -> String {
        self.config
            .get_hosts()
            .first()
            .map(host_name)
            .unwrap_or_default()
    }

    /// `user@host:port/db`, for messages and logs: never the password, nor
    /// any other option.
    #[must_use]
    pub fn describe(&self) -> String {
        let config = &self.config;
        let mut out = String::new();
        if let Some(user) = config.get_user() {
            out.push_str(user);
            out.push('@');
        }
        let ports = config.get_ports();
        for (i, host) in config.get_hosts().iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&host_name(host));
            if let Some(port) = ports.get(i).or(ports.first()) {
                let _ = write!(out, ":{port}");
            }
        }
        if let Some(db) = config.get_dbname() {
            out.push('/');
            out.push_str(db);
        }
        out
    }
}

/// A host as a message names it: its name, or its socket's folder.
fn host_name(host: &Host) -> String {
    match host {
        Host::Tcp(name) => name.clone(),
        Host::Unix(path) => path.display().to_string(),
    }
}

/// The keys taken out of the URL.
fn is_tls_key(key: &str) -> bool {
    key == "sslmode" || key == "sslrootcert"
}

/// Refuses libpq's client-certificate keys, which this adapter does not
/// implement: a URL that asks to log in with a certificate must not
/// connect without one.
fn check_supported(key: &str) -> Result<(), OpenError> {
    if matches!(key, "sslcert" | "sslkey" | "sslpassword") {
        return Err(OpenError::Url {
            reason: format!("{key}: client certificates are not supported; log in with a password"),
        });
    }
    Ok(())
}

/// The URL without its TLS parameters, and those parameters decoded.
fn split_url(url: &str) -> Result<(String, Vec<(String, String)>), OpenError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_owned(), Vec::new()));
    };
    let mut kept = Vec::new();
    let mut tls = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(key)?;
        check_supported(&key)?;
        if is_tls_key(&key) {
            tls.push((key, percent_decode(value)?));
        } else {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, tls))
}

/// `%XX` escapes decoded, as UTF-8.
fn percent_decode(text: &str) -> Result<String, OpenError> {
    let bad = || OpenError::Url {
        reason: "a query parameter has a malformed %-escape or is not UTF-8".to_owned(),
    };
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3).ok_or_else(bad)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

/// A `key=value` string without its TLS keys (the rest written back, each
/// value quoted), and those keys' values.
fn split_key_values(text: &str) -> Result<(String, Vec<(String, String)>), OpenError> {
    let mut rest = String::new();
    let mut tls = Vec::new();
    for (key, value) in key_values(text)? {
        check_supported(&key)?;
        if is_tls_key(&key) {
            tls.push((key, value));
        } else {
            if !rest.is_empty() {
                rest.push(' ');
            }
            rest.push_str(&key);
            rest.push_str("='");
            for c in value.chars() {
                if c == '\'' || c == '\\' {
                    rest.push('\\');
                }
                rest.push(c);
            }
            rest.push('\'');
        }
    }
    Ok((rest, tls))
}

/// The pairs of a `key=value` string as libpq reads it: keys and `=`
/// separated by optional spaces, a value bare (up to a space) or in single
/// quotes, a backslash escaping the next character in either.
fn key_values(text: &str) -> Result<Vec<(String, String)>, OpenError> {
    let bad = |reason: &str| OpenError::Url {
        reason: reason.to_owned(),
    };
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(bad(&format!("option {key:?} has no `=` and value")));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(bad(&format!("the value of {key:?} has no closing quote"))),
                    Some('\'') => break,
                    Some('\\') => value.push(
                        chars
                            .next()
                            .ok_or_else(|| bad("a value ends in a backslash"))?,
                    ),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.push(
                        chars
                            .next()
                            .ok_or_else(|| bad("a value ends in a backslash"))?,
                    );
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> ConnectUrl {
        ConnectUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    /// Both forms give the same settings; the TLS keys never reach
    /// tokio-postgres, which would refuse `verify-full` and `sslrootcert`.
    #[test]
    fn both_forms_read_every_mode_and_the_root_file() {
        for (mode, expected) in [
            ("disable", SslMode::Disable),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
        ] {
            for url in [
                format!(
                    "postgres://app:s3cret@db.example:6432/orders?sslmode={mode}&sslrootcert=%2Fetc%2Fca%20x.pem&application_name=w"
                ),
                format!(
                    "host=db.example port=6432 user=app password='s3 \\'c' dbname=orders sslmode={mode} sslrootcert='/etc/ca x.pem' application_name=w"
                ),
            ] {
                let url = parsed(&url);
                assert_eq!(url.ssl_mode(), expected);
                assert_eq!(
                    url.root_cert,
                    RootCert::File(PathBuf::from("/etc/ca x.pem"))
                );
                assert_eq!(url.describe(), "app@db.example:6432/orders");
                assert_eq!(url.config.get_application_name(), Some("w"));
                assert_eq!(url.config.get_ssl_mode(), expected.driver_mode());
            }
        }
        let plain = parsed("postgres://app@db/orders");
        assert_eq!(
            (plain.ssl_mode(), plain.root_cert, plain.root_cert_given),
            (SslMode::Prefer, RootCert::System, false)
        );
        assert_eq!(
            parsed("host=h sslrootcert=system").root_cert,
            RootCert::System
        );
    }

    /// A key=value password keeps its quotes and backslashes through the
    /// rewrite.
    #[test]
    fn a_key_value_password_survives_the_rewrite() {
        let url = parsed(r"host=h user=u password='a\'b\\c d' sslmode=require");
        assert_eq!(url.config.get_password(), Some(r"a'b\c d".as_bytes()));
    }

    /// A bad mode, an empty root file, a broken escape or quote: refused,
    /// and the message never holds the password.
    #[test]
    fn bad_settings_are_refused_without_the_password() {
        for url in [
            "postgres://u:hunter2@h/db?sslmode=verify",
            "postgres://u:hunter2@h/db?sslrootcert=",
            "postgres://u:hunter2@h/db?sslmode=%zz",
            "host=h password=hunter2 sslmode=allowed",
            "host=h password='hunter2",
            "host=h password",
            "postgres://u:hunter2@h/db?sslcert=/c.pem",
            "host=h password=hunter2 sslkey=/k.pem",
        ] {
            let error = ConnectUrl::parse(url).expect_err(url).to_string();
            assert!(!error.contains("hunter2"), "{url}: {error}");
        }
        let error = ConnectUrl::parse("postgres://u@h/db?sslmode=verify").expect_err("bad mode");
        assert!(error.to_string().contains("verify-full"), "{error}");
    }
}
