//! What the sandbox can learn about the host from its own /proc: PID 1's
//! command line and environment name no host path (the jail spec travels on
//! fd 0, argv[0] is a bare name), the cgroup paths stay hidden behind the
//! cgroup namespace, and no mount source names the workspace. The one host
//! path mountinfo cannot hide is the workspace bind's root field (the
//! directory's path inside its filesystem; see docs/security.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_tests::bins;
use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;

const SCRIPT: &str = "echo '== cmdline'; tr '\\0' ' ' < /proc/1/cmdline; echo; \
     echo '== environ'; tr '\\0' ' ' < /proc/1/environ 2>/dev/null || echo unreadable; \
     echo '== self-environ'; tr '\\0' ' ' < /proc/self/environ; echo; \
     echo '== mountinfo'; cat /proc/self/mountinfo; \
     echo '== cgroup'; cat /proc/self/cgroup";

fn section<'a>(stdout: &'a str, name: &str) -> &'a str {
    let start = stdout
        .find(&format!("== {name}\n"))
        .unwrap_or_else(|| panic!("no {name} section in {stdout}"));
    let rest = &stdout[start + name.len() + 4..];
    rest.find("\n== ").map_or(rest, |end| &rest[..end])
}

#[test]
fn pid_1_and_proc_name_no_host_path_or_cgroup() {
    require_root();
    let ws = tempfile::Builder::new()
        .prefix("hostpath-secret-")
        .tempdir()
        .unwrap();
    let workspace = ws.path().canonicalize().unwrap();
    let workspace = workspace.to_str().unwrap();
    let (json, run) = SandboxRun::shell(SCRIPT).workspace(ws.path()).run_json();
    assert_eq!(run.code(), 0, "{json:?}");
    let out = json.stdout.as_str();
    let guest = bins::paddock_guest();
    let guest = guest.to_str().unwrap();
    let cgroups = json
        .enforcement()
        .cgroup
        .as_ref()
        .expect("cgroups")
        .paths
        .clone();
    assert!(!cgroups.is_empty());

    let cmdline = section(out, "cmdline");
    assert!(
        cmdline.starts_with("paddock-guest jail --sandbox "),
        "{cmdline}"
    );
    let environ = section(out, "environ");
    let own_environ = section(out, "self-environ");
    for text in [cmdline, environ, own_environ] {
        assert!(!text.contains(workspace), "{workspace} in {text}");
        assert!(!text.contains(guest), "{guest} in {text}");
        assert!(!text.contains("cgroup_parent"), "{text}");
        assert!(!text.contains("\"workspace\""), "the spec leaked: {text}");
        for cgroup in &cgroups {
            assert!(!text.contains(cgroup.as_str()), "{cgroup} in {text}");
        }
    }

    let mountinfo = section(out, "mountinfo");
    let cgroup_file = section(out, "cgroup");
    for cgroup in &cgroups {
        // The sandbox-relative part too ("/paddock/sb-...").
        let relative = cgroup.split_once(&json.sandbox_id).map(|(head, _)| {
            let parent = head
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default();
            format!("/{parent}/{}", json.sandbox_id)
        });
        for text in [mountinfo, cgroup_file] {
            assert!(!text.contains(cgroup.as_str()), "{cgroup} in {text}");
            if let Some(relative) = &relative {
                assert!(!text.contains(relative.as_str()), "{relative} in {text}");
            }
        }
    }
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        // Mount point, options and source: never the host workspace path.
        assert!(!fields[4].contains(workspace), "{line}");
        assert!(
            !fields[dash..].iter().any(|f| f.contains(workspace)),
            "{line}"
        );
        // The root field shows it only for the workspace bind itself.
        if fields[3].contains(workspace) {
            assert_eq!(fields[4], "/workspace", "{line}");
        }
    }
}
