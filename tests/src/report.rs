//! The JSON report `paddock-escape-battery` prints: one line per probe.

use serde::{Deserialize, Serialize};

/// One escape attempt. `blocked` is true when the sandbox stopped it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub name: String,
    pub blocked: bool,
    pub detail: String,
}

/// Something that must work inside a sandbox (writing the workspace, forking,
/// loopback). A failed control means the probes may be blocked for the wrong
/// reason, so the host asserts these too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub probes: Vec<Probe>,
    pub controls: Vec<Control>,
}

impl Report {
    pub fn not_blocked(&self) -> Vec<&Probe> {
        self.probes.iter().filter(|p| !p.blocked).collect()
    }

    pub fn failed_controls(&self) -> Vec<&Control> {
        self.controls.iter().filter(|c| !c.ok).collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_probes_that_got_through_and_round_trips_as_json() {
        let report = Report {
            probes: vec![
                Probe {
                    name: "mount".into(),
                    blocked: true,
                    detail: "denied: EPERM".into(),
                },
                Probe {
                    name: "read canary".into(),
                    blocked: false,
                    detail: "READ 6 bytes".into(),
                },
            ],
            controls: vec![Control {
                name: "write /workspace".into(),
                ok: false,
                detail: "EROFS".into(),
            }],
        };
        let names: Vec<&str> = report
            .not_blocked()
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        assert_eq!(names, ["read canary"]);
        assert_eq!(report.failed_controls().len(), 1);
        let json = serde_json::to_string(&report).unwrap();
        assert_eq!(serde_json::from_str::<Report>(&json).unwrap(), report);
    }
}
