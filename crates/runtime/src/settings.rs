//! Why an operator's runtime setting is refused. The settings types
//! ([`crate::SteeringSettings`], [`crate::StorageSettings`],
//! [`crate::QueueSettings`], [`crate::SnapshotSettings`]) deserialise from the config file's keys and
//! check themselves; each refusal names the key, as the file spells it,
//! and the value.

/// A runtime setting out of its bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("{setting} must be more than 0")]
    Zero { setting: &'static str },
    #[error("{setting} must be at least {least}, not {value}")]
    BelowLeast {
        setting: &'static str,
        least: u64,
        value: u64,
    },
    #[error("{setting} must be {least} to {most}, not {value}")]
    OutOfRange {
        setting: &'static str,
        least: u64,
        most: u64,
        value: u64,
    },
}

impl SettingsError {
    /// `value` within `least..=most`, else the refusal naming `setting`.
    pub(crate) fn check_range(
        setting: &'static str,
        value: u64,
        least: u64,
        most: u64,
    ) -> Result<(), Self> {
        if (least..=most).contains(&value) {
            Ok(())
        } else {
            Err(Self::OutOfRange {
                setting,
                least,
                most,
                value,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::SettingsError;
    use crate::{QueueSettings, SnapshotSettings, SteeringSettings, StorageSettings, WhenFull};

    fn parse<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn steering_reads_its_keys_and_names_the_one_refused() {
        let settings: SteeringSettings =
            parse(r#"{"max_steering_messages": 5, "max_steering_total_chars": 900}"#).unwrap();
        assert_eq!(
            settings,
            SteeringSettings {
                max_messages: 5,
                max_total_chars: 900,
                ..SteeringSettings::default()
            }
        );
        assert_eq!(settings.validate(), Ok(()));
        let zero: SteeringSettings = parse(r#"{"max_steering_messages": 0}"#).unwrap();
        assert_eq!(
            zero.validate().unwrap_err().to_string(),
            "max_steering_messages must be more than 0"
        );
        let long: SteeringSettings = parse(r#"{"max_steering_message_chars": 32001}"#).unwrap();
        assert_eq!(
            long.validate(),
            Err(SettingsError::OutOfRange {
                setting: "max_steering_message_chars",
                least: 1,
                most: 32_000,
                value: 32_001
            })
        );
        assert!(parse::<SteeringSettings>(r#"{"max_messages": 5}"#).is_err());
    }

    #[test]
    fn storage_keeps_at_least_two_checkpoints() {
        let settings: StorageSettings = parse(r#"{"max_checkpoints_per_session": 7}"#).unwrap();
        assert_eq!(settings.max_checkpoints_per_session, 7);
        assert_eq!(settings.validate(), Ok(()));
        assert_eq!(
            parse::<StorageSettings>("{}").unwrap(),
            StorageSettings::default()
        );
        let one: StorageSettings = parse(r#"{"max_checkpoints_per_session": 1}"#).unwrap();
        assert_eq!(
            one.validate().unwrap_err().to_string(),
            "max_checkpoints_per_session must be at least 2, not 1"
        );
    }

    #[test]
    fn the_queue_reads_seconds_and_names_its_bounds() {
        let settings: QueueSettings =
            parse(r#"{"when_full": "queue", "max_queue_wait_secs": 60}"#).unwrap();
        assert_eq!(
            settings,
            QueueSettings {
                when_full: WhenFull::Queue,
                max_wait: Duration::from_secs(60),
                ..QueueSettings::default()
            }
        );
        let long: QueueSettings = parse(r#"{"max_queue_wait_secs": 86401}"#).unwrap();
        assert_eq!(
            long.validate().unwrap_err().to_string(),
            "max_queue_wait_secs must be 1 to 86400, not 86401"
        );
        let none: QueueSettings = parse(r#"{"max_queued_per_tenant": 0}"#).unwrap();
        assert_eq!(
            none.validate().unwrap_err().to_string(),
            "max_queued_per_tenant must be 1 to 10000, not 0"
        );
        assert!(parse::<QueueSettings>(r#"{"when_full": "wait"}"#).is_err());
    }

    #[test]
    fn snapshot_request_bounds_default_to_the_routes_bound_or_the_limits() {
        let defaults: SnapshotSettings = parse("{}").unwrap();
        assert_eq!(defaults, SnapshotSettings::default());
        assert_eq!(
            defaults.request_max(),
            paddock_snapshot::Limits {
                max_files: paddock_snapshot::MAX_REQUEST_FILES,
                max_bytes: paddock_snapshot::MAX_REQUEST_BYTES
            }
        );
        let big: SnapshotSettings =
            parse(r#"{"max_files": 2000000, "request_max_bytes": 1073741824}"#).unwrap();
        assert_eq!(big.limits.max_files, 2_000_000);
        assert_eq!(big.limits.max_bytes, paddock_snapshot::DEFAULT_MAX_BYTES);
        assert_eq!(
            (big.request_max().max_files, big.request_max().max_bytes),
            (2_000_000, 1 << 30),
            "a request may ask at least the limits"
        );
        assert_eq!(big.validate(), Ok(()));
        let zero: SnapshotSettings = parse(r#"{"max_bytes": 0}"#).unwrap();
        assert_eq!(
            zero.validate().unwrap_err().to_string(),
            "max_bytes must be more than 0"
        );
        let below: SnapshotSettings =
            parse(r#"{"max_bytes": 10, "request_max_bytes": 5}"#).unwrap();
        assert_eq!(
            below.validate().unwrap_err().to_string(),
            "request_max_bytes must be at least 10, not 5"
        );
        assert!(parse::<SnapshotSettings>(r#"{"files": 5}"#).is_err());
        assert!(parse::<SnapshotSettings>(r#"{"excludes": []}"#).is_err());
    }
}
