//! envd's `process` package (`packages/envd/spec/process/process.proto` of
//! e2b-dev/infra), written by hand: the same names and field numbers, so
//! the binary form is prost's and the JSON form serde's (proto3 JSON:
//! camelCase, defaults left out, bytes in base64, enums by name).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::json::{self, EnumNames, is_default};

/// `process.Signal`.
pub const SIGNALS: EnumNames = &[
    (0, "SIGNAL_UNSPECIFIED"),
    (15, "SIGNAL_SIGTERM"),
    (9, "SIGNAL_SIGKILL"),
];

fn signal_ser<S: serde::Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
    json::enum_name(SIGNALS, *v, s)
}

fn signal_de<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    json::enum_number(SIGNALS, d)
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct PtySize {
    #[prost(uint32, tag = "1")]
    #[serde(skip_serializing_if = "is_default")]
    pub cols: u32,
    #[prost(uint32, tag = "2")]
    #[serde(skip_serializing_if = "is_default")]
    pub rows: u32,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Pty {
    #[prost(message, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<PtySize>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessConfig {
    #[prost(string, tag = "1")]
    pub cmd: String,
    #[prost(string, repeated, tag = "2")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[prost(map = "string, string", tag = "3")]
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    pub envs: HashMap<String, String>,
    #[prost(string, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ListRequest {}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessInfo {
    #[prost(message, optional, tag = "1")]
    pub config: Option<ProcessConfig>,
    #[prost(uint32, tag = "2")]
    pub pid: u32,
    #[prost(string, optional, tag = "3")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ListResponse {
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<ProcessInfo>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StartRequest {
    #[prost(message, optional, tag = "1")]
    pub process: Option<ProcessConfig>,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pty: Option<Pty>,
    #[prost(string, optional, tag = "3")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Absent: true (envd's default, kept for older SDKs).
    #[prost(bool, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdin: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct UpdateRequest {
    #[prost(message, optional, tag = "1")]
    pub process: Option<ProcessSelector>,
    #[prost(message, optional, tag = "2")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pty: Option<Pty>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Empty {}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StartEvent {
    #[prost(uint32, tag = "1")]
    pub pid: u32,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct DataEvent {
    #[prost(oneof = "data_event::Output", tags = "1, 2, 3")]
    #[serde(flatten)]
    pub output: Option<data_event::Output>,
}

pub mod data_event {
    use serde::{Deserialize, Serialize};

    #[derive(Clone, PartialEq, prost::Oneof, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Output {
        #[prost(bytes, tag = "1")]
        Stdout(#[serde(with = "super::json::bytes")] Vec<u8>),
        #[prost(bytes, tag = "2")]
        Stderr(#[serde(with = "super::json::bytes")] Vec<u8>),
        #[prost(bytes, tag = "3")]
        Pty(#[serde(with = "super::json::bytes")] Vec<u8>),
    }
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndEvent {
    #[prost(sint32, tag = "1")]
    #[serde(skip_serializing_if = "is_default")]
    pub exit_code: i32,
    #[prost(bool, tag = "2")]
    #[serde(skip_serializing_if = "is_default")]
    pub exited: bool,
    #[prost(string, tag = "3")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[prost(string, optional, tag = "4")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessEvent {
    #[prost(oneof = "process_event::Event", tags = "1, 2, 3, 4")]
    #[serde(flatten)]
    pub event: Option<process_event::Event>,
}

pub mod process_event {
    use serde::{Deserialize, Serialize};

    #[derive(Clone, PartialEq, prost::Oneof, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Event {
        #[prost(message, tag = "1")]
        Start(super::StartEvent),
        #[prost(message, tag = "2")]
        Data(super::DataEvent),
        #[prost(message, tag = "3")]
        End(super::EndEvent),
        #[prost(message, tag = "4")]
        Keepalive(super::Empty),
    }
}

/// `StartResponse` and `ConnectResponse`: one event of the process.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct EventResponse {
    #[prost(message, optional, tag = "1")]
    pub event: Option<ProcessEvent>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessInput {
    #[prost(oneof = "process_input::Input", tags = "1, 2")]
    #[serde(flatten)]
    pub input: Option<process_input::Input>,
}

pub mod process_input {
    use serde::{Deserialize, Serialize};

    #[derive(Clone, PartialEq, prost::Oneof, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Input {
        #[prost(bytes, tag = "1")]
        Stdin(#[serde(with = "super::json::bytes")] Vec<u8>),
        #[prost(bytes, tag = "2")]
        Pty(#[serde(with = "super::json::bytes")] Vec<u8>),
    }
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SendInputRequest {
    #[prost(message, optional, tag = "1")]
    pub process: Option<ProcessSelector>,
    #[prost(message, optional, tag = "2")]
    pub input: Option<ProcessInput>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamInputRequest {
    #[prost(oneof = "stream_input_request::Event", tags = "1, 2, 3")]
    #[serde(flatten)]
    pub event: Option<stream_input_request::Event>,
}

pub mod stream_input_request {
    use serde::{Deserialize, Serialize};

    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct StartEvent {
        #[prost(message, optional, tag = "1")]
        pub process: Option<super::ProcessSelector>,
    }

    /// Its one field is number 2, as in envd's proto.
    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct DataEvent {
        #[prost(message, optional, tag = "2")]
        pub input: Option<super::ProcessInput>,
    }

    #[derive(Clone, PartialEq, prost::Oneof, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Event {
        #[prost(message, tag = "1")]
        Start(StartEvent),
        #[prost(message, tag = "2")]
        Data(DataEvent),
        #[prost(message, tag = "3")]
        Keepalive(super::Empty),
    }
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SendSignalRequest {
    #[prost(message, optional, tag = "1")]
    pub process: Option<ProcessSelector>,
    #[prost(int32, tag = "2")]
    #[serde(serialize_with = "signal_ser", deserialize_with = "signal_de")]
    pub signal: i32,
}

/// `CloseStdinRequest` and `ConnectRequest`: a process, selected.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SelectRequest {
    #[prost(message, optional, tag = "1")]
    pub process: Option<ProcessSelector>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessSelector {
    #[prost(oneof = "process_selector::Selector", tags = "1, 2")]
    #[serde(flatten)]
    pub selector: Option<process_selector::Selector>,
}

pub mod process_selector {
    use serde::{Deserialize, Serialize};

    #[derive(Clone, PartialEq, prost::Oneof, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub enum Selector {
        #[prost(uint32, tag = "1")]
        Pid(u32),
        #[prost(string, tag = "2")]
        Tag(String),
    }
}

impl ProcessEvent {
    pub fn response(event: process_event::Event) -> EventResponse {
        EventResponse {
            event: Some(ProcessEvent { event: Some(event) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;

    #[test]
    fn the_sdks_json_reads_as_envds_messages() {
        let start: StartRequest = serde_json::from_str(
            r#"{"process":{"cmd":"/bin/bash","args":["-l","-c","echo hi"],"envs":{"A":"1"},"cwd":"/w"},"stdin":false}"#,
        )
        .unwrap();
        let process = start.process.unwrap();
        assert_eq!(process.args, ["-l", "-c", "echo hi"]);
        assert_eq!(process.envs.get("A").map(String::as_str), Some("1"));
        assert_eq!(start.stdin, Some(false));
        let input: SendInputRequest =
            serde_json::from_str(r#"{"process":{"pid":5},"input":{"stdin":"aGk="}}"#).unwrap();
        assert_eq!(
            input.input.unwrap().input,
            Some(process_input::Input::Stdin(b"hi".to_vec()))
        );
        assert_eq!(
            input.process.unwrap().selector,
            Some(process_selector::Selector::Pid(5))
        );
        let signal: SendSignalRequest =
            serde_json::from_str(r#"{"process":{"pid":5},"signal":"SIGNAL_SIGKILL"}"#).unwrap();
        assert_eq!(signal.signal, 9);
        let streamed: StreamInputRequest =
            serde_json::from_str(r#"{"data":{"input":{"stdin":"YWJj"}}}"#).unwrap();
        assert!(matches!(
            streamed.event,
            Some(stream_input_request::Event::Data(_))
        ));
    }

    #[test]
    fn events_are_written_as_envd_writes_them() {
        let data = ProcessEvent::response(process_event::Event::Data(DataEvent {
            output: Some(data_event::Output::Stdout(b"hi\n".to_vec())),
        }));
        assert_eq!(
            serde_json::to_string(&data).unwrap(),
            r#"{"event":{"data":{"stdout":"aGkK"}}}"#
        );
        let end = ProcessEvent::response(process_event::Event::End(EndEvent {
            exit_code: 2,
            exited: true,
            status: "exit status 2".into(),
            error: None,
        }));
        assert_eq!(
            serde_json::to_string(&end).unwrap(),
            r#"{"event":{"end":{"exitCode":2,"exited":true,"status":"exit status 2"}}}"#
        );
        let keepalive = ProcessEvent::response(process_event::Event::Keepalive(Empty {}));
        assert_eq!(
            serde_json::to_string(&keepalive).unwrap(),
            r#"{"event":{"keepalive":{}}}"#
        );
        // the binary form round-trips through prost
        let bytes = end.encode_to_vec();
        assert_eq!(EventResponse::decode(&bytes[..]).unwrap(), end);
    }
}
