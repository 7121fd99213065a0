//! A TCP proxy the test can pull the plug on: from the client's side the
//! database server dies (established connections drop, new ones are refused).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Debug)]
pub struct Proxy {
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> anyhow::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let connections = Arc::new(Mutex::new(Vec::new()));
        let tracked = connections.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                if let Ok(mut list) = tracked.lock() {
                    list.push(task);
                }
            }
        });
        Ok(Proxy {
            addr,
            accept,
            connections,
        })
    }

    /// Stops accepting and drops every proxied connection.
    pub fn kill(&self) {
        self.accept.abort();
        if let Ok(list) = self.connections.lock() {
            for task in list.iter() {
                task.abort();
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.kill();
    }
}
