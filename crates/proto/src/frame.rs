//! Binary-safe framing: `[u32 header_len][u32 payload_len][header][payload]`,
//! both lengths big-endian, header = UTF-8 JSON, payload = raw bytes.

use serde::{Serialize, de::DeserializeOwned};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest JSON header accepted; requests and replies are small, bulk data rides in payloads.
pub const MAX_HEADER_LEN: u32 = 1 << 20;
/// Largest payload accepted in one frame (16 MiB). Larger transfers are split by the sender.
pub const MAX_PAYLOAD_LEN: u32 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("reading frame from connection")]
    Read(#[source] std::io::Error),
    #[error("writing frame to connection")]
    Write(#[source] std::io::Error),
    #[error("connection closed mid-frame after {received} of {expected} bytes")]
    Truncated { received: usize, expected: usize },
    #[error("frame header of {len} bytes exceeds the {max} byte limit")]
    HeaderTooLarge { len: u32, max: u32 },
    #[error("frame payload of {len} bytes exceeds the {max} byte limit")]
    PayloadTooLarge { len: u32, max: u32 },
    #[error("empty frame header")]
    EmptyHeader,
    #[error("decoding frame header")]
    DecodeHeader(#[source] serde_json::Error),
    #[error("encoding frame header")]
    EncodeHeader(#[source] serde_json::Error),
}

/// A frame as read off the wire, header not yet decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    pub header: Vec<u8>,
    pub payload: Vec<u8>,
}

impl RawFrame {
    /// Decodes the JSON header into `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, FrameError> {
        decode_header(&self.header)
    }
}

pub fn decode_header<T: DeserializeOwned>(header: &[u8]) -> Result<T, FrameError> {
    serde_json::from_slice(header).map_err(FrameError::DecodeHeader)
}

/// Encodes a message and payload into one contiguous buffer ready to write.
pub fn encode_frame<T: Serialize>(message: &T, payload: &[u8]) -> Result<Vec<u8>, FrameError> {
    let header = serde_json::to_vec(message).map_err(FrameError::EncodeHeader)?;
    let header_len = checked_len(header.len(), MAX_HEADER_LEN, true)?;
    let payload_len = checked_len(payload.len(), MAX_PAYLOAD_LEN, false)?;
    let mut buf = Vec::with_capacity(8 + header.len() + payload.len());
    buf.extend_from_slice(&header_len.to_be_bytes());
    buf.extend_from_slice(&payload_len.to_be_bytes());
    buf.extend_from_slice(&header);
    buf.extend_from_slice(payload);
    Ok(buf)
}

fn checked_len(len: usize, max: u32, is_header: bool) -> Result<u32, FrameError> {
    let len32 = u32::try_from(len).unwrap_or(u32::MAX);
    if len32 > max {
        return Err(if is_header {
            FrameError::HeaderTooLarge { len: len32, max }
        } else {
            FrameError::PayloadTooLarge { len: len32, max }
        });
    }
    Ok(len32)
}

/// Reads frames from any byte stream, refusing oversized or malformed ones
/// before allocating for them.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        Self { inner }
    }

    /// Next frame, or `None` on a clean end of stream between frames.
    pub async fn read_frame(&mut self) -> Result<Option<RawFrame>, FrameError> {
        let mut prefix = [0u8; 8];
        let got = read_full(&mut self.inner, &mut prefix).await?;
        if got == 0 {
            return Ok(None);
        }
        if got < prefix.len() {
            return Err(FrameError::Truncated {
                received: got,
                expected: prefix.len(),
            });
        }
        let header_len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let payload_len = u32::from_be_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]);
        if header_len == 0 {
            return Err(FrameError::EmptyHeader);
        }
        if header_len > MAX_HEADER_LEN {
            return Err(FrameError::HeaderTooLarge {
                len: header_len,
                max: MAX_HEADER_LEN,
            });
        }
        if payload_len > MAX_PAYLOAD_LEN {
            return Err(FrameError::PayloadTooLarge {
                len: payload_len,
                max: MAX_PAYLOAD_LEN,
            });
        }
        let mut header = vec![0u8; header_len as usize];
        expect_full(&mut self.inner, &mut header).await?;
        let mut payload = vec![0u8; payload_len as usize];
        expect_full(&mut self.inner, &mut payload).await?;
        Ok(Some(RawFrame { header, payload }))
    }
}

/// Writes whole frames; one `write_all` per frame so concurrent writers that
/// share it behind a lock never interleave partial frames.
#[derive(Debug)]
pub struct FrameWriter<W> {
    inner: W,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    pub fn new(inner: W) -> Self {
        Self { inner }
    }

    pub async fn write_message<T: Serialize>(
        &mut self,
        message: &T,
        payload: &[u8],
    ) -> Result<(), FrameError> {
        let buf = encode_frame(message, payload)?;
        self.write_encoded(&buf).await
    }

    pub async fn write_encoded(&mut self, buf: &[u8]) -> Result<(), FrameError> {
        self.inner.write_all(buf).await.map_err(FrameError::Write)?;
        self.inner.flush().await.map_err(FrameError::Write)
    }
}

async fn read_full<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = r.read(&mut buf[filled..]).await.map_err(FrameError::Read)?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}

async fn expect_full<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Result<(), FrameError> {
    let got = read_full(r, buf).await?;
    if got < buf.len() {
        return Err(FrameError::Truncated {
            received: got,
            expected: buf.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostFrame, Request};

    #[tokio::test]
    async fn round_trips_binary_payload() {
        let payload: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
        let msg = HostFrame {
            id: 7,
            request: Request::Info,
        };
        let buf = encode_frame(&msg, &payload).unwrap();
        let mut reader = FrameReader::new(&buf[..]);
        let frame = reader.read_frame().await.unwrap().unwrap();
        assert_eq!(frame.decode::<HostFrame>().unwrap(), msg);
        assert_eq!(frame.payload, payload);
        assert!(reader.read_frame().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn refuses_oversized_header_before_reading_it() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&(MAX_HEADER_LEN + 1).to_be_bytes());
        buf.extend_from_slice(&0u32.to_be_bytes());
        let err = FrameReader::new(&buf[..]).read_frame().await.unwrap_err();
        assert!(matches!(err, FrameError::HeaderTooLarge { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn refuses_oversized_payload() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&2u32.to_be_bytes());
        buf.extend_from_slice(&(MAX_PAYLOAD_LEN + 1).to_be_bytes());
        let err = FrameReader::new(&buf[..]).read_frame().await.unwrap_err();
        assert!(matches!(err, FrameError::PayloadTooLarge { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn reports_truncation_mid_frame() {
        let msg = HostFrame {
            id: 1,
            request: Request::Info,
        };
        let buf = encode_frame(&msg, b"abcdef").unwrap();
        let cut = &buf[..buf.len() - 2];
        let err = FrameReader::new(cut).read_frame().await.unwrap_err();
        assert!(
            matches!(
                err,
                FrameError::Truncated {
                    received: 4,
                    expected: 6
                }
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn malformed_header_is_a_decode_error() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&3u32.to_be_bytes());
        buf.extend_from_slice(&0u32.to_be_bytes());
        buf.extend_from_slice(b"{{{");
        let frame = FrameReader::new(&buf[..])
            .read_frame()
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(
            frame.decode::<HostFrame>(),
            Err(FrameError::DecodeHeader(_))
        ));
    }
}
