//! envd's `filesystem` package (`packages/envd/spec/filesystem/filesystem.proto`
//! of e2b-dev/infra), written by hand: the same names and field numbers, so
//! the binary form is prost's and the JSON form serde's (proto3 JSON:
//! camelCase, defaults left out, int64 as a string, enums by name,
//! timestamps in RFC 3339). `EntryInfo.is_symlink` (12) is newer than that
//! proto: it is taken from the Python SDK 2.63.0's descriptor, which reads it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::json::{self, EnumNames, is_default};

/// `filesystem.FileType`.
pub const FILE_TYPES: EnumNames = &[
    (0, "FILE_TYPE_UNSPECIFIED"),
    (1, "FILE_TYPE_FILE"),
    (2, "FILE_TYPE_DIRECTORY"),
    (3, "FILE_TYPE_SYMLINK"),
];
pub const FILE_TYPE_UNSPECIFIED: i32 = 0;
pub const FILE_TYPE_FILE: i32 = 1;
pub const FILE_TYPE_DIRECTORY: i32 = 2;
pub const FILE_TYPE_SYMLINK: i32 = 3;

fn file_type_ser<S: serde::Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
    json::enum_name(FILE_TYPES, *v, s)
}

fn file_type_de<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    json::enum_number(FILE_TYPES, d)
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EntryInfo {
    #[prost(string, tag = "1")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[prost(int32, tag = "2")]
    #[serde(
        skip_serializing_if = "is_default",
        serialize_with = "file_type_ser",
        deserialize_with = "file_type_de"
    )]
    pub r#type: i32,
    #[prost(string, tag = "3")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[prost(int64, tag = "4")]
    #[serde(skip_serializing_if = "is_default", with = "json::int64")]
    pub size: i64,
    #[prost(uint32, tag = "5")]
    #[serde(skip_serializing_if = "is_default")]
    pub mode: u32,
    #[prost(string, tag = "6")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub permissions: String,
    #[prost(string, tag = "7")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub owner: String,
    #[prost(string, tag = "8")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[prost(message, optional, tag = "9")]
    #[serde(skip_serializing_if = "Option::is_none", with = "json::timestamp")]
    pub modified_time: Option<prost_types::Timestamp>,
    #[prost(string, optional, tag = "10")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<String>,
    #[prost(map = "string, string", tag = "11")]
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    pub metadata: HashMap<String, String>,
    /// The entry itself is a symlink; `type` is then its target's.
    #[prost(bool, tag = "12")]
    #[serde(skip_serializing_if = "is_default")]
    pub is_symlink: bool,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StatRequest {
    #[prost(string, tag = "1")]
    pub path: String,
}

/// `StatResponse`, `MakeDirResponse` and `MoveResponse`: one entry.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct EntryResponse {
    #[prost(message, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryInfo>,
}

pub type StatResponse = EntryResponse;
pub type MakeDirResponse = EntryResponse;
pub type MoveResponse = EntryResponse;

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ListDirRequest {
    #[prost(string, tag = "1")]
    pub path: String,
    #[prost(uint32, tag = "2")]
    #[serde(skip_serializing_if = "is_default")]
    pub depth: u32,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ListDirResponse {
    #[prost(message, repeated, tag = "1")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<EntryInfo>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MakeDirRequest {
    #[prost(string, tag = "1")]
    pub path: String,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct MoveRequest {
    #[prost(string, tag = "1")]
    pub source: String,
    #[prost(string, tag = "2")]
    pub destination: String,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct RemoveRequest {
    #[prost(string, tag = "1")]
    pub path: String,
}

/// `RemoveResponse`, `RemoveWatcherResponse` and `WatchDirResponse`'s
/// `StartEvent` and `KeepAlive`: no fields.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Empty {}

pub type RemoveResponse = Empty;

/// The watch methods' messages (served by polling, `filesystem::watch`).
pub mod watch {
    use serde::{Deserialize, Serialize};

    use super::super::json::{self, EnumNames, is_default};
    use super::{Empty, EntryInfo};

    /// `filesystem.EventType`.
    pub const EVENT_TYPES: EnumNames = &[
        (0, "EVENT_TYPE_UNSPECIFIED"),
        (1, "EVENT_TYPE_CREATE"),
        (2, "EVENT_TYPE_WRITE"),
        (3, "EVENT_TYPE_REMOVE"),
        (4, "EVENT_TYPE_RENAME"),
        (5, "EVENT_TYPE_CHMOD"),
    ];
    pub const EVENT_TYPE_CREATE: i32 = 1;
    pub const EVENT_TYPE_WRITE: i32 = 2;
    pub const EVENT_TYPE_REMOVE: i32 = 3;
    pub const EVENT_TYPE_CHMOD: i32 = 5;

    fn event_type_ser<S: serde::Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
        json::enum_name(EVENT_TYPES, *v, s)
    }

    fn event_type_de<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
        json::enum_number(EVENT_TYPES, d)
    }

    /// `WatchDirRequest` and `CreateWatcherRequest`: the same fields.
    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    #[serde(default, rename_all = "camelCase")]
    pub struct WatchRequest {
        #[prost(string, tag = "1")]
        pub path: String,
        #[prost(bool, tag = "2")]
        #[serde(skip_serializing_if = "is_default")]
        pub recursive: bool,
        #[prost(bool, tag = "3")]
        #[serde(skip_serializing_if = "is_default")]
        pub include_entry: bool,
        #[prost(bool, tag = "4")]
        #[serde(skip_serializing_if = "is_default")]
        pub allow_network_mounts: bool,
    }

    pub type WatchDirRequest = WatchRequest;
    pub type CreateWatcherRequest = WatchRequest;

    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct FilesystemEvent {
        #[prost(string, tag = "1")]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name: String,
        #[prost(int32, tag = "2")]
        #[serde(
            skip_serializing_if = "is_default",
            serialize_with = "event_type_ser",
            deserialize_with = "event_type_de"
        )]
        pub r#type: i32,
        #[prost(message, optional, tag = "3")]
        #[serde(skip_serializing_if = "Option::is_none")]
        pub entry: Option<EntryInfo>,
    }

    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct WatchDirResponse {
        #[prost(oneof = "watch_dir_response::Event", tags = "1, 2, 3")]
        #[serde(flatten)]
        pub event: Option<watch_dir_response::Event>,
    }

    pub mod watch_dir_response {
        use serde::{Deserialize, Serialize};

        #[derive(Clone, PartialEq, prost::Oneof, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub enum Event {
            #[prost(message, tag = "1")]
            Start(super::Empty),
            #[prost(message, boxed, tag = "2")]
            Filesystem(Box<super::FilesystemEvent>),
            #[prost(message, tag = "3")]
            Keepalive(super::Empty),
        }
    }

    /// `CreateWatcherResponse`, `GetWatcherEventsRequest` and
    /// `RemoveWatcherRequest`: a watcher's id.
    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    #[serde(default, rename_all = "camelCase")]
    pub struct WatcherId {
        #[prost(string, tag = "1")]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub watcher_id: String,
    }

    pub type CreateWatcherResponse = WatcherId;
    pub type GetWatcherEventsRequest = WatcherId;
    pub type RemoveWatcherRequest = WatcherId;
    pub type RemoveWatcherResponse = Empty;

    #[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
    #[serde(default)]
    pub struct GetWatcherEventsResponse {
        #[prost(message, repeated, tag = "1")]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub events: Vec<FilesystemEvent>,
    }
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::watch::*;
    use super::*;

    fn entry() -> EntryInfo {
        EntryInfo {
            name: "a.txt".into(),
            r#type: FILE_TYPE_FILE,
            path: "/home/user/a.txt".into(),
            size: 5,
            mode: 0o644,
            permissions: "-rw-r--r--".into(),
            owner: "root".into(),
            group: "root".into(),
            modified_time: Some(prost_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 250_000_000,
            }),
            symlink_target: None,
            metadata: HashMap::new(),
            is_symlink: false,
        }
    }

    #[test]
    fn the_sdks_requests_read_as_envds_messages() {
        let list: ListDirRequest = serde_json::from_str(r#"{"path":"/x","depth":2}"#).unwrap();
        assert_eq!(
            list,
            ListDirRequest {
                path: "/x".into(),
                depth: 2
            }
        );
        let moved: MoveRequest =
            serde_json::from_str(r#"{"source":"a","destination":"b"}"#).unwrap();
        assert_eq!(
            (moved.source.as_str(), moved.destination.as_str()),
            ("a", "b")
        );
        let watch: WatchDirRequest =
            serde_json::from_str(r#"{"path":"/x","recursive":true,"includeEntry":true}"#).unwrap();
        assert!(watch.recursive && watch.include_entry && !watch.allow_network_mounts);
        let id: GetWatcherEventsRequest = serde_json::from_str(r#"{"watcherId":"w1"}"#).unwrap();
        assert_eq!(id.watcher_id, "w1");
        assert_eq!(serde_json::from_str::<StatRequest>("{}").unwrap().path, "");
    }

    #[test]
    fn an_entry_is_written_as_envd_writes_it() {
        let answer = EntryResponse {
            entry: Some(entry()),
        };
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            serde_json::json!({"entry": {
                "name": "a.txt",
                "type": "FILE_TYPE_FILE",
                "path": "/home/user/a.txt",
                "size": "5",
                "mode": 420,
                "permissions": "-rw-r--r--",
                "owner": "root",
                "group": "root",
                "modifiedTime": "2023-11-14T22:13:20.250Z",
            }})
        );
        let link = EntryInfo {
            r#type: FILE_TYPE_DIRECTORY,
            symlink_target: Some("/home/user/d".into()),
            is_symlink: true,
            ..entry()
        };
        let json = serde_json::to_value(&link).unwrap();
        assert_eq!(json["type"], "FILE_TYPE_DIRECTORY");
        assert_eq!(json["symlinkTarget"], "/home/user/d");
        assert_eq!(json["isSymlink"], true);
        let back: EntryInfo = serde_json::from_value(json).unwrap();
        assert_eq!(back, link);
    }

    #[test]
    fn the_binary_form_uses_envds_field_numbers() {
        let bytes = ListDirRequest {
            path: "d".into(),
            depth: 3,
        }
        .encode_to_vec();
        assert_eq!(bytes, b"\x0a\x01d\x10\x03");
        let bytes = EntryInfo {
            name: String::new(),
            is_symlink: true,
            ..EntryInfo::default()
        }
        .encode_to_vec();
        assert_eq!(bytes, b"\x60\x01");
        assert_eq!(
            EntryInfo::decode(&entry().encode_to_vec()[..]).unwrap(),
            entry()
        );
    }

    #[test]
    fn watch_events_are_flattened_oneofs() {
        let event = WatchDirResponse {
            event: Some(watch_dir_response::Event::Filesystem(Box::new(
                FilesystemEvent {
                    name: "a.txt".into(),
                    r#type: 1,
                    entry: None,
                },
            ))),
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"filesystem":{"name":"a.txt","type":"EVENT_TYPE_CREATE"}}"#
        );
        let start = WatchDirResponse {
            event: Some(watch_dir_response::Event::Start(Empty {})),
        };
        assert_eq!(serde_json::to_string(&start).unwrap(), r#"{"start":{}}"#);
    }
}
