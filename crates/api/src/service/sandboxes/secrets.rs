//! Secrets a sandbox or run request names: the operator's (the server
//! config's `[secrets.NAME]`, each granted to some tenants) by name, or the
//! caller's own (`{name, value, hosts, header}`). [`SecretCatalog::resolve`]
//! is a pure function of the catalog, the tenant, the request and the
//! network the request was granted:
//!
//! - a name the catalog does not hold, and an operator's secret not granted
//!   to the tenant, get the same refusal (403, naming it): a tenant cannot
//!   tell the names of other tenants' secrets from names nobody defined;
//! - a caller's secret is checked as `paddock run --secret` checks one
//!   (its name, value, hosts and header template), its value never echoed;
//! - a name given twice, or more than [`MAX_SECRETS`] in all, is refused;
//! - secrets with network `none` are refused: only the egress proxy puts a
//!   value in, so they could never be used.
//!
//! A value lives only in [`SecretSpec`] (redacted `Debug`, no `Serialize`)
//! and in [`SuppliedSecret::value`] while the request is decoded (its
//! `Debug` is redacted too); neither is stored, evented or answered.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use paddock_core::ids::TenantId;
use paddock_proto::{
    InvalidSecret, MAX_SECRETS, NetworkPolicy, SecretSpec, SecretValue, check_secrets_network,
};
use serde::{Deserialize, Serialize};

/// One secret of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum SecretRef {
    /// The name of a secret this server's config defines and grants to
    /// the caller's tenant.
    Named(String),
    /// A secret of the caller's own.
    Supplied(SuppliedSecret),
}

/// A caller's own secret. Its value is write-only: no answer, event, log
/// line, store row or snapshot ever holds it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SuppliedSecret {
    /// The environment variable that holds the placeholder inside
    /// (`[A-Z_][A-Z0-9_]*`).
    #[schema(example = "API_KEY")]
    pub name: String,
    /// The value the egress proxy puts in, for the secret's hosts only.
    #[schema(write_only)]
    pub value: String,
    /// The hosts it may go to (`host`, `*.suffix`, an IP literal, with an
    /// optional `:port`; port-less means HTTPS on 443).
    #[schema(example = json!(["api.example.com"]))]
    pub hosts: Vec<String>,
    /// The one header of those requests the value goes in (the proxy
    /// refuses a request with the placeholder anywhere else): a header
    /// name, or `Name: text with {{secret}}`, a template also added when
    /// the program sent no header of that name. Default `Authorization`.
    #[serde(default)]
    #[schema(example = "Authorization: Bearer {{secret}}")]
    pub header: Option<String>,
}

impl fmt::Debug for SuppliedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SuppliedSecret")
            .field("name", &self.name)
            .field("value", &"<redacted>")
            .field("hosts", &self.hosts)
            .field("header", &self.header)
            .finish()
    }
}

impl From<&SecretSpec> for SuppliedSecret {
    /// A caller's secret as a request sends it (value included).
    fn from(spec: &SecretSpec) -> Self {
        Self {
            name: spec.name.clone(),
            value: spec.value.expose().to_owned(),
            hosts: spec.hosts.iter().map(ToString::to_string).collect(),
            header: Some(spec.header.to_string()),
        }
    }
}

impl SuppliedSecret {
    /// The secret a caller's request describes, checked.
    pub fn spec(&self) -> Result<SecretSpec, InvalidSecret> {
        let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
        SecretSpec::new(
            &self.name,
            SecretValue::new(self.value.clone()),
            &hosts,
            self.header.as_deref(),
        )
    }
}

/// Which tenants may name an operator's secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretGrant {
    /// `tenants = ["*"]`.
    AllTenants,
    Tenants(BTreeSet<TenantId>),
}

impl SecretGrant {
    pub fn allows(&self, tenant: &TenantId) -> bool {
        match self {
            SecretGrant::AllTenants => true,
            SecretGrant::Tenants(tenants) => tenants.contains(tenant),
        }
    }
}

/// A secret the operator defines.
#[derive(Debug, Clone)]
pub struct OperatorSecret {
    pub spec: SecretSpec,
    pub grant: SecretGrant,
}

/// The operator's secrets, by name (cheap to clone: shared).
#[derive(Debug, Clone, Default)]
pub struct SecretCatalog {
    secrets: Arc<BTreeMap<String, OperatorSecret>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretRefused {
    /// The catalog holds no secret `name`, or holds one not granted to the
    /// tenant: one answer for both, so that no tenant learns another's names.
    #[error("secret {name} is not one this server grants to tenant {tenant}")]
    NotGranted { name: String, tenant: TenantId },
    #[error(transparent)]
    Invalid(InvalidSecret),
    #[error("secret {name} is named twice")]
    Duplicate { name: String },
}

/// Two operator secrets of one name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("secret {name} is defined twice")]
pub struct DuplicateSecret {
    pub name: String,
}

impl SecretCatalog {
    pub fn new(secrets: impl IntoIterator<Item = OperatorSecret>) -> Result<Self, DuplicateSecret> {
        let mut map = BTreeMap::new();
        for secret in secrets {
            let name = secret.spec.name.clone();
            if map.insert(name.clone(), secret).is_some() {
                return Err(DuplicateSecret { name });
            }
        }
        Ok(Self {
            secrets: Arc::new(map),
        })
    }

    /// The names of the operator's secrets.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.secrets.keys().map(String::as_str)
    }

    /// The secrets of a request by `tenant` with `network`, checked (the
    /// rules are in the module doc).
    pub fn resolve(
        &self,
        tenant: &TenantId,
        asked: &[SecretRef],
        network: &NetworkPolicy,
    ) -> Result<Vec<SecretSpec>, SecretRefused> {
        if asked.is_empty() {
            return Ok(Vec::new());
        }
        if asked.len() > MAX_SECRETS {
            return Err(SecretRefused::Invalid(InvalidSecret::TooMany));
        }
        let mut specs: Vec<SecretSpec> = Vec::with_capacity(asked.len());
        for secret in asked {
            let spec = match secret {
                SecretRef::Named(name) => {
                    let Some(known) = self
                        .secrets
                        .get(name.as_str())
                        .filter(|known| known.grant.allows(tenant))
                    else {
                        return Err(SecretRefused::NotGranted {
                            name: name.clone(),
                            tenant: tenant.clone(),
                        });
                    };
                    known.spec.clone()
                }
                SecretRef::Supplied(supplied) => supplied.spec().map_err(SecretRefused::Invalid)?,
            };
            if specs.iter().any(|s| s.name == spec.name) {
                return Err(SecretRefused::Duplicate { name: spec.name });
            }
            specs.push(spec);
        }
        check_secrets_network(specs.len(), network).map_err(SecretRefused::Invalid)?;
        Ok(specs)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const VALUE: &str = "sk-operator-value-1";

    fn tenant(name: &str) -> TenantId {
        TenantId::parse(name).unwrap()
    }

    fn catalog() -> SecretCatalog {
        let spec = |name: &str| {
            SecretSpec::new(
                name,
                SecretValue::new(VALUE),
                &["api.test"],
                Some("Authorization: Bearer {{secret}}"),
            )
            .unwrap()
        };
        SecretCatalog::new([
            OperatorSecret {
                spec: spec("SHARED"),
                grant: SecretGrant::AllTenants,
            },
            OperatorSecret {
                spec: spec("ACME_ONLY"),
                grant: SecretGrant::Tenants(BTreeSet::from([tenant("acme")])),
            },
        ])
        .unwrap()
    }

    fn allow() -> NetworkPolicy {
        "allow:api.test".parse().unwrap()
    }

    fn named(name: &str) -> SecretRef {
        SecretRef::Named(name.to_owned())
    }

    fn supplied(name: &str, value: &str) -> SecretRef {
        SecretRef::Supplied(SuppliedSecret {
            name: name.to_owned(),
            value: value.to_owned(),
            hosts: vec!["own.test".to_owned()],
            header: None,
        })
    }

    #[test]
    fn a_granted_name_and_a_callers_own_secret_resolve() {
        let got = catalog()
            .resolve(
                &tenant("acme"),
                &[named("ACME_ONLY"), named("SHARED"), supplied("MINE", "v1")],
                &allow(),
            )
            .unwrap();
        let names: Vec<&str> = got.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ACME_ONLY", "SHARED", "MINE"]);
        assert_eq!(got[0].value.expose(), VALUE);
        assert_eq!(got[2].value.expose(), "v1");
        assert_eq!(got[2].hosts[0].to_string(), "own.test");
    }

    #[test]
    fn an_unknown_name_is_refused_naming_it() {
        let err = catalog()
            .resolve(&tenant("acme"), &[named("NOPE")], &allow())
            .unwrap_err();
        assert_eq!(
            err,
            SecretRefused::NotGranted {
                name: "NOPE".into(),
                tenant: tenant("acme"),
            }
        );
        assert!(err.to_string().contains("NOPE"));
    }

    /// Issue 26: a name another tenant was granted and a name nobody
    /// defined are refused alike (same variant, same text but the name),
    /// so a tenant cannot enumerate the operator's secret names.
    #[test]
    fn another_tenants_secret_and_an_unknown_name_look_the_same() {
        let c = catalog();
        let globex = tenant("globex");
        let granted_elsewhere = c
            .resolve(&globex, &[named("ACME_ONLY")], &allow())
            .unwrap_err();
        let unknown = c
            .resolve(&globex, &[named("NOPE_ONLY")], &allow())
            .unwrap_err();
        let as_service = |refused: SecretRefused| {
            let err = crate::service::ServiceError::from(refused);
            let text = err.to_string();
            (
                format!("{err:?}").split('{').next().map(str::to_owned),
                text,
            )
        };
        let (kind_a, text_a) = as_service(granted_elsewhere);
        let (kind_b, text_b) = as_service(unknown);
        assert_eq!(kind_a, kind_b);
        assert_eq!(
            text_a.replace("ACME_ONLY", "NAME"),
            text_b.replace("NOPE_ONLY", "NAME")
        );
    }

    #[test]
    fn a_secret_not_granted_to_the_tenant_is_refused() {
        let err = catalog()
            .resolve(&tenant("globex"), &[named("ACME_ONLY")], &allow())
            .unwrap_err();
        assert!(
            matches!(&err, SecretRefused::NotGranted { name, .. } if name == "ACME_ONLY"),
            "{err:?}"
        );
        assert!(
            catalog()
                .resolve(&tenant("globex"), &[named("SHARED")], &allow())
                .is_ok()
        );
    }

    #[test]
    fn twice_the_same_name_too_many_or_a_bad_own_secret_is_refused() {
        let c = catalog();
        let a = tenant("acme");
        let twice = c.resolve(&a, &[named("SHARED"), supplied("SHARED", "x")], &allow());
        assert_eq!(
            twice.unwrap_err(),
            SecretRefused::Duplicate {
                name: "SHARED".into()
            }
        );
        let many: Vec<SecretRef> = (0..=MAX_SECRETS)
            .map(|i| supplied(&format!("K{i}"), "x"))
            .collect();
        assert_eq!(
            c.resolve(&a, &many, &allow()).unwrap_err(),
            SecretRefused::Invalid(InvalidSecret::TooMany)
        );
        let empty = c.resolve(&a, &[supplied("K", "")], &allow()).unwrap_err();
        assert!(matches!(empty, SecretRefused::Invalid(_)), "{empty:?}");
        let bad_name = c
            .resolve(&a, &[supplied("k-1", "x")], &allow())
            .unwrap_err();
        assert!(
            matches!(bad_name, SecretRefused::Invalid(_)),
            "{bad_name:?}"
        );
    }

    #[test]
    fn secrets_without_egress_are_refused_and_none_asked_is_fine() {
        let c = catalog();
        let a = tenant("acme");
        assert_eq!(
            c.resolve(&a, &[named("SHARED")], &NetworkPolicy::None)
                .unwrap_err(),
            SecretRefused::Invalid(InvalidSecret::NoEgress)
        );
        assert!(c.resolve(&a, &[], &NetworkPolicy::None).unwrap().is_empty());
    }

    #[test]
    fn a_value_is_never_printed_nor_echoed_in_a_refusal() {
        let secret = "sk-caller-value-42";
        let own = supplied("MINE", secret);
        assert!(!format!("{own:?}").contains(secret));
        let refused = catalog()
            .resolve(
                &tenant("acme"),
                &[own.clone(), supplied("MINE", secret)],
                &allow(),
            )
            .unwrap_err();
        assert!(!refused.to_string().contains(secret));
        let resolved = catalog()
            .resolve(&tenant("acme"), &[own], &allow())
            .unwrap();
        assert!(!format!("{resolved:?}").contains(secret));
        assert!(!format!("{:?}", catalog()).contains(VALUE));
    }

    #[test]
    fn the_request_form_is_a_name_or_an_object() {
        let asked: Vec<SecretRef> = serde_json::from_str(
            r#"["SHARED", {"name": "MINE", "value": "v", "hosts": ["own.test"]}]"#,
        )
        .unwrap();
        assert_eq!(asked, [named("SHARED"), supplied("MINE", "v")]);
        assert!(
            serde_json::from_str::<Vec<SecretRef>>(
                r#"[{"name": "MINE", "value": "v", "hosts": [], "extra": 1}]"#
            )
            .is_err()
        );
        assert!(serde_json::from_str::<Vec<SecretRef>>("[1]").is_err());
    }

    #[test]
    fn a_local_secret_goes_up_as_the_same_secret() {
        let local = SecretSpec::new(
            "API_KEY",
            SecretValue::new("v-local"),
            &["api.test", "*.pay.test:8443"],
            Some("Authorization: Bearer {{secret}}"),
        )
        .unwrap();
        let sent = SuppliedSecret::from(&local);
        assert_eq!(sent.hosts, ["api.test", "*.pay.test:8443"]);
        assert_eq!(sent.spec().unwrap(), local);
    }
}
