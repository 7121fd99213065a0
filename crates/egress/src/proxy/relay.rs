//! Relaying the bytes of an allowed connection both ways until both sides
//! are done: [`splice`] moves them between two TCP sockets inside the kernel
//! (splice(2) through a pipe per direction, no copy through user space);
//! [`copy`] is the generic path for streams the proxy terminates (TLS).
//!
//! Both half-close like `tokio::io::copy_bidirectional`: at EOF from one side
//! the other side's write half is shut down and the other direction goes on.
//! Both return (client → upstream, upstream → client) byte counts, the bytes
//! written to the receiving side; an error in either direction ends the
//! relay with the counts so far.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl};
use nix::sys::socket::Shutdown;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// The pipe capacity asked for per direction; the kernel may refuse it
/// (`/proc/sys/fs/pipe-max-size`, the user's pipe quota), then the default stays.
const PIPE_SIZE: i32 = 1024 * 1024;

/// The buffer per direction of the generic path.
const COPY_BUFFER: usize = 64 * 1024;

/// Relays between two generic streams; returns (out, in) byte counts,
/// those so far when an error (a peer gone without a TLS close_notify, a
/// reset) ends it.
pub(crate) async fn copy<A, B>(client: &mut A, upstream: &mut B) -> (u64, u64)
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let mut client = Counted::new(client);
    let mut upstream = Counted::new(upstream);
    let relayed = tokio::io::copy_bidirectional_with_sizes(
        &mut client,
        &mut upstream,
        COPY_BUFFER,
        COPY_BUFFER,
    )
    .await;
    let (out, inn) = (upstream.written, client.written);
    if let Err(e) = relayed {
        tracing::debug!(error = %e, bytes_out = out, bytes_in = inn, "copy ended by an error");
    }
    (out, inn)
}

/// A stream that counts the bytes written to it.
struct Counted<S> {
    inner: S,
    written: u64,
}

impl<S> Counted<S> {
    fn new(inner: S) -> Self {
        Self { inner, written: 0 }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            this.written += n as u64;
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Relays between two TCP sockets in the kernel; returns (out, in) byte
/// counts. Falls back to [`copy`] when the pipes cannot be made.
pub(crate) async fn splice(client: &mut TcpStream, upstream: &mut TcpStream) -> (u64, u64) {
    let (outward, inward) = match (Pipe::new(), Pipe::new()) {
        (Ok(outward), Ok(inward)) => (outward, inward),
        (Err(e), _) | (_, Err(e)) => {
            tracing::debug!(error = %e, "no pipe for splice; copying through user space");
            return copy(client, upstream).await;
        }
    };
    let (mut out, mut inn) = (0u64, 0u64);
    let result = tokio::try_join!(
        one_way(client, upstream, &outward, &mut out),
        one_way(upstream, client, &inward, &mut inn),
    );
    if let Err(e) = result {
        tracing::debug!(error = %e, bytes_out = out, bytes_in = inn, "splice ended by an error");
    }
    (out, inn)
}

/// A non-blocking pipe, the kernel buffer of one direction.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// Its capacity: the most one splice into it moves.
    size: usize,
}

impl Pipe {
    fn new() -> io::Result<Self> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
        // a refusal (EPERM over the quota, EINVAL) leaves the default capacity
        let _ = fcntl(&write, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
        let size = fcntl(&write, FcntlArg::F_GETPIPE_SZ)?;
        Ok(Self {
            read,
            write,
            size: usize::try_from(size).unwrap_or(64 * 1024).max(4096),
        })
    }
}

/// Moves `from`'s bytes to `to` through `pipe` until EOF, then shuts `to`'s
/// write half; `count` is what reached `to`.
async fn one_way(from: &TcpStream, to: &TcpStream, pipe: &Pipe, count: &mut u64) -> io::Result<()> {
    let flags = SpliceFFlags::SPLICE_F_NONBLOCK | SpliceFFlags::SPLICE_F_MOVE;
    loop {
        // the pipe is empty here, so EAGAIN can only mean `from` has nothing
        let filled = ready(from, Interest::READABLE, || {
            nix::fcntl::splice(from, None, &pipe.write, None, pipe.size, flags)
        })
        .await?;
        if filled == 0 {
            nix::sys::socket::shutdown(to.as_fd().as_raw_fd(), Shutdown::Write)?;
            return Ok(());
        }
        let mut pending = filled;
        while pending > 0 {
            // the pipe holds bytes here, so EAGAIN can only mean `to` is full
            let moved = ready(to, Interest::WRITABLE, || {
                nix::fcntl::splice(&pipe.read, None, to, None, pending, flags)
            })
            .await?;
            if moved == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "splice to the socket moved nothing",
                ));
            }
            pending -= moved;
            *count += moved as u64;
        }
    }
}

/// Runs `op` on `socket` when it is ready for `interest`; an EAGAIN clears
/// the readiness and waits for the next edge, so nothing spins.
async fn ready(
    socket: &TcpStream,
    interest: Interest,
    mut op: impl FnMut() -> nix::Result<usize>,
) -> io::Result<usize> {
    loop {
        socket.ready(interest).await?;
        match socket.try_io(interest, || op().map_err(io::Error::from)) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::task::JoinHandle;

    use super::*;

    const WAIT: Duration = Duration::from_secs(20);

    /// A client and an upstream on loopback with [`splice`] between them.
    async fn tunnel() -> (TcpStream, TcpStream, JoinHandle<(u64, u64)>) {
        let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let back = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(front.local_addr().unwrap())
            .await
            .unwrap();
        let (mut proxy_client, _) = front.accept().await.unwrap();
        let mut proxy_upstream = TcpStream::connect(back.local_addr().unwrap())
            .await
            .unwrap();
        let (upstream, _) = back.accept().await.unwrap();
        let relay =
            tokio::spawn(async move { splice(&mut proxy_client, &mut proxy_upstream).await });
        (client, upstream, relay)
    }

    fn pattern(len: usize, mut seed: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    }

    /// Sends `data` and shuts the write half while reading the peer to EOF.
    async fn exchange(stream: TcpStream, data: Vec<u8>) -> Vec<u8> {
        let (mut read, mut write) = stream.into_split();
        let sender = tokio::spawn(async move {
            write.write_all(&data).await.unwrap();
            write.shutdown().await.unwrap();
            write
        });
        let mut got = Vec::new();
        read.read_to_end(&mut got).await.unwrap();
        drop(sender.await.unwrap());
        got
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn eight_mib_each_way_at_once_arrive_whole_and_counted() {
        let (client, upstream, relay) = tunnel().await;
        let up = pattern(8 << 20, 0x9e37_79b9_7f4a_7c15);
        let down = pattern(8 << 20, 0x2545_f491_4f6c_dd1d);
        let (at_upstream, at_client) = tokio::time::timeout(WAIT, async {
            tokio::join!(
                exchange(upstream, down.clone()),
                exchange(client, up.clone())
            )
        })
        .await
        .unwrap();
        assert!(at_upstream == up, "client → upstream bytes differ");
        assert!(at_client == down, "upstream → client bytes differ");
        let counts = tokio::time::timeout(WAIT, relay).await.unwrap().unwrap();
        assert_eq!(counts, (8 << 20, 8 << 20));
    }

    #[tokio::test]
    async fn a_half_close_reaches_upstream_which_still_replies() {
        let (mut client, mut upstream, relay) = tunnel().await;
        client.write_all(b"request").await.unwrap();
        client.shutdown().await.unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(WAIT, upstream.read_to_end(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, b"request");
        upstream.write_all(b"reply").await.unwrap();
        upstream.shutdown().await.unwrap();
        let mut reply = Vec::new();
        tokio::time::timeout(WAIT, client.read_to_end(&mut reply))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(reply, b"reply");
        let counts = tokio::time::timeout(WAIT, relay).await.unwrap().unwrap();
        assert_eq!(counts, (7, 5));
    }

    #[tokio::test]
    async fn a_reset_ends_the_splice_with_the_counts_so_far() {
        let (mut client, mut upstream, relay) = tunnel().await;
        client.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        upstream.read_exact(&mut got).await.unwrap();
        upstream.write_all(b"hi").await.unwrap();
        let mut reply = [0u8; 2];
        client.read_exact(&mut reply).await.unwrap();
        upstream.set_zero_linger().unwrap();
        drop(upstream);
        // the client keeps its side open: only the reset can end the relay
        let counts = tokio::time::timeout(WAIT, relay).await.unwrap().unwrap();
        assert_eq!(counts, (5, 2));
        drop(client);
    }

    #[tokio::test]
    async fn copy_counts_survive_an_error_ending_it() {
        // the upstream answers and then fails (as a TLS peer gone without
        // close_notify): the counts so far are kept, not zeroed
        let (mut client, mut client_far) = tokio::io::duplex(1024);
        let mut upstream = fail_after(b"answer");
        client_far.write_all(b"request").await.unwrap();
        client_far.shutdown().await.unwrap();
        let counts = tokio::time::timeout(WAIT, copy(&mut client, &mut upstream))
            .await
            .unwrap();
        assert_eq!(counts, (7, 6));
        drop(client);
        let mut got = Vec::new();
        client_far.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"answer");
    }

    /// A stream that reads `answer` then fails, and takes any write.
    fn fail_after(answer: &'static [u8]) -> FailAfter {
        FailAfter { answer, reads: 0 }
    }

    struct FailAfter {
        answer: &'static [u8],
        reads: u32,
    }

    impl AsyncRead for FailAfter {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            self.reads += 1;
            match self.reads {
                1 => {
                    buf.put_slice(self.answer);
                    Poll::Ready(Ok(()))
                }
                // the failure comes on its own, after the answer was relayed
                2 => {
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
                _ => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "peer closed connection without sending TLS close_notify",
                ))),
            }
        }
    }

    impl AsyncWrite for FailAfter {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// utime + stime of the calling thread, in clock ticks.
    fn thread_cpu_ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_idle_tunnel_uses_no_cpu() {
        // one thread runs the relay and this test: a spinning relay shows in its ticks
        let (mut client, mut upstream, relay) = tunnel().await;
        client.write_all(b"ping").await.unwrap();
        let mut got = [0u8; 4];
        upstream.read_exact(&mut got).await.unwrap();
        let before = thread_cpu_ticks();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let spent = thread_cpu_ticks() - before;
        assert!(spent <= 2, "the idle relay spent {spent} ticks in 200 ms");
        assert!(!relay.is_finished());
        drop((client, upstream));
        let counts = tokio::time::timeout(WAIT, relay).await.unwrap().unwrap();
        assert_eq!(counts, (4, 0));
    }
}
