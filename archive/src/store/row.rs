//! A row of either backend read column by column ([`Columns`]), so that
//! each stored type has one decoder for both: [`StoredRun::from_row`],
//! [`MetricValue::from_row`], [`SeriesRun::from_row`],
//! [`BisectSession::from_row`] and the rows `archive check` reads. Each
//! backend's SQL names the columns in the order the decoder reads them
//! (the column lists beside each type), so that only the SQL differs.
//!
//! Every column is read with the type checked by the driver: a column of
//! another type, which only a file or database changed behind
//! netbisect's back can hold, is an error, never a panic.
//!
//! [`StoredRun::from_row`]: super::StoredRun::from_row
//! [`MetricValue::from_row`]: super::MetricValue::from_row
//! [`SeriesRun::from_row`]: super::SeriesRun::from_row
//! [`BisectSession::from_row`]: super::session::BisectSession::from_row

use crate::ArchiveError;

/// A value both drivers read from a column: text, integers, floats,
/// booleans and bytes, or NULL as `None` of them.
pub(crate) trait Column:
    rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a>
{
}

impl<T: rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a>> Column for T {}

/// One row of a selection, read by position.
pub(crate) trait Columns {
    /// Column `idx` as a `T`.
    fn read<T: Column>(&self, idx: usize) -> Result<T, ArchiveError>;

    /// Column `idx` as bytes, borrowed from the row (a record is read
    /// without a copy).
    fn read_bytes(&self, idx: usize) -> Result<&[u8], ArchiveError>;

    /// Column `idx` as text or NULL, borrowed from the row (a history
    /// reads one metric of each run's stored series, and copies none).
    fn read_text_or_null(&self, idx: usize) -> Result<Option<&str>, ArchiveError>;
}

impl Columns for rusqlite::Row<'_> {
    fn read<T: Column>(&self, idx: usize) -> Result<T, ArchiveError> {
        Ok(rusqlite::Row::get(self, idx)?)
    }

    fn read_bytes(&self, idx: usize) -> Result<&[u8], ArchiveError> {
        let value = self.get_ref(idx)?;
        // The error `get` gives for a column of another type.
        value.as_blob().map_err(|_| {
            let name = self
                .as_ref()
                .column_name(idx)
                .map_or_else(|_| idx.to_string(), str::to_string);
            ArchiveError::Sqlite(rusqlite::Error::InvalidColumnType(
                idx,
                name,
                value.data_type(),
            ))
        })
    }

    fn read_text_or_null(&self, idx: usize) -> Result<Option<&str>, ArchiveError> {
        let value = self.get_ref(idx)?;
        Ok(value.as_str_or_null().map_err(|err| {
            rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, err.into())
        })?)
    }
}

impl Columns for postgres::Row {
    fn read<T: Column>(&self, idx: usize) -> Result<T, ArchiveError> {
        Ok(self.try_get(idx)?)
    }

    fn read_bytes(&self, idx: usize) -> Result<&[u8], ArchiveError> {
        Ok(self.try_get(idx)?)
    }

    fn read_text_or_null(&self, idx: usize) -> Result<Option<&str>, ArchiveError> {
        Ok(self.try_get(idx)?)
    }
}
