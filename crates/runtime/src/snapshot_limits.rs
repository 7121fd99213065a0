//! Which snapshot limit a workspace went over and how to raise it: the one
//! sentence the end-of-run event, a failed subagent spawn and the CLI show.

use std::error::Error;

use paddock_snapshot::{Limit, SnapshotError};

use crate::events::{SnapshotLimitHit, SnapshotLimitKind};

/// The files or bytes limit `err` (or one of its sources) went over.
pub(crate) fn limit_hit(err: &(dyn Error + 'static)) -> Option<SnapshotLimitHit> {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(SnapshotError::OverLimit { limit, path }) = e.downcast_ref::<SnapshotError>() {
            return hit(*limit, path);
        }
        current = e.source();
    }
    None
}

fn hit(limit: Limit, path: &str) -> Option<SnapshotLimitHit> {
    let (kind, value, what, flag) = match limit {
        Limit::Files(n) => (
            SnapshotLimitKind::MaxFiles,
            n,
            format!("more than {n} entries (files, directories and links)"),
            "--snapshot-max-files",
        ),
        Limit::Bytes(n) => (
            SnapshotLimitKind::MaxBytes,
            n,
            format!("more than {n} bytes ({} MiB) of file content", n >> 20),
            "--snapshot-max-bytes",
        ),
        // Per-file, stream and ratio limits guard restores of hostile
        // archives; a workspace being packed never reaches them.
        Limit::FileBytes(_) | Limit::Stream(_) | Limit::Ratio(_) | Limit::Disk(_) => return None,
    };
    let name = kind.as_str();
    Some(SnapshotLimitHit {
        limit: kind,
        value,
        message: format!(
            "the workspace holds {what}: over the snapshot limit {name} = {value} (reached at \
             {path:?}). Raise it with `paddock run {flag} N`, `{name}` in the server config's \
             [snapshot] section, or `snapshot_limits.{name}` in the run request; or move bulky \
             generated files out of the workspace (node_modules, target, .venv and tool caches \
             are left out already)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuntimeError;

    #[test]
    fn files_and_bytes_limits_are_named_with_their_value_and_the_ways_to_raise_them() {
        let over = |limit| RuntimeError::SnapshotPack {
            path: "/ws".into(),
            source: SnapshotError::OverLimit {
                limit,
                path: "data/x.bin".into(),
            },
        };
        let files = limit_hit(&over(Limit::Files(10_000))).unwrap();
        assert_eq!(
            (files.limit, files.value),
            (SnapshotLimitKind::MaxFiles, 10_000)
        );
        assert!(
            files.message.starts_with(
                "the workspace holds more than 10000 entries (files, directories and links): \
                 over the snapshot limit max_files = 10000 (reached at \"data/x.bin\")"
            ),
            "{}",
            files.message
        );
        for way in [
            "`paddock run --snapshot-max-files N`",
            "`max_files` in the server config's [snapshot] section",
            "`snapshot_limits.max_files` in the run request",
        ] {
            assert!(files.message.contains(way), "{way}: {}", files.message);
        }
        let bytes = limit_hit(&over(Limit::Bytes(100 << 20))).unwrap();
        assert_eq!(
            (bytes.limit, bytes.value),
            (SnapshotLimitKind::MaxBytes, 100 << 20)
        );
        assert!(bytes.message.contains("(100 MiB)"), "{}", bytes.message);
        assert!(bytes.message.contains("--snapshot-max-bytes N"));
        assert!(limit_hit(&over(Limit::Ratio(50))).is_none());
        let other = SnapshotError::Changed { path: "a".into() };
        assert!(limit_hit(&other).is_none());
    }
}
