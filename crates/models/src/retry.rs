//! Bounded retries with exponential backoff and jitter.

use std::hash::{BuildHasher, RandomState};
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;

/// How often and how patiently a model request is retried after a network
/// error, a 429 or a 5xx. Retries only happen before the first event of the
/// answer was handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first one included; 1 disables retries.
    pub max_attempts: u32,
    /// Backoff before the first retry; doubles on each further one.
    pub base_delay: Duration,
    /// Cap on the backoff. A `Retry-After` longer than this fails the call
    /// at once instead of waiting.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// Backoff before retry number `retry` (1 for the first), with jitter:
    /// uniformly between half and all of `base_delay * 2^(retry-1)`, capped.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exponent = retry.saturating_sub(1).min(20);
        let full = self
            .base_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        full.mul_f64(0.5 + 0.5 * unit_random())
    }
}

/// A number in [0, 1) from std's per-process random hash keys; plenty for jitter.
fn unit_random() -> f64 {
    let bits = RandomState::new().hash_one(Instant::now()) >> 11;
    // 53 bits fit an f64 mantissa exactly
    bits as f64 / (1u64 << 53) as f64
}

/// The server's requested delay: `retry-after-ms` (sent by OpenAI), else
/// `Retry-After` in seconds. The HTTP-date form is not supported (the
/// providers send seconds); it falls back to the normal backoff.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|value| value.is_finite() && *value >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
        };
        for _ in 0..50 {
            let first = policy.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
            let second = policy.backoff(2);
            assert!(second >= Duration::from_millis(100) && second <= Duration::from_millis(200));
            let capped = policy.backoff(9);
            assert!(capped >= Duration::from_millis(175) && capped <= Duration::from_millis(350));
        }
    }

    #[test]
    fn retry_after_prefers_milliseconds_and_ignores_dates() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        headers.remove("retry-after-ms");
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None);
    }
}
