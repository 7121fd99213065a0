//! The sandbox backends a server offers: each one the operator enabled, with
//! its image for the container tier, and which one a request that names none
//! gets. A request picks by backend name and image; anything else the
//! operator did not enable is a 400 that lists what is offered.

use std::sync::Arc;

use paddock_core::sandbox::{SandboxBackend, SandboxId};

use super::ServiceError;

/// Backend names any paddock build knows (whether this server enabled them
/// or not), so a refusal can tell "not enabled here" from "no such thing".
pub const KNOWN_BACKENDS: [&str; 4] = ["native", "docker", "gvisor", "microvm"];

/// A request named a backend or image the server does not offer; the
/// reason lists what it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {field}: {reason}")]
pub struct BackendRefused {
    /// `backend` or `image`: the request field at fault.
    pub field: &'static str,
    pub reason: String,
}

impl BackendRefused {
    fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}

impl From<BackendRefused> for ServiceError {
    fn from(refused: BackendRefused) -> Self {
        ServiceError::invalid(refused.field, refused.reason)
    }
}

/// One backend (and image) the operator enabled.
#[derive(Debug, Clone)]
pub struct BackendEntry {
    /// `native`, `docker` or `gvisor`: the backend's own name.
    pub name: String,
    /// The container image (None for native).
    pub image: Option<String>,
    /// The backend, a warm pool in front of it or not.
    pub backend: Arc<dyn SandboxBackend>,
}

impl BackendEntry {
    pub fn new(backend: Arc<dyn SandboxBackend>, image: Option<String>) -> Self {
        Self {
            name: backend.name().to_owned(),
            image,
            backend,
        }
    }

    /// `docker:IMAGE`, or the bare name when there is no image.
    pub fn label(&self) -> String {
        match &self.image {
            Some(image) => format!("{}:{image}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Why a set of backends cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum BackendsError {
    #[error("no sandbox backend is enabled")]
    Empty,
    #[error("backend {label} is enabled twice")]
    Duplicate { label: String },
    #[error("the default backend {name} is not among the enabled ones ({offered})")]
    DefaultNotEnabled { name: String, offered: String },
}

/// The enabled backends; the first entry of the default backend's name is
/// what a request naming nothing gets, the first entry of each name is that
/// backend's default image.
#[derive(Debug, Clone)]
pub struct Backends {
    entries: Vec<BackendEntry>,
    default: usize,
}

impl Backends {
    /// `default`: the backend name a request naming none gets (None: the
    /// first entry's).
    pub fn new(entries: Vec<BackendEntry>, default: Option<&str>) -> Result<Self, BackendsError> {
        if entries.is_empty() {
            return Err(BackendsError::Empty);
        }
        for (i, entry) in entries.iter().enumerate() {
            if entries[..i]
                .iter()
                .any(|e| e.name == entry.name && e.image == entry.image)
            {
                return Err(BackendsError::Duplicate {
                    label: entry.label(),
                });
            }
        }
        let default = match default {
            None => 0,
            Some(name) => entries.iter().position(|e| e.name == name).ok_or_else(|| {
                BackendsError::DefaultNotEnabled {
                    name: name.to_owned(),
                    offered: offered(&entries),
                }
            })?,
        };
        Ok(Self { entries, default })
    }

    /// One backend, which every request gets.
    pub fn single(backend: Arc<dyn SandboxBackend>) -> Self {
        Self {
            entries: vec![BackendEntry::new(backend, None)],
            default: 0,
        }
    }

    pub fn entries(&self) -> &[BackendEntry] {
        &self.entries
    }

    /// What a request naming no backend and no image gets.
    pub fn default_entry(&self) -> &BackendEntry {
        &self.entries[self.default]
    }

    /// The entry a request names: `backend` None is the default backend,
    /// `image` None that backend's first image.
    pub fn choose(
        &self,
        backend: Option<&str>,
        image: Option<&str>,
    ) -> Result<&BackendEntry, BackendRefused> {
        let name = backend.unwrap_or(&self.default_entry().name);
        let mut of_name = self.entries.iter().filter(|e| e.name == name).peekable();
        if of_name.peek().is_none() {
            let reason = if KNOWN_BACKENDS.contains(&name) {
                format!(
                    "{name} is not enabled on this server (enabled: {})",
                    offered(&self.entries)
                )
            } else {
                format!(
                    "unknown backend {name:?} (enabled: {})",
                    offered(&self.entries)
                )
            };
            return Err(BackendRefused::new("backend", reason));
        }
        let Some(image) = image else {
            return of_name
                .next()
                .ok_or_else(|| BackendRefused::new("backend", "no entry"));
        };
        let images: Vec<&BackendEntry> = of_name.collect();
        if images.iter().all(|e| e.image.is_none()) {
            return Err(BackendRefused::new(
                "image",
                format!("the {name} backend takes no image"),
            ));
        }
        images
            .into_iter()
            .find(|e| e.image.as_deref() == Some(image))
            .ok_or_else(|| {
                BackendRefused::new(
                    "image",
                    format!(
                        "image {image:?} is not enabled for {name} on this server (enabled: {})",
                        offered(&self.entries)
                    ),
                )
            })
    }

    /// Every sandbox an entry holds for itself (warm pools' ready ones).
    pub fn kept(&self) -> Vec<SandboxId> {
        self.entries.iter().flat_map(|e| e.backend.kept()).collect()
    }

    /// One entry per backend name: reaping by name covers all its images.
    pub fn one_per_name(&self) -> impl Iterator<Item = &BackendEntry> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, e)| !self.entries[..*i].iter().any(|o| o.name == e.name))
            .map(|(_, e)| e)
    }
}

impl From<Arc<dyn SandboxBackend>> for Backends {
    fn from(backend: Arc<dyn SandboxBackend>) -> Self {
        Self::single(backend)
    }
}

fn offered(entries: &[BackendEntry]) -> String {
    entries
        .iter()
        .map(BackendEntry::label)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use paddock_core::sandbox::{Sandbox, SandboxError, SandboxSpec};

    use super::*;

    #[derive(Debug)]
    struct Named(&'static str);

    #[async_trait]
    impl SandboxBackend for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        async fn create(&self, _spec: SandboxSpec) -> Result<Box<dyn Sandbox>, SandboxError> {
            Err(SandboxError::Unavailable {
                backend: self.0,
                reason: "a test double".to_owned(),
            })
        }
    }

    fn entry(name: &'static str, image: Option<&str>) -> BackendEntry {
        BackendEntry::new(Arc::new(Named(name)), image.map(str::to_owned))
    }

    fn set() -> Backends {
        Backends::new(
            vec![
                entry("native", None),
                entry("docker", Some("a:1")),
                entry("docker", Some("b:2")),
            ],
            Some("docker"),
        )
        .unwrap()
    }

    fn refusal(result: Result<&BackendEntry, BackendRefused>) -> (String, String) {
        match result {
            Err(BackendRefused { field, reason }) => (field.to_owned(), reason),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_request_gets_the_default_or_what_it_names() {
        let set = set();
        assert_eq!(set.choose(None, None).unwrap().label(), "docker:a:1");
        assert_eq!(
            set.choose(Some("docker"), Some("b:2")).unwrap().label(),
            "docker:b:2"
        );
        assert_eq!(set.choose(Some("native"), None).unwrap().label(), "native");
        assert_eq!(set.choose(None, Some("b:2")).unwrap().label(), "docker:b:2");
    }

    #[test]
    fn what_is_not_enabled_is_refused_with_what_is() {
        let set = set();
        let (field, reason) = refusal(set.choose(Some("gvisor"), None));
        assert_eq!(field, "backend");
        assert_eq!(
            reason,
            "gvisor is not enabled on this server (enabled: native, docker:a:1, docker:b:2)"
        );
        let (_, reason) = refusal(set.choose(Some("kvm"), None));
        assert!(reason.starts_with("unknown backend \"kvm\""), "{reason}");
        let (field, reason) = refusal(set.choose(Some("docker"), Some("evil:latest")));
        assert_eq!(field, "image");
        assert!(
            reason.contains("\"evil:latest\" is not enabled"),
            "{reason}"
        );
        let (field, reason) = refusal(set.choose(Some("native"), Some("a:1")));
        assert_eq!(
            (field.as_str(), reason.as_str()),
            ("image", "the native backend takes no image")
        );
    }

    #[test]
    fn a_bad_set_is_refused() {
        assert!(matches!(
            Backends::new(Vec::new(), None),
            Err(BackendsError::Empty)
        ));
        assert!(matches!(
            Backends::new(
                vec![entry("docker", Some("a")), entry("docker", Some("a"))],
                None
            ),
            Err(BackendsError::Duplicate { .. })
        ));
        assert!(matches!(
            Backends::new(vec![entry("native", None)], Some("docker")),
            Err(BackendsError::DefaultNotEnabled { .. })
        ));
        let set = set();
        let names: Vec<String> = set.one_per_name().map(BackendEntry::label).collect();
        assert_eq!(names, ["native", "docker:a:1"]);
        assert_eq!(
            Backends::new(vec![entry("native", None)], None)
                .unwrap()
                .default_entry()
                .name,
            "native"
        );
    }
}
