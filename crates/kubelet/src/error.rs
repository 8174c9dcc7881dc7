//! Errors of the lab kubelet.

/// What stopped the kubelet from starting.
#[derive(Debug, thiserror::Error)]
pub enum KubeletError {
    #[error(
        "cannot create the kubelet's folder {path}: {source}; pass a writable KubeletConfig::root"
    )]
    Root {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the lab API server's watch of {what} never listed: {message}; is the server up at the client's URL?"
    )]
    Watch { what: &'static str, message: String },
}
