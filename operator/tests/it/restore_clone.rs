//! The reclone on real MySQL 9.7 (`source scripts/provision.sh`): a peer whose receiver was
//! stopped (a queued site) is recloned from the primary with the CLONE plugin and then holds
//! the primary's `gtid_executed` and table checksums.

use std::time::Duration;

use bloodraven_gtid::GtidSet;
use bloodraven_operator::restore::clone::{Cloned, Donor, Endpoint, clone_from};
use bloodraven_sites::accounts::OPERATOR;
use bloodraven_sites::group::{Group, GroupSpec};
use mysql_async::prelude::Queryable;

async fn gtid(conn: &mut mysql_async::Conn) -> GtidSet {
    let text: String = conn.query_first("SELECT @@global.gtid_executed").await.unwrap().unwrap();
    text.parse().unwrap()
}

async fn checksums(conn: &mut mysql_async::Conn) -> Vec<(String, Option<u64>)> {
    conn.query("CHECKSUM TABLE app.ledger, app.orders, app.items").await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_peer_recloned_by_clone_holds_the_primarys_data() {
    let outcome = tokio::time::timeout(Duration::from_secs(600), async {
        let mut group = Group::start(GroupSpec::new(&["iad", "pdx"]))
            .await
            .expect("starting two MySQL 9.7 sites (run `source scripts/provision.sh` first)");
        let iad = group.site("iad").unwrap().instance.addr();
        let pdx = group.site("pdx").unwrap().instance.addr();
        let mut primary = group.site("iad").unwrap().instance.root_conn().await.unwrap();
        primary
            .query_drop(
                "CREATE TABLE app.orders (id INT PRIMARY KEY, note VARCHAR(64)); \
                 INSERT INTO app.orders VALUES (1, 'before the hold'), (2, 'also before')",
            )
            .await
            .unwrap();
        // The peer is queued: its receiver stops (what the fence does), then the primary moves
        // on (what a restore does): the peer misses all of it.
        {
            let mut peer = group.site("pdx").unwrap().instance.root_conn().await.unwrap();
            let wanted = gtid(&mut primary).await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
            while !wanted.is_subset(&gtid(&mut peer).await) {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "pdx did not replicate {wanted} within 60 s"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            peer.query_drop("STOP REPLICA IO_THREAD").await.unwrap();
        }
        primary
            .query_drop(
                "DROP TABLE app.orders; \
                 CREATE TABLE app.items (id INT PRIMARY KEY, payload VARBINARY(200)); \
                 INSERT INTO app.items VALUES (1, REPEAT('x', 200)), (2, REPEAT('y', 200)); \
                 CREATE TABLE app.orders (id INT PRIMARY KEY)",
            )
            .await
            .unwrap();
        let primary_set = gtid(&mut primary).await;
        let primary_sums = checksums(&mut primary).await;
        {
            let mut peer = group.site("pdx").unwrap().instance.root_conn().await.unwrap();
            assert_ne!(gtid(&mut peer).await, primary_set, "the held peer missed the restore");
        }

        let donor = Donor {
            host: "127.0.0.1",
            port: iad.port(),
            user: OPERATOR.user,
            password: OPERATOR.password,
        };
        let donor_admin = Endpoint {
            host: "127.0.0.1",
            port: iad.port(),
            user: OPERATOR.user,
            password: OPERATOR.password,
        };
        let recipient = Endpoint {
            host: "127.0.0.1",
            port: pdx.port(),
            user: OPERATOR.user,
            password: OPERATOR.password,
        };
        let started = std::time::Instant::now();
        let cloned = clone_from(&recipient, &donor, &donor_admin, Duration::from_secs(300))
            .await
            .expect("CLONE INSTANCE FROM the primary");
        let site = group.site_mut("pdx").unwrap();
        if cloned != Cloned::Done {
            // No supervisor here: the lab restarts the recipient, as a pod's restart would.
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while site.instance.is_running() {
                assert!(std::time::Instant::now() < deadline, "pdx did not stop after its clone");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            site.instance.start_and_wait(Duration::from_secs(120)).await.unwrap_or_else(|e| {
                panic!(
                    "pdx did not restart after its clone: {e}\n{}",
                    site.instance.error_log_tail(40)
                )
            });
        }
        tracing::warn!("reclone took {:?} (outcome {cloned:?})", started.elapsed());
        let mut peer = site.instance.root_conn().await.unwrap();
        assert_eq!(gtid(&mut peer).await, primary_set, "the recloned peer has the primary's set");
        assert_eq!(checksums(&mut peer).await, primary_sums, "and the primary's data");
    })
    .await;
    assert!(outcome.is_ok(), "the reclone test did not finish within 10 minutes");
}
