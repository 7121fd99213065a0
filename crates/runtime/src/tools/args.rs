//! Argument parsing and schemas. Both come from the same struct, so what the
//! model is offered and what a call accepts cannot drift apart.

use std::time::Duration;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Access, Replay, Role, ToolContract, ToolError};

/// The JSON schema of an argument struct as the model is offered it.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            // Providers want a bare object schema; several reject `$ref`s.
            s.meta_schema = None;
            s.inline_subschemas = true;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut value {
        // The Rust type name, and the struct's doc: the contract's
        // description is what the model reads about the tool.
        map.remove("title");
        map.remove("description");
    }
    drop_rustdoc(&mut value);
    value
}

/// Removes descriptions written for Rust readers (they link types with
/// "[`Name`]"), which nested argument types carry from their doc comments.
fn drop_rustdoc(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map
                .get("description")
                .and_then(Value::as_str)
                .is_some_and(|d| d.contains("[`"))
            {
                map.remove("description");
            }
            map.values_mut().for_each(drop_rustdoc);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_rustdoc),
        _ => {}
    }
}

/// A contract whose parameters are the schema of `T`; a tool with a path
/// argument adds it with [`ToolContract::with_path_argument`].
pub(crate) fn contract_for<T: JsonSchema>(
    name: &'static str,
    description: &'static str,
    role: Role,
    access: Access,
    replay: Replay,
    timeout: Duration,
) -> ToolContract {
    ToolContract {
        name,
        description,
        parameters: schema_of::<T>(),
        role,
        access,
        replay,
        timeout,
        path_argument: None,
    }
}

/// Deserializes a call's arguments into the tool's argument struct.
pub(crate) fn parse_args<T: DeserializeOwned>(
    tool: &str,
    arguments: Value,
) -> Result<T, ToolError> {
    // Models send `null` for a call without arguments; that is an empty object.
    let arguments = if arguments.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        arguments
    };
    serde_json::from_value(arguments).map_err(|e| invalid(tool, e.to_string()))
}

pub(crate) fn invalid(tool: &str, reason: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments {
        tool: tool.to_owned(),
        reason: reason.into(),
    }
}

/// `value` or `default`, refused outside `min..=max` (the schema states the
/// same bounds from the same constants).
pub(crate) fn bounded(
    tool: &str,
    field: &str,
    value: Option<u64>,
    default: u64,
    (min, max): (u64, u64),
) -> Result<u64, ToolError> {
    match value {
        None => Ok(default),
        Some(v) if v < min || v > max => Err(invalid(
            tool,
            format!("{field} is {v}; it must be between {min} and {max}"),
        )),
        Some(v) => Ok(v),
    }
}

/// Refuses a string that is empty or only whitespace.
pub(crate) fn non_empty(tool: &str, field: &str, value: &str) -> Result<(), ToolError> {
    if value.trim().is_empty() {
        Err(invalid(tool, format!("{field} must not be empty")))
    } else {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    /// An example.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        /// The path.
        path: String,
        #[serde(default)]
        all: bool,
        #[serde(default)]
        kind: Option<Kind>,
    }

    /// [`Args`]'s kind.
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
    }

    #[test]
    fn the_schema_is_a_bare_object_with_field_docs() {
        let schema = schema_of::<Args>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["path"]));
        assert_eq!(schema["properties"]["path"]["description"], "The path.");
        assert!(schema.get("$schema").is_none());
        assert!(schema.get("title").is_none());
        assert!(schema.get("description").is_none());
        assert_eq!(schema["properties"]["kind"]["enum"], json!(["plain", null]));
        assert!(schema["properties"]["kind"].get("description").is_none());
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_invalid_arguments_that_say_why() {
        let err = parse_args::<Args>("t", json!({"path": "a", "pth": 1})).unwrap_err();
        assert!(err.to_string().contains("unknown field `pth`"), "{err}");
        let err = parse_args::<Args>("t", json!({"path": 3})).unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err:?}");
        let args = parse_args::<Args>("t", json!({"path": "a", "kind": "plain"})).unwrap();
        assert_eq!((args.path.as_str(), args.all), ("a", false));
        assert!(matches!(args.kind, Some(Kind::Plain)));
        let err = parse_args::<Args>("t", Value::Null).unwrap_err();
        assert!(err.to_string().contains("missing field `path`"), "{err}");
    }

    #[test]
    fn bounded_defaults_and_refuses_values_outside_the_range() {
        assert_eq!(bounded("t", "n", None, 5, (1, 10)).unwrap(), 5);
        assert_eq!(bounded("t", "n", Some(10), 5, (1, 10)).unwrap(), 10);
        let err = bounded("t", "n", Some(11), 5, (1, 10)).unwrap_err();
        assert!(
            err.to_string()
                .contains("n is 11; it must be between 1 and 10"),
            "{err}"
        );
        assert!(bounded("t", "n", Some(0), 5, (1, 10)).is_err());
    }
}
