//! Subagent models chosen by key, as a front end's request names them
//! (`paddock run --subagent-model KEY=SPEC`, the API's `subagent_models`).

use std::collections::BTreeMap;
use std::sync::Arc;

use paddock_core::model::ModelProvider;
use paddock_core::store::SubagentProfile;

use crate::run::SubagentModels;

/// Models keyed by task id or profile name (`explore`, `plan`, `review`,
/// `build`): the child working on task `T` with profile `P` gets the entry
/// for `T`, else the one for `P`, else the parent's model. Each child gets
/// its own copy of a model that keeps state per conversation (a script
/// starts from its first turn for every child), so children never share a
/// script's turns; a stateless provider is shared.
#[derive(Debug, Default, Clone)]
pub struct ModelsByKey {
    entries: BTreeMap<String, Arc<dyn ModelProvider>>,
}

impl ModelsByKey {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the model for `key`; a second entry for the same key replaces it.
    pub fn insert(&mut self, key: impl Into<String>, provider: Arc<dyn ModelProvider>) {
        self.entries.insert(key.into(), provider);
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

impl SubagentModels for ModelsByKey {
    fn model(&self, profile: SubagentProfile, task_id: &str) -> Option<Arc<dyn ModelProvider>> {
        let model = self
            .entries
            .get(task_id)
            .or_else(|| self.entries.get(profile.as_str()))?;
        Some(model.fresh_copy().unwrap_or_else(|| Arc::clone(model)))
    }
}

#[cfg(test)]
mod tests {
    use paddock_core::model::{ModelRequest, ModelStream};
    use tokio_util::sync::CancellationToken;

    use super::*;

    /// A model that says its name; `fresh` ones copy themselves.
    #[derive(Debug)]
    struct Named {
        name: String,
        fresh: bool,
    }

    impl ModelProvider for Named {
        fn name(&self) -> &str {
            &self.name
        }
        fn context_window(&self) -> u32 {
            1000
        }
        fn stream(&self, _: &ModelRequest, _: CancellationToken) -> ModelStream {
            Box::pin(futures_util::stream::empty())
        }
        fn fresh_copy(&self) -> Option<Arc<dyn ModelProvider>> {
            self.fresh.then(|| {
                Arc::new(Named {
                    name: format!("{} (copy)", self.name),
                    fresh: true,
                }) as Arc<dyn ModelProvider>
            })
        }
    }

    fn named(name: &str, fresh: bool) -> Arc<dyn ModelProvider> {
        Arc::new(Named {
            name: name.to_owned(),
            fresh,
        })
    }

    #[test]
    fn a_task_id_wins_over_the_profile_and_the_rest_is_the_parents() {
        let mut models = ModelsByKey::new();
        models.insert("explore", named("explorer", false));
        models.insert("api", named("api builder", false));
        let name = |profile, task: &str| models.model(profile, task).map(|m| m.name().to_owned());
        assert_eq!(
            name(SubagentProfile::Explore, "docs").as_deref(),
            Some("explorer")
        );
        assert_eq!(
            name(SubagentProfile::Build, "api").as_deref(),
            Some("api builder")
        );
        assert_eq!(
            name(SubagentProfile::Explore, "api").as_deref(),
            Some("api builder")
        );
        assert_eq!(name(SubagentProfile::Build, "ui"), None);
    }

    #[test]
    fn every_child_gets_its_own_copy_of_a_stateful_model() {
        let mut models = ModelsByKey::new();
        let shared = named("http", false);
        models.insert("review", Arc::clone(&shared));
        models.insert("explore", named("script", true));
        let a = models.model(SubagentProfile::Review, "a").unwrap();
        assert!(Arc::ptr_eq(&a, &shared));
        let b = models.model(SubagentProfile::Explore, "b").unwrap();
        let c = models.model(SubagentProfile::Explore, "c").unwrap();
        assert_eq!(b.name(), "script (copy)");
        assert!(!Arc::ptr_eq(&b, &c));
    }
}
