//! Time as the store sees it: milliseconds since the Unix epoch, from a [`Clock`]
//! that tests can drive by hand (lease expiry is tested without sleeping).

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A point in time, in milliseconds since the Unix epoch (UTC). Stored as a
/// 64-bit integer in both databases, so ordering and arithmetic are exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// `self + d`, saturating at the far future instead of overflowing.
    pub fn saturating_add(self, d: Duration) -> Self {
        let millis = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(millis))
    }
}

/// RFC 3339 in UTC with milliseconds, e.g. `2023-11-14T22:13:20.000Z`.
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.0.div_euclid(86_400_000);
        let ms_of_day = self.0.rem_euclid(86_400_000);
        let (year, month, day) = civil_from_days(days);
        let (secs, millis) = (ms_of_day / 1000, ms_of_day % 1000);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

impl Timestamp {
    /// Reads back what [`fmt::Display`] writes (`2023-11-14T22:13:20.123Z`);
    /// None for anything else.
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let b = text.as_bytes();
        if b.len() != 24 || b[23] != b'Z' {
            return None;
        }
        for (i, sep) in [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (19, b'.'),
        ] {
            if b[i] != sep {
                return None;
            }
        }
        let num = |from: usize, to: usize| -> Option<i64> {
            let part = text.get(from..to)?;
            part.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| part.parse().ok())?
        };
        let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
        let (hour, minute, second, millis) =
            (num(11, 13)?, num(14, 16)?, num(17, 19)?, num(20, 23)?);
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return None;
        }
        let days = days_from_civil(year, month, day);
        Some(Self(
            days * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000 + millis,
        ))
    }
}

/// (year, month, day) to days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Where the store reads the current time.
///
/// Several orchestrator nodes sharing one Postgres each use their own clock, so lease
/// expiry assumes clocks in sync to well under a lease's TTL. Safety does not depend
/// on it: fencing tokens refuse a stale holder's writes whatever the clocks say.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> Timestamp;
}

/// The machine's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Timestamp(millis)
    }
}

/// A clock that only moves when told to; shared by clones of one `Arc`.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self(AtomicI64::new(start.0))
    }

    pub fn advance(&self, d: Duration) {
        let millis = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(millis, Ordering::SeqCst);
    }

    pub fn set(&self, t: Timestamp) {
        self.0.store(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        assert_eq!(clock.now(), Timestamp::from_millis(1_000));
        clock.advance(Duration::from_secs(2));
        assert_eq!(clock.now(), Timestamp::from_millis(3_000));
        clock.set(Timestamp::from_millis(5));
        assert_eq!(clock.now().as_millis(), 5);
    }

    #[test]
    fn adding_a_huge_duration_saturates() {
        let t = Timestamp::from_millis(10).saturating_add(Duration::MAX);
        assert_eq!(t, Timestamp::from_millis(i64::MAX));
    }

    #[test]
    fn timestamps_display_as_rfc3339_utc() {
        let shown = |ms| Timestamp::from_millis(ms).to_string();
        assert_eq!(shown(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(shown(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(shown(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(shown(-1), "1969-12-31T23:59:59.999Z");
        for ms in [0, 1_700_000_000_123, 951_782_400_000, -1, 4_102_444_800_999] {
            assert_eq!(
                Timestamp::parse_rfc3339(&shown(ms)),
                Some(Timestamp::from_millis(ms))
            );
        }
        for bad in [
            "",
            "2023-11-14 22:13:20.123Z",
            "2023-13-14T22:13:20.123Z",
            "2023-11-14T22:13:20.12xZ",
        ] {
            assert_eq!(Timestamp::parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now() > Timestamp::from_millis(1_577_836_800_000));
    }
}
