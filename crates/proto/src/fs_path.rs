//! [`FsPath`]: a file name or workspace path as the kernel holds it, any
//! bytes (not only UTF-8), with one display form and one lossless form.
//!
//! - **Display**: [`FsPath::display`] keeps every valid UTF-8 sequence and
//!   writes each byte that is not part of one as `\xNN` (two lowercase hex
//!   digits, as bash's `$'\xff'`). It is for people and is not reversible:
//!   a name that really holds the four characters `\xff` looks the same.
//! - **Lossless**: on the wire (the guest protocol's JSON headers) a path in
//!   UTF-8 is a JSON string, as before; any other is an object
//!   `{"bytes": "<standard base64 of the raw bytes>"}`. The HTTP API shows
//!   the display form in `path` (or `name`) and, only for a path not in
//!   UTF-8, its base64 in `path_bytes` (or `name_bytes`): [`FsPath::bytes_b64`].

use std::borrow::Borrow;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A path or name: bytes, compared and ordered as bytes (the same order as
/// the `String` it is when it is UTF-8).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FsPath(Vec<u8>);

impl FsPath {
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The path as text, when it is UTF-8.
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The display form: UTF-8 kept, every other byte as `\xNN`.
    pub fn display(&self) -> String {
        escape(&self.0)
    }

    /// The raw bytes in standard base64 when the path is not UTF-8 (None
    /// when [`FsPath::display`] already is the path).
    pub fn bytes_b64(&self) -> Option<String> {
        self.to_str().is_none().then(|| STANDARD.encode(&self.0))
    }

    /// The path whose raw bytes `b64` spells in standard base64 (what
    /// [`FsPath::bytes_b64`] gives).
    pub fn from_b64(b64: &str) -> Result<Self, base64::DecodeError> {
        STANDARD.decode(b64).map(Self)
    }

    /// `self/name` (`name` alone when `self` is empty).
    pub fn join(&self, name: &[u8]) -> Self {
        let mut bytes = self.0.clone();
        if !bytes.is_empty() {
            bytes.push(b'/');
        }
        bytes.extend_from_slice(name);
        Self(bytes)
    }
}

/// `bytes` with UTF-8 kept and every byte outside a valid sequence as `\xNN`.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

impl From<&str> for FsPath {
    fn from(path: &str) -> Self {
        Self(path.as_bytes().to_vec())
    }
}

impl From<String> for FsPath {
    fn from(path: String) -> Self {
        Self(path.into_bytes())
    }
}

impl From<&String> for FsPath {
    fn from(path: &String) -> Self {
        Self(path.as_bytes().to_vec())
    }
}

impl From<Vec<u8>> for FsPath {
    fn from(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }
}

impl From<&[u8]> for FsPath {
    fn from(bytes: &[u8]) -> Self {
        Self(bytes.to_vec())
    }
}

impl Borrow<[u8]> for FsPath {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

/// The path the kernel takes (a Unix path is bytes).
impl AsRef<std::path::Path> for FsPath {
    fn as_ref(&self) -> &std::path::Path {
        use std::os::unix::ffi::OsStrExt;
        std::path::Path::new(std::ffi::OsStr::from_bytes(&self.0))
    }
}

impl AsRef<[u8]> for FsPath {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl PartialEq<str> for FsPath {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for FsPath {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

/// The display form ([`FsPath::display`]).
impl fmt::Display for FsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape(&self.0))
    }
}

impl fmt::Debug for FsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", escape(&self.0))
    }
}

/// The key of the object form of a path not in UTF-8.
const BYTES_KEY: &str = "bytes";

impl Serialize for FsPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.to_str() {
            Some(text) => serializer.serialize_str(text),
            None => {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(BYTES_KEY, &STANDARD.encode(&self.0))?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for FsPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PathVisitor;

        impl<'de> Visitor<'de> for PathVisitor {
            type Value = FsPath;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a path: a string, or {\"bytes\": base64}")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<FsPath, E> {
                Ok(FsPath::from(text))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FsPath, A::Error> {
                let mut bytes = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != BYTES_KEY || bytes.is_some() {
                        return Err(de::Error::custom(format!(
                            "a path object has one field, `{BYTES_KEY}`"
                        )));
                    }
                    let b64: String = map.next_value()?;
                    bytes = Some(
                        FsPath::from_b64(&b64)
                            .map_err(|e| de::Error::custom(format!("path bytes: {e}")))?,
                    );
                }
                bytes.ok_or_else(|| de::Error::missing_field(BYTES_KEY))
            }
        }

        deserializer.deserialize_any(PathVisitor)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for FsPath {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .description(Some("A path: UTF-8 text (bytes not in UTF-8 as \\xNN)"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for FsPath {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn utf8_paths_are_plain_strings_and_others_round_trip_as_bytes() {
        let text = FsPath::from("src/ünï.rs");
        assert_eq!(serde_json::to_string(&text).unwrap(), "\"src/ünï.rs\"");
        assert_eq!(text.display(), "src/ünï.rs");
        assert_eq!(text.bytes_b64(), None);

        let raw = FsPath::from_bytes(b"a/\xff\xfe-\xc3\xa9".to_vec());
        let json = serde_json::to_string(&raw).unwrap();
        assert_eq!(json, r#"{"bytes":"YS///i3DqQ=="}"#);
        assert_eq!(serde_json::from_str::<FsPath>(&json).unwrap(), raw);
        assert_eq!(raw.display(), "a/\\xff\\xfe-é");
        assert_eq!(
            FsPath::from_b64(&raw.bytes_b64().unwrap()).unwrap(),
            raw,
            "the API's base64 names the same bytes"
        );
        // as a map key (a v1 manifest's), a UTF-8 path reads too
        let keyed: std::collections::BTreeMap<FsPath, u8> =
            serde_json::from_str(r#"{"a":1}"#).unwrap();
        assert_eq!(keyed.keys().next().unwrap(), &FsPath::from("a"));
    }

    #[test]
    fn a_path_object_with_anything_but_bytes_is_refused() {
        for bad in [
            r#"{}"#,
            r#"{"bytes":"!!"}"#,
            r#"{"bytes":"YQ==","x":1}"#,
            r#"{"other":"YQ=="}"#,
            "7",
        ] {
            assert!(serde_json::from_str::<FsPath>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn order_is_byte_order() {
        let mut paths = [
            FsPath::from_bytes(b"a\xff".to_vec()),
            FsPath::from("a/b"),
            FsPath::from("a"),
            FsPath::from("a.txt"),
        ];
        paths.sort();
        let bytes: Vec<&[u8]> = paths.iter().map(FsPath::as_bytes).collect();
        assert_eq!(bytes, [&b"a"[..], b"a.txt", b"a/b", b"a\xff"]);
    }
}
