//! The live tests' shared setup: the lab API server with the group CRD and the example group,
//! an operator (controller and the group managers its context owns) in this process, and the
//! bounded poll every live test waits with.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bloodraven_lab::{Lab, LabConfig};
use bloodraven_operator::controller::{self, Context};
use bloodraven_operator::manager::Tuning;
use bloodraven_workloads::Resolver;
use tokio::task::JoinHandle;

/// The repository root.
pub(crate) const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Polls `check` every `every` until it answers, failing the test after `bound` and naming
/// `what` it waited for.
pub(crate) async fn wait_for<T, F, Fut>(
    what: &str,
    bound: Duration,
    every: Duration,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(start.elapsed() < bound, "gave up after {bound:?} waiting for {what}");
        tokio::time::sleep(every).await;
    }
}

/// The lab API server with the group CRD and `deploy/examples/group.yaml` applied, the group
/// and its namespace renamed `namespace` (the example's are `orders`), and a client of it.
pub(crate) async fn start_lab(namespace: &str) -> (Lab, kube::Client) {
    start_lab_with(namespace, &["mysqlfailovergroups"]).await
}

/// [`start_lab`] with the CRDs `crds` (file names in `deploy/crds` less `.shipstream.io.yaml`).
pub(crate) async fn start_lab_with(namespace: &str, crds: &[&str]) -> (Lab, kube::Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let lab = Lab::start(LabConfig::default()).await.expect("the lab API server");
    for crd in crds {
        let text = std::fs::read_to_string(format!("{ROOT}/deploy/crds/{crd}.shipstream.io.yaml"))
            .expect("deploy/crds");
        lab.load_crds(&text).unwrap_or_else(|error| panic!("the CRD {crd}: {error}"));
    }
    let example = std::fs::read_to_string(format!("{ROOT}/deploy/examples/group.yaml"))
        .expect("deploy/examples/group.yaml")
        .replace("namespace: orders", &format!("namespace: {namespace}"))
        .replace("name: orders\n---", &format!("name: {namespace}\n---"));
    lab.apply_yaml(&example).expect("the example group");
    let url = lab.url().parse().expect("the lab's URL");
    let client = kube::Client::try_from(kube::Config::new(url)).expect("a client of the lab");
    (lab, client)
}

/// A running operator: controller and the group managers its context owns.
pub(crate) struct Operator {
    pub(crate) context: Arc<Context>,
    pub(crate) controller: JoinHandle<()>,
}

impl Operator {
    /// Starts the controller over `namespace` (`None`: every namespace) as `instance`.
    pub(crate) fn start(
        client: &kube::Client,
        resolver: Arc<dyn Resolver>,
        tuning: Tuning,
        namespace: Option<&str>,
        instance: &str,
    ) -> Self {
        let context = Arc::new(Context::new(client.clone(), resolver, tuning, instance));
        let (run, namespace) = (context.clone(), namespace.map(str::to_owned));
        let controller =
            tokio::spawn(async move { controller::run(run, namespace.as_deref()).await });
        Operator { context, controller }
    }

    /// Stops everything this operator runs; what it knew in memory is gone.
    pub(crate) async fn stop(self) {
        self.controller.abort();
        let _ = self.controller.await;
        // The last reference: `Context`'s drop aborts every group manager task.
        drop(self.context);
    }
}
