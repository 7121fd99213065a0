use paddock_core::sandbox::SandboxLimits;
use paddock_proto::{NetworkBounds, NetworkPolicy};
use paddock_sandbox::{DEFAULT_IMAGE, SlowReader};

use super::*;

#[test]
fn a_full_config_parses() {
    let config: ServeConfig = toml::from_str(
        r#"
        node = "edge-1"
        idle_timeout_secs = 60
        max_lifetime_secs = 3600
        max_sandboxes = 5
        tenant_disk_quota_bytes = 1073741824
        max_checkpoints_per_session = 7
        max_body_bytes = 1048576
        allow_downgrade = ["cgroups"]

        [[tokens]]
        token = "0123456789abcdef0123"
        tenant = "acme"

        [default_limits]
        memory_bytes = 268435456
        pids = 128

        [max_limits]
        memory_bytes = 1073741824

        [http]
        max_connections = 100
        max_connections_per_peer = 10
        header_timeout_secs = 3
        reserved_connections = 20
        max_streams_per_tenant = 8

        [streams]
        slow_reader = "drop"
        sandbox_buffer_bytes = 1048576

        [quotas.tenant]
        sandboxes = 3
        pids = 1024

        [quotas.node]
        memory_bytes = 4294967296

        [id_pool]
        base = 200000
        blocks = 16
        "#,
    )
    .unwrap();
    let service = config.service_config("edge-1".into(), "/w".into()).unwrap();
    assert_eq!(service.idle_timeout, Duration::from_secs(60));
    assert_eq!(service.max_lifetime, Duration::from_secs(3600));
    assert_eq!(service.max_sandboxes, 5);
    assert_eq!(service.tenant_disk_quota, 1 << 30);
    assert_eq!(
        config
            .storage_settings()
            .unwrap()
            .max_checkpoints_per_session,
        7
    );
    let one: ServeConfig = toml::from_str("max_checkpoints_per_session = 1").unwrap();
    assert!(one.storage_settings().is_err());
    assert_eq!(
        ServeConfig::default()
            .storage_settings()
            .unwrap()
            .max_checkpoints_per_session,
        paddock_runtime::DEFAULT_MAX_CHECKPOINTS_PER_SESSION
    );
    assert_eq!(service.limits.default.memory_bytes, Some(268435456));
    assert_eq!(service.limits.default.pids, Some(128));
    // Fields left out keep the built-in default.
    assert_eq!(
        service.limits.default.tmp_bytes,
        SandboxLimits::default().tmp_bytes
    );
    assert!(service.allow_downgrade.contains(&DowngradeLayer::Cgroups));
    assert_eq!(service.quotas.tenant.sandboxes, Some(3));
    assert_eq!(service.quotas.tenant.pids, Some(1024));
    assert_eq!(service.quotas.tenant.memory_bytes, None);
    // A tenant's runs left out: the default cap.
    assert_eq!(
        service.quotas.tenant.runs,
        Some(paddock_api::service::DEFAULT_TENANT_RUNS)
    );
    assert_eq!(service.quotas.node.memory_bytes, Some(4 << 30));
    // Node fields left out come from the host.
    assert_eq!(service.quotas.node.pids, HostTotals::read().quota().pids);
    assert!(service.quotas.node.cpu_millis.is_some());
    assert_eq!(
        config.id_pool,
        Some(paddock_jail::IdPool {
            base: 200_000,
            blocks: 16
        })
    );
    let tokens = config.tokens(Some("globex:fedcba9876543210fedc")).unwrap();
    assert_eq!(
        tokens.tenants(),
        [
            TenantId::parse("acme").unwrap(),
            TenantId::parse("globex").unwrap()
        ]
    );
    assert!(!format!("{:?}", config.tokens).contains("0123456789"));
    let http = config.connection_limits().unwrap();
    assert_eq!(http.max_connections, 100);
    assert_eq!(http.max_connections_per_peer, 10);
    assert_eq!(http.header_read_timeout, Duration::from_secs(3));
    assert_eq!(http.reserved_connections, Some(20));
    assert_eq!(http.max_streams_per_tenant, 8);
    assert_eq!(
        http.max_connections_per_tenant,
        Some(6),
        "a sixteenth of 100"
    );
    // The body share defaults to a quarter of the budget, at least one
    // body of max_body_bytes (1 MiB here).
    assert_eq!(http.max_body_memory_per_tenant_bytes, Some(64 << 20));
    assert_eq!(
        http.idle_timeout,
        ConnectionLimits::default().idle_timeout,
        "fields left out keep their default"
    );
    let streams = config.stream_limits().unwrap();
    assert_eq!(streams.slow_reader, SlowReader::Drop);
    assert_eq!(streams.sandbox_buffer_bytes, 1 << 20);
}

/// The sample's `[http]` shows the defaults, and they hold together.
#[test]
fn the_sample_http_section_is_the_defaults() {
    let sample = include_str!("../../../../deploy/paddock.toml");
    let config: ServeConfig = toml::from_str(sample).unwrap();
    let http = config.connection_limits().unwrap();
    let built_in = ConnectionLimits::default().resolved(DEFAULT_MAX_BODY_BYTES);
    assert_eq!(format!("{http:?}"), format!("{built_in:?}"));
}

#[test]
fn mistakes_are_refused() {
    assert!(toml::from_str::<ServeConfig>("idle_timeout = 5").is_err());
    assert!(toml::from_str::<ServeConfig>("[quotas.tenant]\nmemory = 5").is_err());
    assert!(
        toml::from_str::<ServeConfig>("[[tokens]]\ntoken = \"x\"\ntenant = \"Bad Name\"").is_err()
    );
    let empty = ServeConfig::default();
    assert!(empty.tokens(None).is_err());
    assert!(empty.tokens(Some("acme")).is_err());
    assert!(empty.tokens(Some("acme:short")).is_err());
    assert!(toml::from_str::<ServeConfig>("[streams]\nslow_reader = \"later\"").is_err());
    let no_peers: ServeConfig = toml::from_str("[http]\nmax_connections_per_peer = 0").unwrap();
    assert!(no_peers.connection_limits().is_err());
    for bad in [
        "[http]\nmax_connections = 10\nreserved_connections = 10",
        "[http]\nbody_min_bytes_per_sec = 0",
        "[http]\nmax_streams_per_tenant = 0",
        "[http]\nmax_body_memory_per_tenant_bytes = 1048576",
        "[http]\nmax_body_memory_bytes = 1048576\nmax_body_memory_per_tenant_bytes = 2097152",
    ] {
        let config: ServeConfig = toml::from_str(bad).unwrap();
        assert!(config.connection_limits().is_err(), "{bad}");
    }
    let defaults = ServeConfig::default().connection_limits().unwrap();
    let built_in = ConnectionLimits::default();
    assert_eq!(
        (
            defaults.reserved_connections,
            defaults.max_connections_per_tenant,
            defaults.max_body_memory_per_tenant_bytes
        ),
        (
            Some(built_in.reserved()),
            Some(built_in.per_tenant()),
            Some(built_in.body_share(DEFAULT_MAX_BODY_BYTES))
        ),
        "the derived defaults are the built-in ones"
    );
    // ... and the documented figures (docs/api.md, deploy/paddock.toml).
    assert_eq!(
        (
            defaults.reserved_connections,
            defaults.max_connections_per_tenant,
            defaults.max_body_memory_per_tenant_bytes
        ),
        (Some(512), Some(256), Some(64 << 20))
    );
    let zero: ServeConfig = toml::from_str("idle_timeout_secs = 0").unwrap();
    assert!(zero.service_config("n".into(), "/w".into()).is_err());
    assert!(
        toml::from_str::<ServeConfig>(
            "[snapshot]
files = 5"
        )
        .is_err()
    );
    for bad in [
        "[snapshot]
max_files = 0",
        "[snapshot]
max_bytes = 10
request_max_bytes = 5",
    ] {
        let config: ServeConfig = toml::from_str(bad).unwrap();
        assert!(config.snapshot_settings().is_err(), "{bad}");
    }
}

#[test]
fn network_bounds_default_and_are_settable() {
    let defaults = ServeConfig::default().network.bounds().unwrap();
    assert_eq!(defaults, NetworkBounds::default());
    let config: ServeConfig = toml::from_str(
        "[network]
default = \"allow:pypi.org\"
max = \"allow:pypi.org,*.example.com\"",
    )
    .unwrap();
    let bounds = config.network.bounds().unwrap();
    assert_eq!(bounds.default.label(), "allow:pypi.org");
    assert_eq!(bounds.max.label(), "allow:pypi.org,*.example.com");
    for bad in [
        "[network]\nmax = \"none\"\ndefault = \"full\"",
        "[network]\nmax = \"allow:\"",
        "[network]\ndefault = \"host\"",
    ] {
        let config: ServeConfig = toml::from_str(bad).unwrap();
        assert!(config.network.bounds().is_err(), "{bad}");
    }
}

#[test]
fn snapshot_limits_default_and_are_settable() {
    let defaults = ServeConfig::default().snapshot_settings().unwrap();
    assert_eq!(defaults, paddock_runtime::SnapshotSettings::default());
    let config: ServeConfig = toml::from_str(
        "[snapshot]
max_files = 50000
request_max_bytes = 1073741824",
    )
    .unwrap();
    let settings = config.snapshot_settings().unwrap();
    assert_eq!(settings.limits.max_files, 50_000);
    assert_eq!(
        settings.limits.max_bytes,
        paddock_snapshot::DEFAULT_MAX_BYTES
    );
    assert_eq!(
        settings.request_max().max_files,
        paddock_snapshot::MAX_REQUEST_FILES
    );
    assert_eq!(settings.request_max().max_bytes, 1 << 30);
}

#[test]
fn backends_are_enabled_from_the_file_or_the_flags() {
    let config: ServeConfig = toml::from_str(
        r#"
        backend = "docker"
        [[backends]]
        kind = "native"
        [[backends]]
        kind = "docker"
        warm_pool = 2
        [[backends]]
        kind = "docker"
        image = "other:1"
        "#,
    )
    .unwrap();
    let warm: WarmPoolArg = "docker:other:1=3".parse().unwrap();
    let sections = config
        .backend_sections(BackendKind::Native, None, &[warm])
        .unwrap();
    let got: Vec<(BackendKind, Option<&str>, usize)> = sections
        .iter()
        .map(|s| (s.kind, s.image.as_deref(), s.warm_pool))
        .collect();
    assert_eq!(
        got,
        [
            (BackendKind::Native, None, 0),
            (BackendKind::Docker, Some(DEFAULT_IMAGE), 2),
            (BackendKind::Docker, Some("other:1"), 3),
        ]
    );
    // No [[backends]]: the one the flags (or `backend`/`image`) name.
    let flags = ServeConfig::default()
        .backend_sections(
            BackendKind::Gvisor,
            Some("img:2"),
            &["gvisor=1".parse().unwrap()],
        )
        .unwrap();
    assert_eq!(
        flags,
        [BackendSection {
            kind: BackendKind::Gvisor,
            image: Some("img:2".to_owned()),
            warm_pool: 1,
            warm_pool_network: None,
        }]
    );
}

#[test]
fn bad_backend_settings_are_refused() {
    let refused = |toml_text: &str, warm: &[&str]| {
        let config: ServeConfig = toml::from_str(toml_text).unwrap();
        let warm: Vec<WarmPoolArg> = warm.iter().map(|w| w.parse().unwrap()).collect();
        config
            .backend_sections(BackendKind::Native, None, &warm)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused("[[backends]]\nkind = \"native\"\nimage = \"x\"", &[]),
        "backends: the native backend takes no image"
    );
    assert_eq!(
        refused("backend = \"gvisor\"\n[[backends]]\nkind = \"native\"", &[]),
        "backend gvisor: not among [[backends]]"
    );
    assert_eq!(
        refused("", &["docker=2"]),
        "--warm-pool docker: that backend is not enabled"
    );
    assert!(refused("[[backends]]\nkind = \"docker\"\nwarm_pool = 65", &[]).contains("at most 64"));
    assert!(refused("image = \"a\"\n[[backends]]\nkind = \"docker\"", &[]).contains("each entry"));
    assert!("docker".parse::<WarmPoolArg>().is_err());
    assert!("kvm=1".parse::<WarmPoolArg>().is_err());
    assert!("docker:=1".parse::<WarmPoolArg>().is_err());
    assert!("docker=-1".parse::<WarmPoolArg>().is_err());
}

#[test]
fn secrets_take_their_value_from_the_servers_environment() {
    let config: ServeConfig = toml::from_str(
        r#"
        [secrets.GITHUB_TOKEN]
        hosts = ["api.github.com"]
        header = "Authorization: Bearer {{secret}}"
        env = "PADDOCK_TEST_GH"
        tenants = ["*"]

        [secrets.PYPI]
        hosts = ["upload.pypi.org", "*.pypi.org:8443"]
        value = "pypi-in-the-file"
        tenants = ["acme", "globex"]
        "#,
    )
    .unwrap();
    let env = |var: &str| (var == "PADDOCK_TEST_GH").then(|| "gh-value-1".to_owned());
    let catalog = config.secret_catalog(&env).unwrap();
    assert_eq!(
        catalog.names().collect::<Vec<_>>(),
        ["GITHUB_TOKEN", "PYPI"]
    );
    let acme = TenantId::parse("acme").unwrap();
    let other = TenantId::parse("other").unwrap();
    let network: NetworkPolicy = "full".parse().unwrap();
    let named = |n: &str| paddock_api::service::SecretRef::Named(n.to_owned());
    let got = catalog
        .resolve(&acme, &[named("GITHUB_TOKEN"), named("PYPI")], &network)
        .unwrap();
    assert_eq!(got[0].value.expose(), "gh-value-1");
    assert_eq!(
        got[0].header.to_string(),
        "Authorization: Bearer {{secret}}"
    );
    assert_eq!(got[1].value.expose(), "pypi-in-the-file");
    assert_eq!(got[1].hosts.len(), 2);
    assert!(
        catalog
            .resolve(&other, &[named("GITHUB_TOKEN")], &network)
            .is_ok()
    );
    assert!(catalog.resolve(&other, &[named("PYPI")], &network).is_err());
    assert!(!format!("{config:?}").contains("pypi-in-the-file"));
}

#[test]
fn a_bad_secret_stops_the_start_naming_it_never_its_value() {
    let none = |_: &str| -> Option<String> { None };
    let refused = |text: &str| {
        let config: ServeConfig = toml::from_str(text).unwrap();
        format!("{:#}", config.secret_catalog(&none).unwrap_err())
    };
    let missing = refused(
        "[secrets.API_KEY]\nhosts = [\"a.test\"]\nenv = \"NOT_SET_HERE\"\ntenants = [\"*\"]",
    );
    assert_eq!(
        missing,
        "secrets.API_KEY: $NOT_SET_HERE is not set in the server's environment"
    );
    let both = refused(
        "[secrets.K]\nhosts = [\"a.test\"]\nenv = \"V\"\nvalue = \"v-secret\"\ntenants = [\"*\"]",
    );
    assert!(both.contains("secrets.K: give env"), "{both}");
    assert!(!both.contains("v-secret"), "{both}");
    let no_tenants =
        refused("[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v-secret\"\ntenants = []");
    assert!(no_tenants.contains("tenants is empty"), "{no_tenants}");
    let bad_header = refused(
        "[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v-secret\"\nheader = \"X: no slot\"\ntenants = [\"*\"]",
    );
    assert!(bad_header.starts_with("secrets.K: "), "{bad_header}");
    assert!(!bad_header.contains("v-secret"), "{bad_header}");
    let bad_name =
        refused("[secrets.api-key]\nhosts = [\"a.test\"]\nvalue = \"v\"\ntenants = [\"*\"]");
    assert!(bad_name.contains("api-key"), "{bad_name}");
    assert!(
        toml::from_str::<ServeConfig>(
            "[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v\"\ntenants = [\"*\"]\nport = 1"
        )
        .is_err()
    );
    assert!(
        toml::from_str::<ServeConfig>("[secrets.K]\nhosts = [\"a.test\"]\nvalue = \"v\"").is_err(),
        "tenants is required"
    );
}

#[test]
fn node_names_are_safe_path_components() {
    assert_eq!(
        node_name("Build-Box.example.com\n"),
        "build-box-example-com"
    );
    assert_eq!(node_name(""), "local");
    assert_eq!(node_name("..."), "local");
}

/// `[runs]`: the budget bound and the steering caps, each checked.
#[test]
fn runs_bounds_and_steering_caps_are_read_and_checked() {
    let config: ServeConfig = toml::from_str(
        "[runs]\nmax_turns = 20\nmax_steering_messages = 5\nmax_steering_total_chars = 900\n",
    )
    .unwrap();
    let max = config.runs.budget_max().unwrap();
    assert_eq!(max.max_turns, 20);
    assert_eq!(
        max.max_tokens,
        paddock_runtime::DEFAULT_BUDGET_MAX.max_tokens
    );
    let steering = config.runs.steering().unwrap();
    assert_eq!((steering.max_messages, steering.max_total_chars), (5, 900));
    for bad in [
        "[runs]\nmax_turns = 0\n",
        "[runs]\nmax_steering_messages = 0\n",
        "[runs]\nmax_steering_message_chars = 32001\n",
    ] {
        let config: ServeConfig = toml::from_str(bad).unwrap();
        assert!(
            config.runs.budget_max().is_err() || config.runs.steering().is_err(),
            "{bad}"
        );
    }
    assert!(toml::from_str::<ServeConfig>("[runs]\nmax_turnz = 3\n").is_err());
}

#[test]
fn check_finds_each_sections_mistake_and_names_its_key() {
    for (text, message) in [
        (
            "[http]\nmax_connections = 0",
            "http.max_connections must be more than 0",
        ),
        (
            "[http]\nheader_timeout_secs = 0",
            "http.header_timeout_secs must be more than 0",
        ),
        (
            "[streams]\ninput_budget_bytes = 0",
            "streams.input_budget_bytes must be more than 0",
        ),
        (
            "[snapshot]\nmax_bytes = 0",
            "snapshot.max_bytes must be more than 0",
        ),
        (
            "[runs]\nmax_tokens = 0",
            "runs.max_tokens must be more than 0",
        ),
        (
            "[runs]\nmax_steering_messages = 0",
            "runs.max_steering_messages must be more than 0",
        ),
        (
            "[runs]\nmax_queue_wait_secs = 86401",
            "runs.max_queue_wait_secs must be 1 to 86400, not 86401",
        ),
        (
            "[streams]\nslow_reader = \"wait\"\nstream_buffer_bytes = 0",
            "streams.stream_buffer_bytes must be more than 0",
        ),
        (
            "max_checkpoints_per_session = 1",
            "max_checkpoints_per_session must be at least 2, not 1",
        ),
        ("prices = [\"gpt\"]", "prices: "),
    ] {
        let config: ServeConfig = toml::from_str(text).unwrap();
        let err = match config.check() {
            Ok(_) => panic!("{text}: accepted"),
            Err(err) => format!("{err:#}"),
        };
        assert!(err.starts_with(message), "{text}: {err}");
    }
    let checked = ServeConfig::default().check().unwrap();
    assert_eq!(checked.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
    assert_eq!(
        checked.connections.max_connections,
        ConnectionLimits::default().max_connections
    );
}

/// `[runs]`: queueing is off unless asked for; its bounds are checked.
#[test]
fn runs_queue_when_asked_within_bounds() {
    let config: ServeConfig = toml::from_str("").unwrap();
    assert_eq!(
        config.runs.queue().unwrap(),
        paddock_runtime::QueueSettings::default()
    );
    assert_eq!(
        config.runs.queue().unwrap().when_full,
        paddock_runtime::WhenFull::Refuse
    );
    let config: ServeConfig = toml::from_str(
        "[runs]\nwhen_full = \"queue\"\nmax_queued_per_tenant = 3\nmax_queue_wait_secs = 60\n",
    )
    .unwrap();
    let queue = config.runs.queue().unwrap();
    assert_eq!(queue.when_full, paddock_runtime::WhenFull::Queue);
    assert_eq!(queue.max_queued_per_tenant, 3);
    assert_eq!(queue.max_wait, std::time::Duration::from_secs(60));
    for bad in [
        "[runs]\nmax_queued_per_tenant = 0\n",
        "[runs]\nmax_queued_per_tenant = 10001\n",
        "[runs]\nmax_queue_wait_secs = 0\n",
        "[runs]\nmax_queue_wait_secs = 86401\n",
    ] {
        let config: ServeConfig = toml::from_str(bad).unwrap();
        assert!(config.runs.queue().is_err(), "{bad}");
    }
    assert!(toml::from_str::<ServeConfig>("[runs]\nwhen_full = \"wait\"\n").is_err());
}

/// Top-level keys reach the settings types flattened into the file's top
/// level (`LimitsPolicy`, `StorageSettings`); unknown keys stay refused in
/// every section that flattens a type.
#[test]
fn flattened_settings_read_their_top_level_keys() {
    let config: ServeConfig = toml::from_str(
        "temporary_workspace_bytes = 0\nmax_checkpoints_per_session = 9\n[max_limits]\npids = 64\n",
    )
    .unwrap();
    let service = config.service_config("n".into(), "/w".into()).unwrap();
    assert_eq!(service.limits.temporary_workspace_bytes, None, "0 is off");
    assert_eq!(service.limits.max.pids, Some(64));
    assert_eq!(service.limits.default, LimitsPolicy::default().default);
    assert_eq!(
        config
            .storage_settings()
            .unwrap()
            .max_checkpoints_per_session,
        9
    );
    let defaults = ServeConfig::default()
        .service_config("n".into(), "/w".into())
        .unwrap();
    assert_eq!(defaults.limits, LimitsPolicy::default());
    for bad in [
        "[runs]\nmax_wait = 5",
        "[runs]\nmax_messages = 5",
        "[snapshot]\nexcludes = []",
        "[streams]\ninput_stall = 5",
        "[http]\nheader_read_timeout = 5",
        "default = {}",
    ] {
        assert!(toml::from_str::<ServeConfig>(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_ports_domain_is_off_by_default_and_checked_where_it_is_read() {
    let off = ServeConfig::default().check().unwrap();
    assert_eq!(off.ports_domain, None);
    let on: ServeConfig = toml::from_str("[ports]\ndomain = \"Preview.Example.com\"").unwrap();
    let domain = on.check().unwrap().ports_domain.unwrap();
    assert_eq!(domain.as_str(), "preview.example.com");
    for bad in [
        "[ports]\ndomain = \"-bad.example.com\"",
        "[ports]\ndomain = \"example.com:8443\"",
        "[ports]\ndomain = \"\"",
    ] {
        let err = toml::from_str::<ServeConfig>(bad).unwrap_err().to_string();
        assert!(err.contains("expected a DNS name"), "{bad}: {err}");
    }
    // its old place in [http] is refused, not silently ignored
    assert!(toml::from_str::<ServeConfig>("[http]\nports_domain = \"a.example.com\"").is_err());
}
