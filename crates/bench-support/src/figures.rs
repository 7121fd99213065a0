//! Timing and the figures printed from it.

use std::time::{Duration, Instant};

/// How long `f` took.
pub fn timed(f: impl FnOnce() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed())
}

/// The median (the upper one of an even count); zero for no samples.
pub fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// The `p` quantile (0.0..=1.0, nearest rank) of sorted samples; zero for none.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let Some(last) = sorted.len().checked_sub(1) else {
        return Duration::ZERO;
    };
    let index = (last as f64 * p.clamp(0.0, 1.0)).round() as usize;
    sorted[index.min(last)]
}

/// Megabytes (10^6) per second.
pub fn rate(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

/// "debug" or "release": the profile this bench was built with. A debug
/// build measures unoptimised relays and servers, not what `paddock serve`
/// ships, so every bench names it in its heading.
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Bytes in MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn median_is_the_middle_sample_whatever_the_order() {
        assert_eq!(median(&ms(&[5, 1, 3])), Duration::from_millis(3));
        assert_eq!(median(&ms(&[4, 1, 3, 2])), Duration::from_millis(3));
        assert_eq!(median(&[]), Duration::ZERO);
    }

    #[test]
    fn percentile_takes_the_nearest_rank() {
        let sorted = ms(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(percentile(&sorted, 0.0), Duration::from_millis(1));
        assert_eq!(percentile(&sorted, 0.9), Duration::from_millis(9));
        assert_eq!(percentile(&sorted, 1.0), Duration::from_millis(10));
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn rate_and_mib_convert_units() {
        assert_eq!(rate(2_000_000, Duration::from_secs(2)), 1.0);
        assert_eq!(mib(3 << 20), 3.0);
    }
}
