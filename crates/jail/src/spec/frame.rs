//! The spec frame: u32 little-endian length, then the JSON, read with plain
//! read(2) calls so that not a byte of the guest protocol behind it is taken.

use std::os::fd::AsFd;

use serde::Serialize;

/// Largest spec frame a guest reads.
pub const MAX_SPEC_FRAME: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum SpecFrameError {
    #[error("encoding the guest spec")]
    Encode(#[source] serde_json::Error),
    #[error("the guest spec is {len} bytes, more than the {MAX_SPEC_FRAME} allowed")]
    TooLarge { len: usize },
    #[error("reading the guest spec")]
    Read(#[source] std::io::Error),
    #[error("the connection ended after {got} of the spec frame's {want} bytes")]
    Truncated { got: usize, want: usize },
    #[error("invalid spec")]
    Decode(#[source] serde_json::Error),
}

/// `value` as one spec frame: u32 little-endian length, then the JSON.
pub(super) fn encode_frame(value: &impl Serialize) -> Result<Vec<u8>, SpecFrameError> {
    let json = serde_json::to_vec(value).map_err(SpecFrameError::Encode)?;
    let len = u32::try_from(json.len())
        .ok()
        .filter(|_| json.len() <= MAX_SPEC_FRAME)
        .ok_or(SpecFrameError::TooLarge { len: json.len() })?;
    let mut frame = len.to_le_bytes().to_vec();
    frame.extend(json);
    Ok(frame)
}

/// One spec frame read from `fd` with plain read(2) calls, so no byte past
/// it is taken from the connection.
pub(super) fn decode_frame<T: serde::de::DeserializeOwned>(
    fd: impl AsFd,
) -> Result<T, SpecFrameError> {
    let fd = fd.as_fd();
    let mut len = [0u8; 4];
    read_exact(fd, &mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_SPEC_FRAME {
        return Err(SpecFrameError::TooLarge { len });
    }
    let mut json = vec![0u8; len];
    read_exact(fd, &mut json)?;
    serde_json::from_slice(&json).map_err(SpecFrameError::Decode)
}

fn read_exact(fd: std::os::fd::BorrowedFd<'_>, buf: &mut [u8]) -> Result<(), SpecFrameError> {
    let mut got = 0;
    while got < buf.len() {
        match nix::unistd::read(fd, &mut buf[got..]) {
            Ok(0) => {
                return Err(SpecFrameError::Truncated {
                    got,
                    want: buf.len(),
                });
            }
            Ok(n) => got += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(SpecFrameError::Read(e.into())),
        }
    }
    Ok(())
}
