//! How an operator's setting in the config file becomes a subsystem's
//! value when the two differ in shape: each subsystem's settings type
//! derives `Deserialize` and names these with `deserialize_with`, so the
//! mapping is written once, not per field.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// Whole seconds (`header_timeout_secs = 10`) as a [`Duration`].
pub fn secs<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    u64::deserialize(deserializer).map(Duration::from_secs)
}

/// A count where 0 means "off" (`temporary_workspace_bytes = 0`) as an
/// [`Option`]: 0 is `None`.
pub fn zero_is_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    u64::deserialize(deserializer).map(|n| (n != 0).then_some(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::IntoDeserializer;
    use serde::de::value::Error;

    #[test]
    fn seconds_become_a_duration_and_zero_turns_off() {
        let de = |n: u64| IntoDeserializer::<Error>::into_deserializer(n);
        assert_eq!(secs(de(90)).unwrap(), Duration::from_secs(90));
        assert_eq!(zero_is_none(de(0)).unwrap(), None);
        assert_eq!(zero_is_none(de(5)).unwrap(), Some(5));
    }
}
