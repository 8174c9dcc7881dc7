//! The fault proxy against tokio echo servers (no MySQL): each fault, on new and on live
//! connections, and the connection log.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bloodraven_sites::proxy::{ConnectionEnd, Fault, Link, ProxyError, ProxyHub};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Bound on anything that should happen (CI shares 2 cores with real servers).
const PATIENCE: Duration = Duration::from_secs(20);
/// How long "nothing arrives" is watched. Only an absence is asserted, so a slow machine
/// cannot make it fail; a proxy that wrongly forwards fails it.
const QUIET: Duration = Duration::from_millis(300);

/// An echo server on 127.0.0.1, stopped on drop.
struct Echo {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Echo {
    /// Echoes every byte back. With `greeting`, first sends it (tells servers apart).
    async fn start(greeting: Option<&'static [u8]>) -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else { return };
                tokio::spawn(async move {
                    if let Some(greeting) = greeting
                        && stream.write_all(greeting).await.is_err()
                    {
                        return;
                    }
                    let (mut read, mut write) = stream.split();
                    let _ = tokio::io::copy(&mut read, &mut write).await;
                });
            }
        });
        Echo { addr, task }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, future).await {
        Ok(value) => value,
        Err(_) => panic!("gave up after {PATIENCE:?} waiting for {what}"),
    }
}

async fn connect(link: &Link) -> TcpStream {
    within("connecting to the link", TcpStream::connect(link.addr())).await.unwrap()
}

async fn read_exactly(stream: &mut TcpStream, len: usize, what: &str) -> Vec<u8> {
    let mut buffer = vec![0; len];
    within(what, stream.read_exact(&mut buffer)).await.unwrap();
    buffer
}

async fn round_trip(stream: &mut TcpStream, message: &[u8]) {
    stream.write_all(message).await.unwrap();
    assert_eq!(read_exactly(stream, message.len(), "the echo").await, message);
}

/// Asserts nothing can be read for [`QUIET`].
async fn assert_silent(stream: &mut TcpStream, why: &str) {
    let mut byte = [0u8; 1];
    if let Ok(read) = tokio::time::timeout(QUIET, stream.read(&mut byte)).await {
        panic!("{why}, but the client read {read:?}");
    }
}

/// Waits until the link's log satisfies `done`.
async fn wait_log(link: &Link, what: &str, done: impl Fn(&Link) -> bool) {
    within(what, async {
        while !done(link) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// Reads until EOF or error; returns which.
async fn read_to_end(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    within("the connection to end", stream.read_to_end(&mut bytes)).await.map(|_| bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_forwards_both_ways_and_logs_the_connection() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("app->primary", echo.addr).unwrap();
    assert_eq!(link.name(), "app->primary");
    assert_eq!(link.fault(), Fault::Pass);
    assert!(link.addr().ip().is_loopback());

    let mut client = connect(&link).await;
    round_trip(&mut client, b"hello").await;
    round_trip(&mut client, &vec![7u8; 300_000]).await;
    client.shutdown().await.unwrap();
    assert_eq!(read_to_end(&mut client).await.unwrap(), b"", "the echo closes after our FIN");

    wait_log(&link, "the connection to be logged as closed", |link| link.live_connections() == 0)
        .await;
    let records = link.connections();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(record.id, 1);
    assert_eq!(record.client, client.local_addr().unwrap());
    assert_eq!(record.upstream, Some(echo.addr));
    assert_eq!(record.bytes_to_upstream, 300_005);
    assert_eq!(record.bytes_to_client, 300_005);
    assert_eq!(record.end, Some(ConnectionEnd::Closed));
    assert!(record.closed.unwrap() >= record.opened);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delay_adds_latency_each_way_on_a_live_connection() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("operator->iad", echo.addr).unwrap();
    let mut client = connect(&link).await;
    round_trip(&mut client, b"warm").await;

    link.set(Fault::Delay { ms: 150 }).unwrap();
    let started = Instant::now();
    round_trip(&mut client, b"slow").await;
    let delayed = started.elapsed();
    // A lower bound only: the delay is at least what was set, each way.
    assert!(
        delayed >= Duration::from_millis(300),
        "round trip took {delayed:?}, expected >= 300 ms"
    );

    link.heal().unwrap();
    round_trip(&mut client, b"fast again").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blackhole_stalls_a_live_connection_and_heal_resumes_it_without_loss() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("pdx->iad", echo.addr).unwrap();
    let mut client = connect(&link).await;
    round_trip(&mut client, b"before").await;

    link.set(Fault::Blackhole).unwrap();
    // More than the socket buffers: the proxy must hold it, not drop it.
    let payload: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    let (mut read, mut write) = client.into_split();
    let writer = {
        let payload = payload.clone();
        tokio::spawn(async move {
            write.write_all(&payload).await.unwrap();
            write
        })
    };
    let mut byte = [0u8; 1];
    if let Ok(read) = tokio::time::timeout(QUIET, read.read(&mut byte)).await {
        panic!("the link is blackholed, but the client read {read:?}");
    }
    let held = link.connections()[0].bytes_to_upstream;
    assert_eq!(held, 6, "bytes went upstream through a blackhole");

    link.heal().unwrap();
    let mut echoed = vec![0u8; payload.len()];
    within("the held bytes to come back", read.read_exact(&mut echoed)).await.unwrap();
    assert!(echoed == payload, "the echoed bytes differ from those sent");
    let write = within("the writer", writer).await.unwrap();
    let mut client = read.reunite(write).unwrap();
    round_trip(&mut client, b"after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blackhole_accepts_new_connections_but_never_forwards_until_healed() {
    let echo = Echo::start(Some(b"greeting")).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("sidecar:iad->operator", echo.addr).unwrap();
    link.set(Fault::Blackhole).unwrap();

    let mut client = connect(&link).await;
    client.write_all(b"early").await.unwrap();
    assert_silent(&mut client, "the link is blackholed (the server's greeting must not arrive)")
        .await;
    assert_eq!(link.connections()[0].upstream, None, "connected upstream through a blackhole");

    link.heal().unwrap();
    assert_eq!(read_exactly(&mut client, 8, "the greeting").await, b"greeting");
    assert_eq!(read_exactly(&mut client, 5, "the held bytes' echo").await, b"early");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_fails_fast_where_blackhole_hangs() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("operator->pdx", echo.addr).unwrap();

    link.set(Fault::Refuse).unwrap();
    let refused = within("a refused connect", TcpStream::connect(link.addr())).await.unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused, "{refused}");

    link.set(Fault::Blackhole).unwrap();
    let mut hanging = connect(&link).await;
    hanging.write_all(b"anyone?").await.unwrap();
    assert_silent(&mut hanging, "a blackhole hangs").await;

    link.heal().unwrap();
    assert_eq!(read_exactly(&mut hanging, 7, "the echo after heal").await, b"anyone?");
    let mut again = connect(&link).await;
    round_trip(&mut again, b"listening again on the same port").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_resets_live_connections() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("app->primary", echo.addr).unwrap();
    let mut client = connect(&link).await;
    round_trip(&mut client, b"hi").await;

    link.set(Fault::Refuse).unwrap();
    let error = read_to_end(&mut client).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::ConnectionReset, "{error}");
    wait_log(&link, "the connection to be logged as refused", |link| link.live_connections() == 0)
        .await;
    assert_eq!(link.connections()[0].end, Some(ConnectionEnd::Refused));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_kills_live_connections_only() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("iad->pdx", echo.addr).unwrap();
    let mut first = connect(&link).await;
    let mut second = connect(&link).await;
    round_trip(&mut first, b"one").await;
    round_trip(&mut second, b"two").await;

    link.reset();
    for client in [&mut first, &mut second] {
        let error = read_to_end(client).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::ConnectionReset, "{error}");
    }
    let mut later = connect(&link).await;
    round_trip(&mut later, b"new connections pass").await;

    wait_log(&link, "both reset connections to be logged", |link| link.live_connections() == 1)
        .await;
    let ends: Vec<_> = link.connections().iter().map(|record| record.end).collect();
    assert_eq!(ends, [Some(ConnectionEnd::Reset), Some(ConnectionEnd::Reset), None]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_upstream_repoints_new_connections_and_keeps_live_ones() {
    let old = Echo::start(Some(b"old")).await;
    let new = Echo::start(Some(b"new")).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("app->primary", old.addr).unwrap();
    let mut before = connect(&link).await;
    assert_eq!(read_exactly(&mut before, 3, "the old greeting").await, b"old");

    link.set_upstream(new.addr);
    assert_eq!(link.upstream(), new.addr);
    let mut after = connect(&link).await;
    assert_eq!(read_exactly(&mut after, 3, "the new greeting").await, b"new");
    round_trip(&mut before, b"still on the old server").await;

    let upstreams: Vec<_> = link.connections().iter().map(|record| record.upstream).collect();
    assert_eq!(upstreams, [Some(old.addr), Some(new.addr)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_resets_the_client_and_is_logged() {
    let gone = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("operator->sea", gone).unwrap();
    // The proxy resets the client at once: the connect itself or the first read fails.
    let error = match within("connecting", TcpStream::connect(link.addr())).await {
        Ok(mut client) => read_to_end(&mut client).await.unwrap_err(),
        Err(error) => error,
    };
    assert_eq!(error.kind(), io::ErrorKind::ConnectionReset, "{error}");
    wait_log(&link, "the failed connection to be logged", |link| link.live_connections() == 0)
        .await;
    assert_eq!(
        link.connections()[0].end,
        Some(ConnectionEnd::UpstreamConnectFailed(io::ErrorKind::ConnectionRefused))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_names_links_once_and_stops_them_on_shutdown() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("pdx->iad", echo.addr).unwrap();
    let duplicate = hub.link("pdx->iad", echo.addr).unwrap_err();
    assert!(matches!(&duplicate, ProxyError::DuplicateLink { name } if name == "pdx->iad"));
    assert_eq!(hub.get("pdx->iad").unwrap().addr(), link.addr());
    assert!(hub.get("iad->pdx").is_none());
    let other = hub.link("iad->pdx", echo.addr).unwrap();
    let names: Vec<String> = hub.links().iter().map(|link| link.name().to_owned()).collect();
    assert_eq!(names, ["iad->pdx", "pdx->iad"]);

    let mut live = connect(&link).await;
    round_trip(&mut live, b"hi").await;
    hub.shutdown();
    assert!(matches!(hub.link("late", echo.addr), Err(ProxyError::Stopped { .. })));
    drop(hub);
    let error = read_to_end(&mut live).await.unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::ConnectionReset, "{error}");
    for link in [&link, &other] {
        let refused =
            within("a refused connect", TcpStream::connect(link.addr())).await.unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused, "{refused}");
    }
    assert!(matches!(link.set(Fault::Pass), Err(ProxyError::Stopped { .. })));
}

#[test]
fn a_hub_outside_a_runtime_is_an_error() {
    assert!(matches!(ProxyHub::current(), Err(ProxyError::NoRuntime)));
}

/// Each listen again needs a fresh tokio registration (a stopped listener stays "closed" in
/// tokio and its accept loop would spin, starving the connections it accepted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_and_heal_cycles_keep_the_port_and_serve() {
    let echo = Echo::start(None).await;
    let hub = ProxyHub::current().unwrap();
    let link = hub.link("iad->sea", echo.addr).unwrap();
    for cycle in 0..3 {
        link.set(Fault::Refuse).unwrap();
        let refused =
            within("a refused connect", TcpStream::connect(link.addr())).await.unwrap_err();
        assert_eq!(refused.kind(), io::ErrorKind::ConnectionRefused, "cycle {cycle}: {refused}");
        link.heal().unwrap();
        let mut client = connect(&link).await;
        round_trip(&mut client, format!("cycle {cycle}").as_bytes()).await;
    }
}
