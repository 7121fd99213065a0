//! Reading stored rows back into domain types; a value that does not decode is
//! reported as [`StoreError::Corrupt`] naming the row.

use std::fmt::Display;

use paddock_core::store::{StoreError, Timestamp};
use sqlx::Row;
use sqlx::any::AnyRow;

pub(crate) struct Reader<'r> {
    row: &'r AnyRow,
    entity: &'static str,
    id: String,
}

impl<'r> Reader<'r> {
    /// `key` is the column that names the row in errors.
    pub(crate) fn new(row: &'r AnyRow, entity: &'static str, key: &str) -> Self {
        let id = row.try_get::<String, _>(key).unwrap_or_default();
        Self { row, entity, id }
    }

    fn corrupt(&self, column: &str, reason: impl Display) -> StoreError {
        StoreError::Corrupt {
            entity: self.entity,
            id: self.id.clone(),
            reason: format!("column {column}: {reason}"),
        }
    }

    pub(crate) fn text(&self, column: &str) -> Result<String, StoreError> {
        self.row
            .try_get(column)
            .map_err(|e| self.corrupt(column, e))
    }

    pub(crate) fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        self.row
            .try_get(column)
            .map_err(|e| self.corrupt(column, e))
    }

    pub(crate) fn int(&self, column: &str) -> Result<i64, StoreError> {
        self.row
            .try_get(column)
            .map_err(|e| self.corrupt(column, e))
    }

    pub(crate) fn opt_int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        self.row
            .try_get(column)
            .map_err(|e| self.corrupt(column, e))
    }

    pub(crate) fn count(&self, column: &str) -> Result<u64, StoreError> {
        let value = self.int(column)?;
        u64::try_from(value).map_err(|_| self.corrupt(column, format!("negative {value}")))
    }

    pub(crate) fn opt_count(&self, column: &str) -> Result<Option<u64>, StoreError> {
        self.opt_int(column)?
            .map(|value| {
                u64::try_from(value).map_err(|_| self.corrupt(column, format!("negative {value}")))
            })
            .transpose()
    }

    pub(crate) fn time(&self, column: &str) -> Result<Timestamp, StoreError> {
        self.int(column).map(Timestamp::from_millis)
    }

    pub(crate) fn opt_time(&self, column: &str) -> Result<Option<Timestamp>, StoreError> {
        Ok(self.opt_int(column)?.map(Timestamp::from_millis))
    }

    /// A text column parsed with `parse` (ids, enums).
    pub(crate) fn parsed<T, E: Display>(
        &self,
        column: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, StoreError> {
        let text = self.text(column)?;
        parse(&text).map_err(|e| self.corrupt(column, e))
    }

    /// A JSON text column.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(
        &self,
        column: &str,
    ) -> Result<T, StoreError> {
        self.parsed(column, |s| serde_json::from_str::<T>(s))
    }

    pub(crate) fn opt_json<T: serde::de::DeserializeOwned>(
        &self,
        column: &str,
    ) -> Result<Option<T>, StoreError> {
        self.opt_parsed(column, |s| serde_json::from_str::<T>(s))
    }

    pub(crate) fn opt_parsed<T, E: Display>(
        &self,
        column: &str,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<Option<T>, StoreError> {
        match self.opt_text(column)? {
            Some(text) => parse(&text).map(Some).map_err(|e| self.corrupt(column, e)),
            None => Ok(None),
        }
    }
}

/// `parse` for the `text_enum` types, which return an Option.
pub(crate) fn known<T>(parse: fn(&str) -> Option<T>) -> impl FnOnce(&str) -> Result<T, String> {
    move |s| parse(s).ok_or_else(|| format!("unknown value {s:?}"))
}
