//! A streamed answer as steps (events and pauses), its text on the wire,
//! and ids shaped like the real APIs' ones.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

/// One step of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// An SSE event: `event: NAME` (when named) and `data: JSON`.
    Event(Option<String>, Value),
    /// `data: [DONE]` (Chat Completions' end).
    Done,
    /// A pause before the next step.
    Sleep(Duration),
}

impl Step {
    /// An event named after its data's `type`, as Anthropic and the
    /// Responses API send them.
    pub(crate) fn typed(data: Value) -> Self {
        let name = data.get("type").and_then(Value::as_str).map(str::to_owned);
        Step::Event(name, data)
    }

    /// The bytes of this step on the wire (none for a pause).
    pub(crate) fn wire(&self) -> String {
        match self {
            Step::Event(Some(name), data) => format!("event: {name}\ndata: {data}\n\n"),
            Step::Event(None, data) => format!("data: {data}\n\n"),
            Step::Done => "data: [DONE]\n\n".to_owned(),
            Step::Sleep(_) => String::new(),
        }
    }
}

/// A pause, or nothing for a zero one.
pub(crate) fn pause(d: Duration) -> Option<Step> {
    (!d.is_zero()).then_some(Step::Sleep(d))
}

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `prefix` and `len` random letters and digits (`msg_`, `toolu_`, `resp_`,
/// `call_`, `fc_`, `chatcmpl-`).
pub(crate) fn id(prefix: &str, len: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut out = String::from(prefix);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let mut bits = hasher.finish();
    for i in 0..len {
        if i % 10 == 9 {
            let mut more = RandomState::new().build_hasher();
            more.write_u64(bits);
            bits = more.finish();
        }
        let index = usize::try_from(bits % 62).unwrap_or(0);
        out.push(char::from(ALPHABET[index]));
        bits /= 62;
    }
    out
}

/// Unix time in seconds.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Parses SSE text back into (event name, data) pairs, as a client does.
#[cfg(test)]
pub(crate) fn parse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push(d);
                }
            }
            (name, data.join("\n"))
        })
        .collect()
}

/// The wire text of `steps`.
#[cfg(test)]
pub(crate) fn text(steps: &[Step]) -> String {
    steps.iter().map(Step::wire).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_the_real_ones() {
        let a = id("toolu_", 24);
        let b = id("toolu_", 24);
        assert_eq!(a.len(), 30);
        assert_ne!(a, b);
        assert!(a[6..].chars().all(|c| c.is_ascii_alphanumeric()));
    }

    #[test]
    fn steps_round_trip_through_the_wire() {
        let steps = vec![
            Step::typed(serde_json::json!({"type": "ping"})),
            Step::Sleep(Duration::from_millis(1)),
            Step::Event(None, serde_json::json!({"a": 1})),
            Step::Done,
        ];
        let events = parse(&text(&steps));
        assert_eq!(events.len(), 3);
        assert_eq!(
            events[0],
            (Some("ping".to_owned()), r#"{"type":"ping"}"#.to_owned())
        );
        assert_eq!(events[2], (None, "[DONE]".to_owned()));
    }
}
