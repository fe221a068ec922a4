//! libpq's two spellings of a connection string, read into the keywords
//! they set, in order: `postgresql://user:pw@h1:5432,h2:5433/db?k=v&…` and
//! `key=value key='quoted value' …`. A keyword set twice keeps the later
//! value, so a URL's query overrides what its authority said
//! (`postgresql://u@localhost/db?host=/run/pg` means the socket folder).
//! Which keywords exist and what they mean is [`super::address`]'s to say.

/// The keywords an address sets, later entries overriding earlier ones.
pub(crate) type Params = Vec<(String, String)>;

/// Reads `text` as a URL (with the postgres scheme) or as `key=value`
/// words; the error says what is malformed, without quoting a password.
pub(crate) fn parse(text: &str) -> Result<Params, String> {
    let trimmed = text.trim();
    for scheme in ["postgresql://", "postgres://"] {
        if let Some(rest) = trimmed.strip_prefix(scheme) {
            return parse_url(rest);
        }
    }
    parse_words(trimmed)
}

/// The value a keyword has in `params` (the last one set).
pub(crate) fn get<'a>(params: &'a Params, key: &str) -> Option<&'a str> {
    params
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn parse_url(rest: &str) -> Result<Params, String> {
    let mut params = Params::new();
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    // libpq looks for the user's part up to the first '/' only.
    let mut rest = before_query;
    let upto_slash = rest.find('/').unwrap_or(rest.len());
    if let Some(at) = rest[..upto_slash].rfind('@') {
        let userspec = &rest[..at];
        let (user, password) = match userspec.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userspec, None),
        };
        if !user.is_empty() {
            params.push(("user".into(), decode(user)?));
        }
        if let Some(p) = password {
            params.push(("password".into(), decode(p)?));
        }
        rest = &rest[at + 1..];
    }
    let (hostspec, db) = match rest.split_once('/') {
        Some((h, d)) => (h, Some(d)),
        None => (rest, None),
    };
    let (hosts, ports) = split_hostspec(hostspec)?;
    if hosts.iter().any(|h| !h.is_empty()) {
        params.push(("host".into(), hosts.join(",")));
    }
    if ports.iter().any(|p| !p.is_empty()) {
        params.push(("port".into(), ports.join(",")));
    }
    if let Some(db) = db.filter(|d| !d.is_empty()) {
        params.push(("dbname".into(), decode(db)?));
    }
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(format!(
                "missing \"=\" after \"{}\" in the URL's query",
                crate::text::sanitize(pair)
            ));
        };
        let (key, value) = (decode(key)?, decode(value)?);
        // libpq's one alias, kept for JDBC-style URLs.
        if key == "ssl" && value == "true" {
            params.push(("sslmode".into(), "require".into()));
        } else {
            params.push((key, value));
        }
    }
    Ok(params)
}

/// `h1:5432,[::1]:5433,/socket/folder` into hosts and ports, one each per
/// entry (an entry without a port has an empty one).
fn split_hostspec(spec: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let (mut hosts, mut ports) = (Vec::new(), Vec::new());
    for entry in spec.split(',') {
        let (host, port) = if let Some(inner) = entry.strip_prefix('[') {
            let Some((host, after)) = inner.split_once(']') else {
                return Err("an IPv6 host is missing its closing \"]\"".into());
            };
            (host, after.strip_prefix(':').unwrap_or(after))
        } else {
            entry.split_once(':').unwrap_or((entry, ""))
        };
        hosts.push(decode(host)?);
        ports.push(decode(port)?);
    }
    Ok((hosts, ports))
}

fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    "a \"%\" in the URL is not followed by two hex digits".to_string()
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "the URL's %-escapes are not UTF-8".to_string())
}

/// `key = value` words; a value may be quoted with `'`, and `\` escapes
/// the next character in either form, as libpq reads them.
fn parse_words(text: &str) -> Result<Params, String> {
    let mut params = Params::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(params);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!(
                "missing \"=\" after \"{}\"",
                crate::text::sanitize(&key)
            ));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                    None => return Err(format!("the quoted value of {key} is not closed")),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        params.push((key, value));
    }
}

/// `params` as `key='value'` words the client library reads back.
pub(crate) fn to_words(params: &[(String, String)]) -> String {
    params
        .iter()
        .map(|(k, v)| {
            let quoted = v.replace('\\', "\\\\").replace('\'', "\\'");
            format!("{k}='{quoted}'")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &Params) -> Vec<(&str, &str)> {
        p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn a_url_lists_hosts_and_ports_and_its_query_overrides_its_authority() {
        let p = parse("postgresql://postgres@/ledger?host=/a,/b&port=5432,5432&target_session_attrs=read-write").unwrap();
        assert_eq!(
            pairs(&p),
            [
                ("user", "postgres"),
                ("dbname", "ledger"),
                ("host", "/a,/b"),
                ("port", "5432,5432"),
                ("target_session_attrs", "read-write")
            ]
        );
        let p = parse("postgres://u:p%40ss@h1:5432,[::1]:5433,h3/db").unwrap();
        assert_eq!(get(&p, "password"), Some("p@ss"));
        assert_eq!(get(&p, "host"), Some("h1,::1,h3"));
        assert_eq!(get(&p, "port"), Some("5432,5433,"));
        let p = parse("postgresql://postgres@localhost/ledger?host=/var/run/postgresql").unwrap();
        assert_eq!(get(&p, "host"), Some("/var/run/postgresql"));
        let p = parse("postgresql://%2Frun%2Fpg/db").unwrap();
        assert_eq!(get(&p, "host"), Some("/run/pg"));
        assert!(parse("postgresql://h/db?sslmode").is_err());
    }

    #[test]
    fn key_value_words_take_quotes_and_escapes_as_libpq_does() {
        let p = parse(r"host=/tmp  dbname = 'my ledger' password='it\'s' user=a\ b").unwrap();
        assert_eq!(
            pairs(&p),
            [
                ("host", "/tmp"),
                ("dbname", "my ledger"),
                ("password", "it's"),
                ("user", "a b")
            ]
        );
        assert!(parse("host").is_err());
        assert!(parse("host='open").is_err());
        let back = parse(&to_words(&p)).unwrap();
        assert_eq!(back, p);
    }
}
