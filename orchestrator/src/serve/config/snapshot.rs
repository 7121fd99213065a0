//! `[snapshot]`: the snapshot limits of runs.

use anyhow::bail;
use serde::Deserialize;

/// `[snapshot]`: the snapshot limits of a run that asks none (`max_files`,
/// default 10000; `max_bytes`, default 100 MiB) and the most a run request
/// may ask (`request_max_files`, `request_max_bytes`, default a million and
/// 8 GiB, the sandbox snapshot routes' bounds).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotSection {
    pub max_files: Option<u64>,
    pub max_bytes: Option<u64>,
    pub request_max_files: Option<u64>,
    pub request_max_bytes: Option<u64>,
}

impl SnapshotSection {
    /// The runtime's snapshot settings: `[snapshot]` over the defaults.
    pub fn settings(&self) -> anyhow::Result<paddock_runtime::SnapshotSettings> {
        let section = self;
        let mut settings = paddock_runtime::SnapshotSettings::default();
        let pick = |field: &str, value: Option<u64>, default: u64| match value {
            Some(0) => bail!("snapshot.{field} must be more than 0"),
            Some(n) => Ok(n),
            None => Ok(default),
        };
        settings.limits.max_files =
            pick("max_files", section.max_files, settings.limits.max_files)?;
        settings.limits.max_bytes =
            pick("max_bytes", section.max_bytes, settings.limits.max_bytes)?;
        settings.request_max.max_files = pick(
            "request_max_files",
            section.request_max_files,
            settings
                .request_max
                .max_files
                .max(settings.limits.max_files),
        )?;
        settings.request_max.max_bytes = pick(
            "request_max_bytes",
            section.request_max_bytes,
            settings
                .request_max
                .max_bytes
                .max(settings.limits.max_bytes),
        )?;
        if settings.request_max.max_files < settings.limits.max_files
            || settings.request_max.max_bytes < settings.limits.max_bytes
        {
            bail!(
                "snapshot.request_max_files and request_max_bytes must be at least max_files and max_bytes"
            );
        }
        Ok(settings)
    }
}
