//! `write_file`: creates or replaces a whole file (atomically, in the guest).

use paddock_proto::FsPath;
use std::time::Duration;

use async_trait::async_trait;
use paddock_core::sandbox::WriteOptions;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{contract_for, invalid, parse_args};
use super::output::{guest, refusal_as_result};
use super::paths;
use super::{
    Access, Effect, PathArgument, Replay, Role, Tool, ToolContext, ToolContract, ToolError,
    ToolOutput,
};

pub(crate) const NAME: &str = "write_file";

/// Largest content written in one call; one protocol frame carries the file.
const MAX_WRITE_BYTES: usize = 8 << 20;

/// Create or replace a file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// File to write, relative to /workspace. Missing parent directories are created.
    path: String,
    /// The whole new content of the file.
    content: String,
}

#[derive(Debug)]
pub struct WriteFile {
    contract: ToolContract,
}

impl WriteFile {
    pub fn new() -> Self {
        Self {
            contract: contract_for::<Args>(
                NAME,
                "Create a file or replace its whole content. Parent directories are created. \
                 To change part of an existing file, use edit_file instead.",
                Role::Workspace,
                Access::Mutating,
                // Writing the same content again leaves the same file.
                Replay::Safe,
                Duration::from_secs(30),
            )
            .with_path_argument(PathArgument::Writes("path")),
        }
    }
}

impl Default for WriteFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn contract(&self) -> &ToolContract {
        &self.contract
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        refusal_as_result(self.run(ctx, arguments).await)
    }
}

impl WriteFile {
    async fn run(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let args: Args = parse_args(NAME, arguments)?;
        let path = paths::normalize(&args.path).map_err(|e| invalid(NAME, e.to_string()))?;
        if path.is_empty() {
            return Err(invalid(NAME, "path names the workspace root, not a file"));
        }
        if args.content.len() > MAX_WRITE_BYTES {
            return Err(invalid(
                NAME,
                format!(
                    "content is {} bytes; write_file takes at most {} MiB per file",
                    args.content.len(),
                    MAX_WRITE_BYTES >> 20
                ),
            ));
        }
        let options = WriteOptions {
            mode: None,
            create_parents: true,
        };
        let bytes = ctx
            .guest
            .file_write(&FsPath::from(&path), args.content.as_bytes(), options)
            .await
            .map_err(guest(NAME))?;
        tracing::debug!(run_id = %ctx.run, session_id = %ctx.session, tool = NAME, path, bytes, "file written");
        Ok(ToolOutput {
            content: format!("wrote {bytes} bytes to {path}"),
            is_error: false,
            data: json!({ "path": path, "bytes": bytes }),
            effects: vec![Effect::FilesChanged { paths: vec![path] }],
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::offline_context;

    #[tokio::test]
    async fn paths_that_cannot_name_a_workspace_file_are_refused_before_the_guest() {
        let tool = WriteFile::new();
        for (path, says) in [
            ("../up.txt", "leaves the workspace"),
            ("/etc/passwd", "absolute"),
            (".", "workspace root"),
        ] {
            let err = tool
                .call(&offline_context(), json!({"path": path, "content": ""}))
                .await
                .unwrap_err();
            assert!(err.to_string().contains(says), "{path}: {err}");
        }
    }

    #[tokio::test]
    async fn content_too_big_for_one_write_is_refused() {
        let content = "x".repeat(MAX_WRITE_BYTES + 1);
        let err = WriteFile::new()
            .call(&offline_context(), json!({"path": "a", "content": content}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("at most 8 MiB"), "{err}");
    }

    #[test]
    fn the_schema_requires_path_and_content_and_nothing_else() {
        let tool = WriteFile::new();
        let schema = &tool.contract().parameters;
        assert_eq!(schema["required"], json!(["path", "content"]));
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(tool.contract().access, Access::Mutating);
    }
}
