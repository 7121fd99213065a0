//! proto3's JSON mapping for the fields serde does not spell that way by
//! itself: `bytes` as standard base64, enums by name (numbers accepted),
//! `int64` as a string (numbers accepted), `google.protobuf.Timestamp` as
//! RFC 3339.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serializer};

/// `bytes`.
pub mod bytes {
    use super::*;

    pub fn serialize<S: Serializer>(value: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(value))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        // proto3 JSON takes either alphabet, padded or not
        let trimmed = text.trim_end_matches('=');
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(trimmed)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(trimmed))
            .map_err(serde::de::Error::custom)
    }
}

/// `int64`.
pub mod int64 {
    use super::*;

    pub fn serialize<S: Serializer>(value: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&value.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(i64),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Number(n) => Ok(n),
            Either::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// An enum's names and numbers, for [`enum_name`] and [`enum_number`].
pub type EnumNames = &'static [(i32, &'static str)];

pub fn enum_name<S: Serializer>(names: EnumNames, value: i32, s: S) -> Result<S::Ok, S::Error> {
    match names.iter().find(|(n, _)| *n == value) {
        Some((_, name)) => s.serialize_str(name),
        None => s.serialize_i32(value),
    }
}

pub fn enum_number<'de, D: Deserializer<'de>>(names: EnumNames, d: D) -> Result<i32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(i32),
        Text(String),
    }
    match Option::<Either>::deserialize(d)? {
        None => Ok(0),
        Some(Either::Number(n)) => Ok(n),
        Some(Either::Text(t)) => names
            .iter()
            .find(|(_, name)| *name == t)
            .map(|(n, _)| *n)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown enum value {t:?}"))),
    }
}

/// `google.protobuf.Timestamp`.
pub mod timestamp {
    use paddock_core::store::Timestamp;

    use super::*;

    pub fn serialize<S: Serializer>(
        value: &Option<prost_types::Timestamp>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(t) => {
                let millis = t.seconds.saturating_mul(1000) + i64::from(t.nanos / 1_000_000);
                s.serialize_str(&Timestamp::from_millis(millis).to_string())
            }
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<prost_types::Timestamp>, D::Error> {
        let Some(text) = Option::<String>::deserialize(d)? else {
            return Ok(None);
        };
        let t = Timestamp::parse_rfc3339(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not RFC 3339: {text:?}")))?;
        let millis = t.as_millis();
        Ok(Some(prost_types::Timestamp {
            seconds: millis.div_euclid(1000),
            nanos: i32::try_from(millis.rem_euclid(1000) * 1_000_000).unwrap_or(0),
        }))
    }
}

/// Whether a proto3 scalar holds its default (left out of JSON).
pub fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
