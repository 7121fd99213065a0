//! How `paddock session checkpoints|rewind|diff` print, locally and with
//! --server alike (both have the API's views).

use paddock_api::service::checkpoints::{ChangeView, NodeView};
use paddock_api::service::{CheckpointDiffView, CheckpointView, RewindView};

use crate::client::print_json;
use crate::printable::printable;

pub fn print_checkpoints(checkpoints: &[CheckpointView], json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(checkpoints)?);
    }
    if checkpoints.is_empty() {
        println!("no checkpoints");
        return Ok(());
    }
    println!(
        "{:<38} {:<10} {:>7} {:>12} {:>5} {:<24} RUN",
        "CHECKPOINT", "REASON", "FILES", "BYTES", "NEW", "CREATED"
    );
    for c in checkpoints {
        println!(
            "{:<38} {:<10} {:>7} {:>12} {:>5} {:<24} {}",
            c.id,
            c.reason.as_str(),
            c.file_count,
            c.bytes,
            c.new_blobs,
            c.created_at,
            c.run
        );
    }
    Ok(())
}

/// `flags`: what the printed undo command needs besides the checkpoint
/// (` --data-dir DIR`, ` --server URL`, or nothing).
pub fn print_rewind(rewind: &RewindView, json: bool, flags: &str) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(rewind)?);
    }
    println!(
        "rewound to {} as run {}: {} files written ({} bytes), {} paths removed",
        rewind.to, rewind.run.id, rewind.files_written, rewind.bytes_written, rewind.removed
    );
    if !rewind.changed.is_empty() {
        println!(
            "changed since the last checkpoint, and kept in checkpoint {}: {}",
            rewind.safety_checkpoint,
            printable(&rewind.changed.join(", "))
        );
    }
    println!(
        "the workspace as it was is checkpoint {}; to undo this rewind: {}{flags}",
        rewind.safety_checkpoint, rewind.undo
    );
    Ok(())
}

pub fn print_diff(diff: &CheckpointDiffView, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(diff)?);
    }
    let from = diff
        .from
        .as_ref()
        .map_or("an empty workspace".to_owned(), ToString::to_string);
    let to = diff
        .to
        .as_ref()
        .map_or("the workspace now".to_owned(), ToString::to_string);
    if diff.changes.is_empty() {
        println!("no changes from {from} to {to}");
        return Ok(());
    }
    println!("from {from} to {to}:");
    for change in &diff.changes {
        let mark = match change.change {
            ChangeView::Added => 'A',
            ChangeView::Removed => 'D',
            ChangeView::Changed => 'M',
        };
        let kind = match change.after.as_ref().or(change.before.as_ref()) {
            Some(NodeView::Dir) => "/",
            Some(NodeView::Symlink { .. }) => " (symlink)",
            _ => "",
        };
        println!("{mark} {}{kind}", printable(&change.path));
    }
    for change in &diff.changes {
        if let Some(patch) = &change.patch
            && !patch.is_empty()
        {
            println!();
            print!("{}", printable(patch));
        }
    }
    Ok(())
}
