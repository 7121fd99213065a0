//! `[[backends]]`, `backend`, `image` and `--warm-pool`: the backends a
//! sandbox request may pick.

use anyhow::bail;
use paddock_sandbox::DEFAULT_IMAGE;
use serde::Deserialize;

use super::ServeConfig;
use crate::backend::BackendKind;

/// `[[backends]]`: one backend and image requests may name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSection {
    pub kind: BackendKind,
    /// docker and gvisor only (default paddock-sandbox:bookworm).
    pub image: Option<String>,
    /// Sandboxes of the default request kept started (default 0).
    #[serde(default)]
    pub warm_pool: usize,
    /// The network of the pool's sandboxes (`none`, `full`, `allow:...`;
    /// default none): only a request for the default profile on this
    /// network is served from the pool. `full` serves E2B's default create.
    #[serde(default)]
    pub warm_pool_network: Option<String>,
}

/// The most sandboxes one warm pool may keep started.
pub const MAX_WARM_POOL: usize = 64;

impl ServeConfig {
    /// The backends to enable: `[[backends]]`, or the one of
    /// `backend`/`image` (else `cli_backend`/`cli_image`), images filled in,
    /// each pool sized by `warm` (`--warm-pool`) over the file.
    pub fn backend_sections(
        &self,
        cli_backend: BackendKind,
        cli_image: Option<&str>,
        warm: &[WarmPoolArg],
    ) -> anyhow::Result<Vec<BackendSection>> {
        let mut sections = if self.backends.is_empty() {
            let kind = self.backend.unwrap_or(cli_backend);
            let image = self.image.as_deref().or(cli_image);
            vec![BackendSection {
                kind,
                image: (kind != BackendKind::Native)
                    .then(|| image.map(str::to_owned))
                    .flatten(),
                warm_pool: 0,
                warm_pool_network: None,
            }]
        } else {
            if self.image.is_some() {
                bail!("image: with [[backends]], name the image in each entry");
            }
            self.backends.clone()
        };
        for section in &mut sections {
            match section.kind {
                BackendKind::Native if section.image.is_some() => {
                    bail!("backends: the native backend takes no image")
                }
                BackendKind::Native => {}
                // its image is a directory (kernel and initramfs); none: the default one
                BackendKind::Microvm => {}
                BackendKind::Docker | BackendKind::Gvisor => {
                    section
                        .image
                        .get_or_insert_with(|| DEFAULT_IMAGE.to_owned());
                }
            }
        }
        if let Some(kind) = self.backend
            && !sections.iter().any(|s| s.kind == kind)
        {
            bail!("backend {}: not among [[backends]]", kind.name());
        }
        for arg in warm {
            let Some(section) = sections.iter_mut().find(|s| {
                s.kind == arg.kind
                    && arg
                        .image
                        .as_ref()
                        .is_none_or(|i| s.image.as_ref() == Some(i))
            }) else {
                bail!("--warm-pool {}: that backend is not enabled", arg.label());
            };
            section.warm_pool = arg.size;
        }
        for section in &sections {
            if section.warm_pool > MAX_WARM_POOL {
                bail!(
                    "warm_pool {} of {}: at most {MAX_WARM_POOL}",
                    section.warm_pool,
                    section.kind.name()
                );
            }
        }
        Ok(sections)
    }
}

/// `--warm-pool BACKEND[:IMAGE]=N`: the pool size of one enabled backend
/// (IMAGE left out: its first image).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmPoolArg {
    pub kind: BackendKind,
    pub image: Option<String>,
    pub size: usize,
}

impl WarmPoolArg {
    fn label(&self) -> String {
        match &self.image {
            Some(image) => format!("{}:{image}", self.kind.name()),
            None => self.kind.name().to_owned(),
        }
    }
}

impl std::str::FromStr for WarmPoolArg {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (target, size) = text
            .rsplit_once('=')
            .ok_or("expected BACKEND[:IMAGE]=N, e.g. docker=2")?;
        let size = size
            .parse::<usize>()
            .map_err(|e| format!("pool size {size:?}: {e}"))?;
        let (kind, image) = match target.split_once(':') {
            Some((kind, image)) if !image.is_empty() => (kind, Some(image.to_owned())),
            Some(_) => return Err("an empty image after ':'".to_owned()),
            None => (target, None),
        };
        let kind = <BackendKind as clap::ValueEnum>::from_str(kind, false)
            .map_err(|_| format!("unknown backend {kind:?} (native, docker, gvisor)"))?;
        Ok(Self { kind, image, size })
    }
}
