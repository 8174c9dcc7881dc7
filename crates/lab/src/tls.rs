//! Optional TLS: a throwaway CA and a server certificate for 127.0.0.1, so clients that send
//! bearer tokens only over https (kubectl: client-go's clientcmd drops credentials for an
//! `http://` server) identify themselves. Client certificates signed by the same CA are
//! asked for (optional): their CN and O name the user and groups of the connection's requests.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use axum::Router;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

use crate::error::Error;

/// The CA clients trust, the acceptor the server uses, and the CA's signer for client
/// certificates (`crate::identity::issue_client_certificate`).
pub(crate) struct TlsMaterial {
    pub ca_pem: String,
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

fn tls_error(error: impl std::fmt::Display) -> Error {
    Error::Tls(error.to_string())
}

pub(crate) fn generate() -> Result<TlsMaterial, Error> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose, SanType,
    };
    let ca_key = KeyPair::generate().map_err(tls_error)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls_error)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "bloodraven-lab-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(tls_error)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_cert.der().clone()).map_err(tls_error)?;

    let server_key = KeyPair::generate().map_err(tls_error)?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).map_err(tls_error)?;
    params.subject_alt_names.push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    params.distinguished_name.push(DnType::CommonName, "bloodraven-lab");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_cert = params.signed_by(&server_key, &issuer).map_err(tls_error)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into());
    let client_verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(tls_error)?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(vec![server_cert.der().clone()], key)
        .map_err(tls_error)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        issuer,
    })
}

/// Serves `router` over TLS until `shutdown` fires; then ends watches and open connections.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    acceptor: tokio_rustls::TlsAcceptor,
    mut shutdown: oneshot::Receiver<()>,
    watch_generation: watch::Sender<u64>,
) -> std::io::Result<()> {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::debug!(%error, "accepting a connection");
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let router = router.clone();
                connections.spawn(async move {
                    let tls = match acceptor.accept(stream).await {
                        Ok(tls) => tls,
                        Err(error) => {
                            tracing::debug!(%error, "tls handshake");
                            return;
                        }
                    };
                    // rustls verified the chain against the lab's CA during the handshake.
                    let user = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|chain| chain.first())
                        .and_then(|leaf| crate::identity::certificate_user(leaf));
                    let router = match user {
                        Some(user) => router.layer(axum::Extension(crate::identity::CertificateUser(user))),
                        None => router,
                    };
                    let service = hyper_util::service::TowerToHyperService::new(router);
                    let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service);
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "serving a connection");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    watch_generation.send_modify(|generation| *generation += 1);
    connections.shutdown().await;
    Ok(())
}
