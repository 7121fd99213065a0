//! Rows that failed validation when they were read back: moved out of their
//! table so that the rest of a session can still be used, kept for a person
//! to look at (`paddock doctor`).

use serde::{Deserialize, Serialize};

use super::Timestamp;

/// One quarantined row: where it came from, why it was taken out, and what it
/// held, column by column, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantinedRow {
    /// The tenant column of the row as stored (None when it had none or it
    /// could not be read).
    pub tenant: Option<String>,
    /// The table the row was moved out of.
    pub table: String,
    /// The row's key, e.g. `session_id=ses_... seq=4`.
    pub key: String,
    /// Why it failed validation.
    pub reason: String,
    /// The row's columns as a JSON object (text and numbers as stored).
    pub raw: String,
    pub quarantined_at: Timestamp,
}
