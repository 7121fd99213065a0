//! Connections: readers that never read, half-sent headers, too many
//! connections, the first round's floor.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::*;

/// Streamed execs of `yes` whose clients never read: the guest stops
/// reading the pipes once each stream's window is full, so the server stays
/// small, and the same sandbox and another one keep answering.
#[test]
fn readers_that_never_read_leave_the_server_small() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = Server::start(data.path(), "")?;
    runtime().block_on(async {
        let busy = server.create_sandbox().await?;
        let other = server.create_sandbox().await?;
        server.exec_echo(&busy).await?;
        let before = server.rss_bytes();
        let mut stalled = Vec::new();
        for _ in 0..8 {
            stalled.push(server.stream_exec(local(1), &busy, r#"["yes"]"#).await?);
        }
        let mut peak = before;
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            server.exec_echo(&busy).await?;
            server.exec_echo(&other).await?;
            peak = peak.max(server.rss_bytes());
        }
        println!(
            "never-reading clients: server RSS {:.1} MiB before, {:.1} MiB peak over 10 s",
            mib(before),
            mib(peak)
        );
        // Before flow control this grew by hundreds of MiB per second.
        assert!(
            peak < before + (64 << 20),
            "RSS grew from {before} to {peak} bytes"
        );
        drop(stalled);
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.exec_echo(&busy).await?;
        Ok(())
    })
}

/// With `slow_reader = "drop"` the command runs on at full speed: a client
/// that falls behind gets a marker for what was dropped and a truncated exit.
#[test]
fn the_drop_policy_marks_what_a_slow_reader_lost() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = Server::start(
        data.path(),
        "[streams]\nslow_reader = \"drop\"\nstream_buffer_bytes = 262144\n",
    )?;
    runtime().block_on(async {
        let sandbox = server.create_sandbox().await?;
        let mut tcp = server
            .stream_exec(
                local(1),
                &sandbox,
                r#"["sh", "-c", "head -c 50000000 /dev/zero | tr '\\000' a"]"#,
            )
            .await?;
        // Fall behind: read nothing while the command writes 50 MB.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let mut seen = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(60), async {
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = tcp.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
            }
            anyhow::Ok(())
        })
        .await;
        read.context("the stream did not end within 60 s")??;
        let text = String::from_utf8_lossy(&seen);
        assert!(
            text.contains("bytes of output dropped: the reader fell behind"),
            "no drop marker in {} bytes",
            seen.len()
        );
        let exit = text
            .split("event: exit\ndata: ")
            .nth(1)
            .context("no exit event")?;
        assert!(exit.contains(r#""truncated":true"#), "{exit}");
        assert!(exit.contains(r#""exit_code":0"#), "{exit}");
        Ok(())
    })
}

/// Half-sent headers (or none) are closed after the header timeout.
#[test]
fn half_open_connections_are_closed_after_the_header_timeout() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = Server::start(data.path(), "[http]\nheader_timeout_secs = 1\n")?;
    runtime().block_on(async {
        let mut half = server.connect_from(local(1)).await?;
        half.write_all(b"GET /v1/health HTTP/1.1\r\nHost: paddock\r\nX-Slow: ")
            .await?;
        let mut silent = server.connect_from(local(1)).await?;
        let started = Instant::now();
        assert!(closed_within(&mut half, Duration::from_secs(5)).await);
        assert!(closed_within(&mut silent, Duration::from_secs(5)).await);
        let took = started.elapsed();
        println!("half-open connections closed after {took:?}");
        assert!(
            took >= Duration::from_millis(900),
            "closed too early: {took:?}"
        );
        let (status, _) = server.request("GET", "/v1/health", "").await?;
        assert_eq!(status, 200);
        Ok(())
    })
}

/// Past the per-peer cap a connection is closed at once; other peers still
/// get in; past the global cap the oldest connection without a proven token
/// makes room; closing connections makes room again.
#[test]
fn the_connection_caps_refuse_and_recover() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = Server::start(
        data.path(),
        "[http]\nmax_connections = 6\nmax_connections_per_peer = 4\n",
    )?;
    runtime().block_on(async {
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(server.kept_alive_from(local(2)).await?);
        }
        let mut over_peer = server.connect_from(local(2)).await?;
        assert!(
            closed_within(&mut over_peer, Duration::from_secs(1)).await,
            "a fifth connection from one peer was kept"
        );
        let (status, _) = server
            .request_from(local(3), "GET", "/v1/health", "")
            .await?;
        assert_eq!(status, 200, "another peer is served");
        for _ in 0..2 {
            held.push(server.kept_alive_from(local(4)).await?);
        }
        // At the global cap a new connection is still served: the oldest
        // connection without a proven token is closed to make room (gate.rs).
        held.push(server.kept_alive_from(local(5)).await?);
        assert!(
            closed_within(&mut held[0], Duration::from_secs(1)).await,
            "the oldest connection was kept past the global cap"
        );
        drop(held);
        let mut recovered = false;
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if let Ok((200, _)) = server.request_from(local(2), "GET", "/v1/health", "").await {
                recovered = true;
                break;
            }
        }
        assert!(
            recovered,
            "the caps did not free up after the connections closed"
        );
        Ok(())
    })
}

/// The issue's floor, measured: 200 streamed execs read at 10 kB/s and 20,000
/// half-open connections at once, while one authenticated client runs execs.
/// Prints the exec latency beside the same measurement without the load and
/// the server's peak RSS, which must stay under 512 MiB. The attackers come
/// from four loopback addresses (the per-peer cap holds each to 256), the
/// streaming clients from a fifth, the measuring client from 127.0.0.1.
#[test]
fn floor_slow_streams_and_half_open_connections() -> Result<()> {
    let streams: usize = env_count("PADDOCK_FLOOR_STREAMS", 200);
    let half_open: usize = env_count("PADDOCK_FLOOR_HALF_OPEN", 20_000);
    raise_fd_limit(streams + 1024)?;
    let data = tempfile::tempdir()?;
    let server = Server::start(data.path(), "[http]\nheader_timeout_secs = 30\n")?;
    runtime().block_on(async {
        let measure = server.create_sandbox().await?;
        let mut loaded = Vec::new();
        for _ in 0..4 {
            loaded.push(server.create_sandbox().await?);
        }
        let baseline = exec_latencies(&server, &measure, 50).await?;

        let stop = tokio_util_stop();
        let mut readers = tokio::task::JoinSet::new();
        for i in 0..streams {
            let mut tcp = server
                .stream_exec(
                    IpAddr::from([127, 0, 2, 1]),
                    &loaded[i % loaded.len()],
                    r#"["yes"]"#,
                )
                .await?;
            let stop = stop.clone();
            readers.spawn(async move {
                // 1 kB every 100 ms: 10 kB/s.
                let mut buf = [0u8; 1000];
                let mut total = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    match tcp.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => total += n as u64,
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                total
            });
        }
        // Two helper processes (each has its own descriptor limit), each
        // from two loopback addresses.
        let started = Instant::now();
        let mut attackers = Vec::new();
        for helper in 0..2u8 {
            let sources = [
                format!("127.0.1.{}", 1 + 2 * helper),
                format!("127.0.1.{}", 2 + 2 * helper),
            ];
            attackers.push(HalfOpen::start(server.addr, half_open / 2, &sources)?);
        }
        let mut opened = 0;
        for attacker in &mut attackers {
            opened += attacker.ready()?;
        }
        println!(
            "opened {streams} slow streams and {opened} half-open connections in {:?}",
            started.elapsed()
        );
        let mut peak = server.rss_bytes();
        let mut loaded_latencies = Vec::new();
        for _ in 0..5 {
            loaded_latencies.extend(exec_latencies(&server, &measure, 20).await?);
            peak = peak.max(server.rss_bytes());
        }
        let victim = server.victim_health_latency().await?;
        println!("another tenant's health answered in {victim:?} under load");
        assert!(
            victim < Duration::from_secs(1),
            "another tenant waited {victim:?} under load"
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut held = 0;
        for attacker in attackers {
            held += attacker.finish()?;
        }
        println!("the server still held {held} of the {opened} half-open connections");
        let mut streamed = 0u64;
        while let Some(total) = readers.join_next().await {
            streamed += total.unwrap_or(0);
        }
        let (base50, base99) = percentiles(baseline);
        let (p50, p99) = percentiles(loaded_latencies);
        println!(
            "exec latency: idle p50 {base50:?} p99 {base99:?}; under load p50 {p50:?} p99 {p99:?}"
        );
        println!(
            "server peak RSS under load {:.1} MiB; the slow readers read {:.1} MiB",
            mib(peak),
            mib(streamed)
        );
        assert!(peak < 512 << 20, "server RSS {peak} bytes under load");
        assert!(streamed > 0, "the slow streams delivered nothing");
        Ok(())
    })
}
