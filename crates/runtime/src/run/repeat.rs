//! The repeat guard: an agent that calls the same tool with the same
//! arguments again and again without changing the workspace is stuck. The
//! third identical call is not run (its answer is a recovery hint) and the
//! fourth ends the run.

use std::collections::HashMap;

use serde_json::Value;

/// What to do with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Repeat {
    Run,
    /// Do not run it; answer with this hint.
    Hint(String),
    /// Do not run it; end the run with this error.
    Stop(String),
}

#[derive(Debug, Default)]
pub(crate) struct RepeatGuard {
    /// Identical calls seen since the last successful workspace change.
    seen: HashMap<String, u32>,
}

impl RepeatGuard {
    pub(crate) fn observe(&mut self, tool: &str, arguments: &Value) -> Repeat {
        let mut key = String::from(tool);
        key.push('\0');
        canonical_json(arguments, &mut key);
        let count = self.seen.entry(key).or_insert(0);
        *count += 1;
        match *count {
            1 | 2 => Repeat::Run,
            3 => Repeat::Hint(format!(
                "Not run: this is the third identical {tool} call since the workspace last \
                 changed, and it would give the same result again. Change approach: read the \
                 previous result, inspect other files, or change the code before retrying. \
                 Repeating this exact call once more ends the run."
            )),
            n => Repeat::Stop(format!(
                "{tool} was called {n} times with identical arguments without a workspace \
                 change in between"
            )),
        }
    }

    /// A call changed the workspace: earlier calls may now give other results.
    pub(crate) fn workspace_changed(&mut self) {
        self.seen.clear();
    }
}

/// `value` as JSON with object keys sorted at every level, so argument order
/// does not make two identical calls look different.
pub(crate) fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn third_identical_call_gets_a_hint_and_the_fourth_stops() {
        let mut guard = RepeatGuard::default();
        let args = json!({"path": "a.txt", "range": {"start": 1, "end": 2}});
        let reordered = json!({"range": {"end": 2, "start": 1}, "path": "a.txt"});
        assert_eq!(guard.observe("read_file", &args), Repeat::Run);
        assert_eq!(guard.observe("read_file", &reordered), Repeat::Run);
        // another call in between does not reset the count
        assert_eq!(
            guard.observe("read_file", &json!({"path": "b"})),
            Repeat::Run
        );
        assert!(matches!(
            guard.observe("read_file", &args),
            Repeat::Hint(h) if h.contains("third identical read_file call")
        ));
        assert!(matches!(
            guard.observe("read_file", &args),
            Repeat::Stop(e) if e.contains("4 times")
        ));
    }

    #[test]
    fn a_workspace_change_resets_the_counts() {
        let mut guard = RepeatGuard::default();
        let args = json!({"command": "make test"});
        guard.observe("run_command", &args);
        guard.observe("run_command", &args);
        guard.workspace_changed();
        assert_eq!(guard.observe("run_command", &args), Repeat::Run);
        assert_eq!(guard.observe("run_command", &args), Repeat::Run);
        assert!(matches!(
            guard.observe("run_command", &args),
            Repeat::Hint(_)
        ));
    }

    #[test]
    fn same_arguments_for_different_tools_are_different_calls() {
        let mut guard = RepeatGuard::default();
        let args = json!({"path": "x"});
        for _ in 0..2 {
            assert_eq!(guard.observe("read_file", &args), Repeat::Run);
            assert_eq!(guard.observe("workspace_tree", &args), Repeat::Run);
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let mut out = String::new();
        canonical_json(&json!({"b": [{"z": 1, "a": "\""}], "a": null}), &mut out);
        assert_eq!(out, r#"{"a":null,"b":[{"a":"\"","z":1}]}"#);
    }
}
