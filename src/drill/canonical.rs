//! Canonical JSON and the fingerprint the reference drill computes from it,
//! byte for byte, so a fingerprint read from a file can be checked here.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Canonical JSON as the reference drill writes it for fingerprints
/// (Python's `json.dumps(sort_keys=True, separators=(",", ":"))`): keys
/// sorted at every level, no spaces, non-ASCII escaped as `\uXXXX`. Keys are
/// sorted here because the crate enables `preserve_order`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// `sha256:<hex>` of [`canonical_json`], the contract's fingerprint.
pub fn fingerprint(value: &Value) -> String {
    format!("sha256:{}", sha256_hex(canonical_json(value).as_bytes()))
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON string with Python's `ensure_ascii` escaping, so a fingerprint
/// computed here matches one computed by the reference producer.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_matches_the_reference_producer() {
        let params = serde_json::json!({"week": "2026-W45", "report": "weekly-sales"});
        assert_eq!(
            fingerprint(&params),
            "sha256:75da2c3be85b373dc96aed07107b75f6452fc826b0ed0280d55b7b0442e04850"
        );
    }

    #[test]
    fn canonical_json_sorts_nested_keys_and_escapes_like_python() {
        let value = serde_json::json!({"b": [{"z": 1, "a": null}], "a": "é\u{1F600}\n"});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":"\u00e9\ud83d\ude00\n","b":[{"a":null,"z":1}]}"#
        );
    }
}
