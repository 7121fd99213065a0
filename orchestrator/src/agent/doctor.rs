//! `paddock doctor`: what the store had to set aside. A row that failed
//! validation when read (a message or event whose JSON no longer decodes, a
//! memory record of an unknown kind) was moved to the quarantine and skipped;
//! this lists those rows as a table, from the local data dir (every tenant's)
//! or with --server from the server (the caller's own).

use paddock_api::service::QuarantineView;
use paddock_core::model::Prices;
use paddock_core::store::MAX_PAGE;
use reqwest::Method;
use serde_json::json;

use super::local::{Local, Sandboxes};
use crate::cli::DoctorCli;
use crate::client::{ApiClient, print_json};
use crate::printable::printable;
use paddock_api::http::QuarantineList;

/// Longest reason and raw content shown in the table (`--json` has them whole).
const REASON_CHARS: usize = 100;
const RAW_CHARS: usize = 160;

pub async fn doctor(cli: DoctorCli) -> anyhow::Result<u8> {
    let rows = if cli.server.server.is_some() {
        let api = ApiClient::from_args(&cli.server, "doctor")?;
        let list: QuarantineList = api
            .answer(api.request(Method::GET, "/v1/doctor/quarantine"))
            .await?;
        list.rows
    } else {
        let local = Local::open(&cli.data, Sandboxes::NotNeeded, Prices::default()).await?;
        let rows = local.runtime.quarantined(None, MAX_PAGE).await;
        local.close().await;
        rows?.iter().map(QuarantineView::from).collect()
    };
    if cli.json {
        print_json(&json!({ "quarantined": rows }))?;
    } else {
        print!("{}", table(&rows));
    }
    Ok(0)
}

fn clip(text: &str, most: usize) -> String {
    let one_line = text.replace(['\n', '\r', '\t'], " ");
    let clipped: String = one_line.chars().take(most).collect();
    if clipped.len() < one_line.len() {
        format!("{clipped}...")
    } else {
        clipped
    }
}

/// The rows as a table: one line per row (when, table, key, reason), its
/// stored content indented below.
fn table(rows: &[QuarantineView]) -> String {
    if rows.is_empty() {
        return "no quarantined rows: every stored row read so far was valid\n".to_owned();
    }
    let key_width = rows
        .iter()
        .map(|r| r.key.chars().count())
        .max()
        .unwrap_or(3);
    let table_width = rows.iter().map(|r| r.table.len()).max().unwrap_or(5);
    let mut out = format!(
        "{} quarantined row{} (failed validation when read; moved out of its table and skipped):\n",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    );
    out.push_str(&format!(
        "{:<24}  {:<table_width$}  {:<key_width$}  REASON\n",
        "QUARANTINED", "TABLE", "KEY"
    ));
    for row in rows {
        out.push_str(&format!(
            "{:<24}  {:<table_width$}  {:<key_width$}  {}\n",
            row.quarantined_at,
            printable(&row.table),
            printable(&row.key),
            printable(&clip(&row.reason, REASON_CHARS)),
        ));
        out.push_str(&format!(
            "{:<24}  stored: {}\n",
            "",
            printable(&clip(&row.raw.to_string(), RAW_CHARS))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(table: &str, key: &str, reason: &str) -> QuarantineView {
        QuarantineView {
            table: table.to_owned(),
            key: key.to_owned(),
            tenant: Some("local".to_owned()),
            reason: reason.to_owned(),
            raw: json!({"seq": 2, "content": "{\"trunc"}),
            quarantined_at: "2026-12-01T18:00:00.000Z".to_owned(),
        }
    }

    #[test]
    fn the_table_names_each_row_and_what_it_held() {
        assert!(table(&[]).starts_with("no quarantined rows"));
        let text = table(&[
            row("messages", "session_id=ses_1 seq=2", "column content: EOF"),
            row(
                "run_events",
                "session_id=ses_1 seq=10",
                "column payload:\nbad\x1b[2J",
            ),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert!(lines[0].starts_with("2 quarantined rows"));
        assert!(lines[1].starts_with("QUARANTINED") && lines[1].ends_with("REASON"));
        // the columns line up: the keys start where KEY does
        let key_at = lines[1].find("KEY").unwrap();
        assert_eq!(lines[2].find("session_id"), Some(key_at));
        assert_eq!(lines[4].find("session_id"), Some(key_at));
        assert!(lines[2].ends_with("column content: EOF"));
        assert!(lines[3].trim_start().starts_with("stored: {"));
        assert!(lines[3].contains(r#""seq":2"#));
        // a reason is one line, and control characters are escaped
        assert!(
            lines[4].ends_with("column payload: bad\\x1b[2J"),
            "{}",
            lines[4]
        );
        let long = clip(&"x".repeat(300), 10);
        assert_eq!(long, format!("{}...", "x".repeat(10)));
    }
}
