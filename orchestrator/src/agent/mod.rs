//! `paddock run` and `paddock session`: the agent runtime on this machine's
//! embedded defaults (SQLite in the data dir, native sandboxes), or the
//! sessions of a server.

mod checkpoints;
mod doctor;
mod exit;
mod live;
mod local;
mod memory;
mod no_undo;
pub(crate) mod owner;
mod remote;
mod remote_run;
mod render;
mod run;
mod runs;
mod session;
mod typed;

pub use doctor::doctor;
pub use exit::EXIT_USAGE;
pub use memory::memory;
pub use run::run;
pub use runs::runs;
pub use session::session;

/// A positive amount of dollars (`0.50`), as micro-dollars.
pub fn parse_usd_micro(s: &str) -> Result<u64, String> {
    match paddock_core::model::usd_to_micro(s) {
        Some(micro) if micro > 0 => Ok(micro),
        _ => Err(format!(
            "{s:?}: expected an amount of dollars above 0, such as 0.50"
        )),
    }
}

/// The price table of `--price` / `prices = [...]`: `MODEL=INPUT:OUTPUT`
/// entries in dollars per million tokens.
pub fn parse_prices(entries: &[String]) -> Result<paddock_core::model::Prices, String> {
    let mut prices = paddock_core::model::Prices::default();
    for entry in entries {
        let (model, price) =
            paddock_core::model::Prices::parse_entry(entry).map_err(|e| e.to_string())?;
        prices.insert(model, price);
    }
    Ok(prices)
}

/// A positive duration: seconds (fractions allowed), or a number with a unit
/// (ms, s, m, h), as milliseconds.
pub fn parse_duration_ms(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ms" => 1.0,
        "" | "s" => 1_000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return Err(format!("{s:?}: unknown unit (use ms, s, m or h)")),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?}: expected a duration such as 90s, 10m or 1h"))?;
    let millis = value * scale;
    if !(millis.is_finite() && millis > 0.0 && millis < 1e15) {
        return Err(format!("{s:?}: must be more than 0"));
    }
    Ok((millis.ceil() as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_with_and_without_units() {
        assert_eq!(parse_duration_ms("90"), Ok(90_000));
        assert_eq!(parse_duration_ms("1.5s"), Ok(1_500));
        assert_eq!(parse_duration_ms("10m"), Ok(600_000));
        assert_eq!(parse_duration_ms("2h"), Ok(7_200_000));
        assert_eq!(parse_duration_ms("250ms"), Ok(250));
        assert!(parse_duration_ms("0").is_err());
        assert!(parse_duration_ms("5d").is_err());
        assert!(parse_duration_ms("m").is_err());
    }
}
