-- Rows that failed validation when read back (a JSON column that no longer
-- decodes, an unknown enum text), moved here so that the session they belong
-- to can go on; `paddock doctor` lists them. No foreign keys: the row's own
-- values are what may be wrong.
CREATE TABLE quarantined_rows (
    table_name     TEXT NOT NULL,
    row_key        TEXT NOT NULL,
    tenant_id      TEXT,
    reason         TEXT NOT NULL,
    raw            TEXT NOT NULL,   -- JSON object of the row's columns
    quarantined_at BIGINT NOT NULL,
    PRIMARY KEY (table_name, row_key)
);

CREATE INDEX quarantined_rows_by_tenant ON quarantined_rows (tenant_id, quarantined_at);
