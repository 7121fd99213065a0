//! `paddock sandbox info`: what this host can enforce.

use serde_json::Value;

use crate::cli::{BackendArgs, InfoArgs};

/// The host's capabilities, and each backend with whether it can run here
/// (`backends.NAME`: "available", or why not).
pub async fn info(args: &InfoArgs, backend: &BackendArgs) -> anyhow::Result<u8> {
    let mut capabilities = serde_json::to_value(paddock_jail::probe_host())?;
    let backends: serde_json::Map<String, Value> = crate::backend::availability(backend)
        .await
        .into_iter()
        .map(|(kind, why_not)| {
            let state = why_not.map_or_else(
                || "available".to_owned(),
                |reason| format!("unavailable: {reason}"),
            );
            (kind.name().to_owned(), Value::String(state))
        })
        .collect();
    if let Value::Object(map) = &mut capabilities {
        map.insert("backends".to_owned(), Value::Object(backends));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&capabilities)?);
    } else {
        let mut rows = Vec::new();
        flatten("", &capabilities, &mut rows);
        let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (key, value) in rows {
            println!("{key:<width$}  {value}");
        }
    }
    Ok(0)
}

/// One row per leaf, keyed by its dotted path.
fn flatten(prefix: &str, value: &Value, rows: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&path, child, rows);
            }
        }
        Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => {
            let parts: Vec<String> = items.iter().map(leaf).collect();
            let shown = if parts.is_empty() {
                "-".to_owned()
            } else {
                parts.join(", ")
            };
            rows.push((prefix.to_owned(), shown));
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), child, rows);
            }
        }
        other => rows.push((prefix.to_owned(), leaf(other))),
    }
}

fn leaf(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::Bool(true) => "yes".to_owned(),
        Value::Bool(false) => "no".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_capabilities_become_dotted_rows() {
        let value = serde_json::json!({
            "landlock": {"abi": 6, "available": true},
            "cgroup": {"version": "v1", "controllers": ["memory", "pids"]},
            "seccomp": false,
            "note": null,
        });
        let mut rows = Vec::new();
        flatten("", &value, &mut rows);
        rows.sort();
        assert_eq!(
            rows,
            vec![
                ("cgroup.controllers".to_owned(), "memory, pids".to_owned()),
                ("cgroup.version".to_owned(), "v1".to_owned()),
                ("landlock.abi".to_owned(), "6".to_owned()),
                ("landlock.available".to_owned(), "yes".to_owned()),
                ("note".to_owned(), "-".to_owned()),
                ("seccomp".to_owned(), "no".to_owned()),
            ]
        );
    }
}
